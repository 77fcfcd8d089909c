import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// Exchanges' ends, failures and retries, redirects, mirrors dropped, restarts and resumes.
extension DownloadStateMachine {
    /// `count` body bytes written for connection `id`: proven ones are accounted (its segment advances);
    /// a checkpoint may be due, and the pieces the bytes complete are hashed.
    mutating func bodyWritten(_ count: Int64, on id: Int) -> [Action] {
        var written: Range<Int64>?
        if let segment = connection(id, \.segment), planner != nil {
            let start = planner?.next(of: segment)
            planner?.advance(segment, by: count)
            written = start.map { $0..<($0 + count) }
            // Its last byte written, the segment is gone from the plan: the connection has none any more.
            if planner?.segments[segment] == nil { connections[id].segment = nil }
        }
        bytesDone += count
        countMirrorBytes(count, on: id)
        var actions = written.map { piecesWritten($0, by: connection(id) { $0.exchange?.mirror }) } ?? []
        if bytesDone - bytesAtLastCheckpoint >= options.checkpointBytes, let checkpoint = checkpointNow() { actions.append(checkpoint) }
        return actions
    }

    /// Where connection `id`'s segment ends now (it shrinks when another connection takes its tail); nil
    /// without a segment, 0 for a segment no longer planned (nothing more may be written into it).
    func segmentEnd(of id: Int) -> Int64? {
        guard let segment = connections[id].segment else { return nil }
        return planner?.end(of: segment) ?? 0
    }

    /// An exchange ended (once, with how): the proof of provisional bytes, the completeness of a body, a
    /// redirect followed, a refused probe asked again, or the connection's next work.
    mutating func exchangeEnded(_ end: ExchangeEnd) -> [Action] {
        // A connection stopped by a restart may still report its cancelled exchange; it no longer counts.
        guard isActive, isCurrent(connection: end.connection, serial: end.serial) else { return [] }
        let id = end.connection
        connections[id].activity = .idle
        let connection = connections[id]
        guard let exchange = connection.exchange else { return [] }
        if case .retired = connection.verdict { return [] }
        if case .withdrawn = connection.verdict { return withdrawnExchangeEnded(id) }
        if let interruption = connection.interruption { return failed(interruption, on: id, window: end.window, retryAfter: end.retryAfter) }
        let summary: ExchangeSummary
        switch end.outcome {
        case .failure(let error): return failed(HaulError(mapping: error), on: id, window: end.window, retryAfter: end.retryAfter)
        case .success(let value): summary = value
        }
        if case .redirect(let facts) = connection.verdict { return followRedirect(facts, on: id, end: end) }
        // A mismatch fails the download at its head; any other answer leaves the mirror to its first real response.
        if exchange.role == .mirrorCheck { return mirrorCheckEnded(id) }
        if case .retryProbe(let refusal) = connection.verdict { return retryRefusedProbe(id, because: refusal) }
        if case .upToDate = connection.verdict { return endUpToDate() }
        if case .metalinkDocument(let url) = connection.verdict { return endForMetalink(url) }
        // The URL's text is for the errors below only: made when one is.
        var url: String { exchange.url.description }
        guard let window = end.window else { return exchangeSucceeded(id) }
        guard let windowEnd = window.end else {
            // Unknown length, single stream: the end of the body is the end of the file.
            guard summary.complete else { return failed(.incomplete(url: url, expected: -1, received: window.position), on: id, window: end.window, retryAfter: end.retryAfter) }
            if let expectedSize, window.position != expectedSize {
                return failed(.sizeMismatch(url: url, expected: expectedSize, served: window.position), on: id, window: end.window, retryAfter: end.retryAfter)
            }
            total = window.position
            // Asked for open-ended, so not counted when sent: what came is what was requested.
            bytesRequested += window.position - window.start
            planner = SegmentPlanner(total: window.position, minimumSegment: 1, alreadyDone: ByteRangeSet([0..<window.position]))
            return finishIfDone()
        }
        if !window.bounded {
            // Provisional bytes (a chunked or close-delimited body): only a body that ended at exactly the
            // range's end proves they are that range.
            guard summary.complete, window.endedExactly else {
                return failed(.faultyResponse(url: url, detail: "the body of range \(window.start)-\(windowEnd - 1) ended after \(window.received) of \(windowEnd - window.start) bytes"), on: id, window: end.window, retryAfter: end.retryAfter)
            }
            var actions = bodyWritten(window.received, on: id)
            guard sink == .stream else { return actions + exchangeSucceeded(id) }
            actions.append(.commitStream(window.start..<windowEnd, connection: id, serial: end.serial, window: window))
            return actions
        }
        if connection.segment != nil, summary.complete, !window.isFilled {
            return failed(.incomplete(url: url, expected: windowEnd, received: window.position), on: id, window: end.window, retryAfter: end.retryAfter)
        }
        return exchangeSucceeded(id)
    }

