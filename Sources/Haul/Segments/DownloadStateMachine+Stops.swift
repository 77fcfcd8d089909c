import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// Stops (fail, pause, cancel), the journal and its back-pressure, the speed watch, a stream's horizon.
extension DownloadStateMachine {
    // MARK: Stops

    /// Stops every connection and reports `error` (once), after a last checkpoint so that running again
    /// resumes from everything written so far.
    mutating func fail(_ error: HaulError) -> [Action] {
        guard !isStopped else { return [] }
        let done = bytesDone
        var actions = stopEverything(.failed, log: .log(.debug, "download stopping on an error", {
            [LogKey.reason: "\(error)", "haul.bytes": "\(done)"]
        }))
        let cleanup = earlyStopCleanup
        if !cleanup.isEmpty || stopsUnnamedBeforeFirstByte {
            // Nothing was written: no checkpoint to make, and what this run created goes again.
            actions.append(.end(.failed(error), after: .removing(cleanup)))
        } else if journaling, let planner {
            if case .changedOnServer = error.reason {
                actions.append(.end(.failed(error), after: .checkpointerIdle))
            } else {
                actions.append(.end(.failed(error), after: .checkpoint(planner.written, pausing: false)))
            }
        } else {
            actions.append(.end(.failed(error), after: .nothing))
        }
        return actions
    }

    /// Ends a download whose conditional probe was answered 304: nothing was written, so what this run
    /// created (the `.part`) goes again and the destination stays as it was.
    mutating func endUpToDate() -> [Action] {
        guard !isStopped else { return [] }
        var actions = stopEverything(.finished, log: .log(.debug, "the destination is up to date (304 Not Modified)", { [:] }))
        actions.append(.end(.upToDate, after: .removing(earlyStopCleanup)))
        return actions
    }

    /// Ends a download whose first answer is a Metalink document to follow: nothing was written, so what
    /// this run created (the `.part`) goes again.
    mutating func endForMetalink(_ url: HTTPURL) -> [Action] {
        guard !isStopped else { return [] }
        var actions = stopEverything(.finished, log: .log(.debug, "the answer is a Metalink document to follow", { [LogKey.url: "\(url)"] }))
        actions.append(.end(.metalinkDocument(url), after: .removing(earlyStopCleanup)))
        return actions
    }

    /// Stops every connection after a final checkpoint, so that the journal lists everything written —
    /// whatever the file's size: a pause promises a resume.
    mutating func pause() -> [Action] {
        guard !isStopped else { return [] }
        let done = bytesDone
        var actions = stopEverything(.paused, log: .log(.debug, "pausing", { ["haul.bytes": "\(done)"] }))
        // Neither a stream nor memory keeps what it has: a resume of either starts over.
        let resumable = bytesDone == 0 || (rangesSupported && sink == .file)
        let cleanup = earlyStopCleanup
        if !cleanup.isEmpty || stopsUnnamedBeforeFirstByte {
            // Paused before the first body byte: there is nothing to resume, so nothing stays behind.
            actions.append(.end(.paused(resumable: resumable), after: .removing(cleanup)))
            return actions
        }
        // A pause creates the journal with its own checkpoint, one job: a second signal during an extra
        // empty one (with its data sync) left no journal at all.
        if !journaling, canJournal {
            journaling = true
            actions.append(.startJournal(firstCheckpoint: false))
        }
        // `pausing`: the process may be killed right after (a second Ctrl-C), so a record that is true for
        // this boot goes first when no synced one is at stake (``Checkpointer``).
        if journaling, let planner {
            actions.append(.end(.paused(resumable: resumable), after: .checkpoint(planner.written, pausing: true)))
        } else {
            actions.append(.end(.paused(resumable: resumable), after: .nothing))
        }
        return actions
    }