    /// A stream's provisional bytes were delivered (or could not be: the output failed).
    mutating func provisionalCommitted(on id: Int, serial: Int, window: BodyWindow, failure: HaulError?) -> [Action] {
        guard isActive, isCurrent(connection: id, serial: serial) else { return [] }
        if let failure { return failed(failure, on: id, window: window) }
        return exchangeSucceeded(id)
    }

    private mutating func exchangeSucceeded(_ id: Int) -> [Action] {
        connections[id].failuresInRow = 0
        // In this order (the work assigned makes the connection busy, and then the download is not done). One
        // of the two is nearly always empty (a small file's last exchange: no work, and the end comes from
        // `assignWork`): the other is returned as it is, not copied into a new array.
        var actions = assignWork(id)
        let finish = finishIfDone()
        if finish.isEmpty { return actions }
        if actions.isEmpty { return finish }
        actions += finish
        return actions
    }

    /// Asks again, at once, in the form the probe fell back to: the server answered (it is not overloaded),
    /// and the question is another one. Counted among the retries, but no failure in a row.
    private mutating func retryRefusedProbe(_ id: Int, because refusal: HaulError) -> [Action] {
        retries += 1
        let form = probeFallback ?? .withoutRange
        let url = connections[id].exchange?.url
        let log = Action.log(.notice, "the probe's answer cannot be used: asking again in another form", {
            [LogKey.connection: "\(id)", LogKey.url: "\(url.map { "\($0)" } ?? "-")", LogKey.reason: "\(refusal)",
             LogKey.range: "\(form.sendsRange ? "bytes=\(form.rangeText)" : "-")"]
        })
        return [log] + sendProbe(id)
    }

    /// Sends the same request on along its own redirect chain; the mirror remembers where it led.
    private mutating func followRedirect(_ facts: ResponseFacts, on id: Int, end: ExchangeEnd) -> [Action] {
        guard let exchange = connections[id].exchange else { return [] }
        let target: HTTPURL
        do {
            target = try options.redirects.target(status: facts.status, location: facts.location, from: exchange.url,
                                                  visited: &connections[id].chain)
        } catch {
            return failed(.redirect(error), on: id, window: end.window, retryAfter: end.retryAfter)
        }
        // The connection was moved off a mirror dropped meanwhile: its chain is of no use any more.
        guard connections[id].mirror == exchange.mirror else { return resume(id) }
        mirrors.noteRedirect(exchange.mirror, to: target)
        redirects += 1
        let from = connections[id].chain.dropLast().last
        let log = Action.log(.debug, "following a redirect", {
            [LogKey.connection: "\(id)", LogKey.status: "\(facts.status)", LogKey.url: "\(from.map { "\($0)" } ?? "-")",
             "haul.location": "\(target)"]
        })
        if let last = exchange.end, exchange.role != .mirrorCheck { bytesRequested -= last - exchange.first }
        return [log, send(id, first: exchange.first, end: exchange.end, role: exchange.role, hop: target)]
    }