    /// Stops every connection; reports once no checkpoint is writing any more, so that the caller can
    /// delete the files without racing one.
    mutating func cancel() -> [Action] {
        guard !isStopped else { return [] }
        let done = bytesDone
        var actions = stopEverything(.cancelled, log: .log(.debug, "cancelling", { ["haul.bytes": "\(done)"] }))
        actions.append(.end(.cancelled, after: journaling ? .checkpointerIdle : .nothing))
        return actions
    }

    private mutating func stopEverything(_ stop: Stop, log: Action) -> [Action] {
        phase = .stopped(stop)
        waitingForSlot = nil
        return [log, .stopConnections, .stopTimers, .releaseConnections(keeping: 0)]
    }

    /// A file without a name (``WorkingFileChoice/unnamed``) with nothing written: it leaves nothing, and
    /// needs no journal (its cleanup is empty, yet the stop is as early as one that removes a `.part`).
    var stopsUnnamedBeforeFirstByte: Bool { created.unnamed && bodyBytesWritten == 0 }

    /// Whether a download ending with `report` gives its file without a name (``WorkingFileChoice/unnamed``)
    /// its `.part` name first: a failure or a pause that leaves written bytes keeps them for the next run, as
    /// a named `.part` would; any other end, or one with nothing written, leaves nothing.
    func namesUnnamedWorkingFile(endingWith report: Report) -> Bool {
        guard created.unnamed, bodyBytesWritten > 0 else { return false }
        switch report {
        case .failed, .paused: return true
        case .finished, .cancelled, .upToDate, .metalinkDocument: return false
        }
    }

    /// Body bytes written into the file in this run.
    var bodyBytesWritten: Int64 { max(bytesDone, planner?.written.count ?? 0) }

    /// What a stop now removes (``EarlyStopCleanup``): empty unless no body byte was written yet.
    var earlyStopCleanup: EarlyStopCleanup {
        guard sink == .file else { return EarlyStopCleanup() }
        return EarlyStopCleanup.decide(.init(created: created, resumed: resumeState != nil,
                                             bytesWritten: bodyBytesWritten,
                                             partPath: partPath, journalPath: journalPath))
    }

    // MARK: The journal

    /// Whether a journal can be written: a file on disk, open, of a known length, from a server with ranges.
    private var canJournal: Bool { sink == .file && fileOpen && total != nil && rangesSupported }

    /// Starts the resume journal — for files larger than one checkpoint window only: a smaller file lost in a
    /// crash costs no more than the window the journal would have saved, and skipping its create, sync and
    /// removal is what makes many small downloads cheap.
    mutating func startJournalIfLarge() -> [Action] {
        guard !journaling, canJournal, let total, total > options.checkpointBytes else { return [] }
        journaling = true
        return [.startJournal(firstCheckpoint: true)]
    }

    /// The journal's first record: the download's identity, as the probe showed it.
    func journalState(createdAt: Int64, checksum: Checksum?) -> JournalState? {
        guard let total else { return nil }
        let primary = mirrors.primary
        return JournalState(
            url: primary.given.description, mirrors: mirrors.mirrors.dropFirst().map(\.given.description),
            etag: primary.validators.entityTag.map(\.fieldValue), lastModified: primary.validators.lastModified?.secondsSinceEpoch,
            totalLength: total, minimumSegmentSize: options.minimumSegment,
            checksum: checksum.map { JournalChecksum(algorithm: $0.algorithm.rawValue, hex: $0.hex) },
            createdAt: createdAt, resolvedURL: primary.isRedirected ? primary.resolved.description : nil, pieces: journalPieces)
    }

    /// A checkpoint of everything written, unless nothing was written since the last one.
    mutating func checkpointNow() -> Action? {
        guard journaling, !isStopped, let planner, bytesDone != bytesAtLastCheckpoint else { return nil }
        bytesAtLastCheckpoint = bytesDone
        return .checkpoint(planner.written)
    }

    /// A checkpoint landed. Pages that failed to sync may be gone while the file still reads as written:
    /// nothing written so far can be trusted to be on disk, so the download cannot honestly go on.
    mutating func checkpointLanded(dataSyncFailure: SystemError?) -> [Action] {
        guard let dataSyncFailure else { return [] }
        return fail(.disk(path: partPath, dataSyncFailure))
    }

    /// Whether reads wait for the checkpoints to catch up: a crash loses at most what no finished checkpoint
    /// records, and when the disk syncs slower than the network delivers, that would grow without bound;
    /// holding reads at two windows (one being synced, one being written) keeps it bounded.
    func readsHeldForDurability(durableBytes: Int64?) -> Bool {
        guard journaling, let durableBytes else { return false }
        return bytesDone - durableBytes >= 2 * options.checkpointBytes
    }

    /// How long reads wait now for durability, with the checkpoint that catches up.
    mutating func durabilityHold(durableBytes: Int64?) -> (wait: Duration, checkpoint: Action?)? {
        guard readsHeldForDurability(durableBytes: durableBytes) else { return nil }
        return (.milliseconds(5), checkpointNow())
    }

    // MARK: Slow connections

    /// Once a second (``ConnectionSpeedWatch``): a connection far slower than the median gives up the rest
    /// of its range, so that the tail does not wait on it; one under the low-speed limit is closed and its
    /// range retried — any connection with a request out, whatever it waits for, since any of them can be
    /// held by a server. `received`: body bytes of each busy connection; `readsPaused`: those whose reads
    /// haul holds itself (the rate limit), whose seconds are not the server's.
    mutating func speedTick(received: [Int: Int64], readsPaused: Set<Int>, durableBytes: Int64?) -> [Action] {
        guard isActive else { return [] }
        let splittable = Set(connections.filter { $0.isBusy && $0.segment != nil }.map(\.id))
        let paused = readsHeldForDurability(durableBytes: durableBytes) ? Set(received.keys) : readsPaused
        let verdict = speedWatch.tick(received: received, splittable: splittable, paused: paused)
        var actions = measureMirrors(heldBack: !paused.isEmpty)
        for id in verdict.belowLimit {
            guard connections.indices.contains(id), let limit = speedWatch.lowSpeed, let url = connections[id].exchange?.url else { continue }
            connections[id].interruption = .belowSpeedLimit(url: url.description, limit: limit)
            actions.append(.log(.debug, "closing a connection below the speed limit", { [LogKey.connection: "\(id)", LogKey.url: "\(url)"] }))
            actions.append(.stop(connection: id))
        }
        guard var planner, !verdict.split.isEmpty else { return actions }
        var released = false
        for (id, keep) in verdict.split {
            guard connections.indices.contains(id), let segment = connections[id].segment else { continue }
            let given = planner.shrink(segment, keeping: keep)
            if given > 0 {
                actions.append(.log(.trace, "slow connection gives up the rest of its range", {
                    [LogKey.connection: "\(id)", "haul.bytes.released": "\(given)"]
                }))
                released = true
                speedWatch.forget(id)
            }
        }
        self.planner = planner
        return released ? actions + wakeIdleConnections() : actions
    }

    // MARK: A stream's horizon

    /// Whether the stream has delivered enough that the planner may hand out the next bytes (checked on the
    /// next loop turn: this runs inside a connection's read); true marks the check as queued.
    mutating func queueHorizonCheck(delivered: Int64) -> Bool {
        guard sink == .stream, let planner, !horizonCheckQueued,
              delivered + streamWindow - planner.horizon >= streamChunk || delivered == planner.horizon else { return false }
        horizonCheckQueued = true
        return true
    }

    /// The queued horizon check: connections that rest for want of work are woken when bytes are released.
    mutating func advanceHorizon(delivered: Int64) -> [Action] {
        horizonCheckQueued = false
        guard isActive, var planner else { return [] }
        let released = planner.advanceHorizon(to: delivered + streamWindow)
        self.planner = planner
        return released ? wakeIdleConnections() : []
    }
}