    /// Connection `id`'s exchange failed with `error`: what ``FailurePolicy`` makes of it (retry later,
    /// drop the mirror, start over, fail), after the server's `Retry-After` (``RetryPolicy/serverWait(after:retryAfter:)``).
    mutating func failed(_ error: HaulError, on id: Int, window: BodyWindow? = nil, retryAfter: Duration? = nil) -> [Action] {
        var error = error
        var serverWait: Duration?
        switch options.retry.serverWait(after: error, retryAfter: retryAfter) {
        case .success(let wait): serverWait = wait
        case .failure(let refusal): error = refusal
        }
        var connection = connections[id]
        // The URL this request went to and its tries in a row: the context a message needs beside the reason.
        let failed = error.adding(url: connection.exchange?.url.description, attempts: connection.failuresInRow + 1)
        if connection.exchange?.role == .mirrorCheck {
            if case .mirrorMismatch = error.reason { return fail(failed) }
            return mirrorCheckEnded(id)
        }
        var actions: [Action] = []
        if let window, !window.bounded, let windowEnd = window.end, sink == .stream {
            actions.append(.discardUnproven(window.start..<windowEnd))
        }
        if let segment = connection.segment { planner?.release(segment) }
        connection.segment = nil
        connections[id] = connection
        speedWatch.forget(id)
        let requestMirror = connection.exchange?.mirror ?? connection.mirror
        // A request to a mirror dropped while it ran says nothing about the mirror the connection has moved
        // to (nor, twice, about the dropped one): it goes back to work there.
        if requestMirror != connection.mirror, mirrors[requestMirror].dropped { return actions + resume(id) }
        // An expired URL goes to the refresher first, when there is one (DownloadStateMachine+Refresh.swift).
        if let refresh = refreshIfExpired(error, failed: failed, on: id) { return actions + refresh }
        let mirror = connection.mirror
        let context = FailurePolicy.Context(
            error: error, failuresInRow: connection.failuresInRow + 1, retriesSoFar: retries, restartsSoFar: restarts,
            canReResolve: connection.exchange?.url != mirrors[mirror].given && mirrors.canReResolve(mirror),
            otherMirrorLive: mirrors.hasOtherLiveMirror(than: mirror))
        switch FailurePolicy.decide(context, retry: options.retry, ifChangedOnServer: ifChangedOnServer) {
        case .restart:
            return actions + restart(because: failed)
        case .fail:
            return actions + fail(failed)
        case .dropMirror:
            let given = mirrors[mirror].given
            actions.append(.log(.notice, "dropping a mirror after its tries", {
                [LogKey.url: "\(given)", LogKey.reason: "\(failed)", LogKey.connection: "\(id)"]
            }))
            return actions + dropMirror(mirror, on: id, error: failed)
        case .retry(let attempt, let reResolve):
            retries += 1
            connections[id].failuresInRow += 1
            connections[id].activity = .waitingToRetry
            if reResolve { _ = mirrors.reResolve(mirror) }
            let delay = options.retry.delay(attempt: attempt, retryAfter: serverWait)
            let url = connection.exchange?.url
            let tries = connections[id].failuresInRow + 1
            actions.append(.log(.debug, "retrying", {
                [LogKey.connection: "\(id)", LogKey.url: "\(url.map { "\($0)" } ?? "-")", LogKey.reason: "\(error)",
                 "haul.delay": "\(delay)", LogKey.attempt: "\(tries)", "haul.reresolve": "\(reResolve)"]
            }))
            actions.append(.retry(connection: id, after: delay))
            return actions
        }
    }

    /// A retry's delay is over.
    mutating func retryDue(_ id: Int) -> [Action] {
        guard isActive, connections.indices.contains(id), connections[id].activity == .waitingToRetry else { return [] }
        connections[id].activity = .idle
        return resume(id)
    }

    /// Sends connection `id` back to work after a failure: its unwritten range when ranges work, otherwise
    /// a new probe (without ranges nothing can be resumed, so the file starts over).
    mutating func resume(_ id: Int) -> [Action] {
        guard isActive else { return [] }
        if rangesSupported { return assignWork(id) + wakeIdleConnections() }
        resetToProbe()
        return sendProbe(id, again: true)
    }

    /// "Retry A, A, then B": after its tries, a mirror is dropped and its connections move to the others.
    mutating func dropMirror(_ index: Int, on id: Int, error: HaulError) -> [Action] {
        guard let next = mirrors.drop(index) else { return fail(error) }
        var actions: [Action] = []
        for other in connections.indices where connections[other].mirror == index && other != id {
            connections[other].mirror = next
            // Their exchanges end with a "closed" failure and retry on the new mirror.
            if connections[other].isBusy { actions.append(.stop(connection: other)) }
        }
        connections[id].failuresInRow = 0
        connections[id].mirror = next
        return actions + resume(id)
    }

    /// Throws away everything and starts over from the probe (the resource changed and the caller allowed
    /// it) — once any checkpoint in flight has landed, so that it cannot re-create the discarded journal.
    /// Said in ``notices``, with the change (`because`): bytes thrown away are never a silent matter, and
    /// without it a resumed download that came back as another version said nothing (`ResumeRedTeamTests`).
    mutating func restart(because change: HaulError) -> [Action] {
        restarts += 1
        let discarded = bytesDone
        let given = mirrors.primary.given
        notices.append("\(change.description): starting over" + (discarded > 0 ? ", discarding the \(discarded) bytes fetched" : ""))
        resetToProbe()
        mirrors.forgetValidators()
        // The connections a refresh would wake are gone; its answer finds nothing pending.
        urlRefresh.pending.removeAll()
        // One connection slot stays for the new probe, so that another download cannot take it meanwhile.
        connections = [Connection(id: 0, mirror: 0)]
        journaling = false
        resumeState = nil
        resumedFromJournal = false
        return [.log(.notice, "the file changed on the server: starting over", {
                    [LogKey.url: "\(given)", "haul.bytes.discarded": "\(discarded)"]
                }),
                .stopConnections, .stopTimers, .releaseConnections(keeping: 1), .discardJournal(thenStartOver: true)]
    }

    /// The journal of a restart is gone: the probe goes again.
    mutating func journalDiscarded() -> [Action] {
        guard isActive else { return [] }
        return sendProbe(0) + [.scheduleSpeedChecks]
    }

    /// Forgets the plan so the next probe starts the file over (the file itself is emptied by the probe).
    private mutating func resetToProbe() {
        planner = nil
        total = nil
        response = nil
        rangesSupported = false
        bytesDone = 0
        bytesAtLastCheckpoint = 0
        integrity.reset()
        phase = .probing
    }

    /// Continues an interrupted download: only the ranges the journal does not list as durable are fetched,
    /// each request carrying `If-Range` with the stored validator, so a changed file is noticed at once.
    mutating func resume(from state: JournalState, first: Int) -> [Action] {
        // The download's identity, as the first run's probe showed it: every response is held to it.
        let identity = Validators(entityTag: state.etag.flatMap { EntityTag($0[...]) },
                                  lastModified: state.lastModified.map { HTTPDate(secondsSinceEpoch: $0) })
        guard !identity.isEmpty else {
            // An older Haul wrote journals without validators: nothing would show whether the server still
            // has the same file. The download starts over, and says so.
            notices.append("the partial download \(partPath) has no ETag or Last-Modified to prove the server still has the same file: starting over")
            let journal = journalPath
            resumeState = nil
            resumedFromJournal = false
            return [.log(.notice, "discarding a journal without validators", {
                        ["haul.journal": "\(journal)", "haul.bytes.discarded": "\(state.durable.count)"]
                    }),
                    .discardJournal(thenStartOver: false)] + sendProbe(first)
        }
        var actions: [Action] = [.openPartialFile(length: state.totalLength)]
        total = state.totalLength
        rangesSupported = true
        fileOpen = true
        mirrors.record(identity, for: 0)
        if let error = pieceGeometryFailure(state.totalLength) { return fail(error) }
        // Straight to where the URL led last time; back to the given URL if that has expired.
        if state.url == mirrors.primary.given.description, let text = state.resolvedURL, let resolved = try? HTTPURL(text) {
            mirrors.noteRedirect(0, to: resolved)
        }
        // Unsynced data (--no-sync) survives a crash of haul, not of the machine: after a reboot, none of it.
        var durable = state.trustedDurable(currentBootID: bootID)
        let journal = journalPath
        if durable.count < state.durable.count {
            notices.append("the partial download was not synced to disk and the machine has restarted since: starting over")
            actions.append(.log(.notice, "the journal's unsynced ranges predate a restart of the machine: fetching them again", {
                ["haul.journal": "\(journal)", "haul.bytes.dropped": "\(state.durable.count - durable.count)"]
            }))
        }
        // A weak ETag alone (no date) still tells a changed file (another tag), so it stays the identity every
        // answer is held to; but no `If-Range` may carry it (RFC 9110 §13.1.5) and it does not promise the same
        // bytes, so ranges under it are not combined across runs (§15.3.7.3): the bytes on disk are fetched
        // again (`ResumeRedTeamTests`: other bytes under the same weak tag were stitched to them, exit 0).
        if !identity.hasStrongEntityTag, identity.lastModified == nil, durable.count > 0 {
            notices.append("the partial download \(partPath) has only a weak ETag, which does not promise the same bytes: starting over")
            let dropped = durable.count
            actions.append(.log(.notice, "the journal's identity is a weak ETag alone: fetching its ranges again", {
                ["haul.journal": "\(journal)", "haul.bytes.dropped": "\(dropped)"]
            }))
            durable = ByteRangeSet()
        }
        actions.append(.log(.debug, "resuming from the journal", {
            ["haul.journal": "\(journal)", "haul.total": "\(state.totalLength)", "haul.bytes.reused": "\(durable.count)",
             "haul.ranges.reused": "\(durable.ranges.count)", "haul.etag": "\(state.etag.map { String(decoding: $0, as: UTF8.self) } ?? "-")"]
        }))
        var planner = SegmentPlanner(total: state.totalLength, minimumSegment: options.minimumSegment, alreadyDone: durable)
        bytesDone = durable.count
        bytesAtLastCheckpoint = bytesDone
        journaling = true
        actions.append(.continueJournal(state))
        let wanted = planner.usefulConnections(limit: options.connections)
        planner.splitForStart(connections: wanted)
        self.planner = planner
        phase = .running
        actions += resumePieces(durable: durable, recorded: state.pieces)
        return actions + assignWork(first) + openConnections(wanted - 1) + finishIfDone()
    }

    /// The name the probe gave leads to an interrupted download: the probe is dropped and the journal continued.
    mutating func continueFromJournal(_ state: JournalState, bootID: [UInt8]?) -> [Action] {
        guard isActive else { return [] }
        self.bootID = bootID
        let destination = destination
        connections = [Connection(id: 0, mirror: 0)]
        resumeState = state
        resumedFromJournal = true
        return [.log(.debug, "the server's name leads to an interrupted download: continuing it", { ["haul.destination": "\(destination)"] }),
                .stopConnections, .releaseConnections(keeping: 1)] + resume(from: state, first: 0)
    }
}
