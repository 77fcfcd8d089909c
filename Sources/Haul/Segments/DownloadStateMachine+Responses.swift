import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// The response heads: the probe's (the download's shape), a ranged one (may it be written), a mirror
/// check's (the same file?).
extension DownloadStateMachine {
    /// What the driver does with a head.
    enum HeadStep {
        /// Give the worker `answer`; first prepare the file (a failure fails the exchange), then run `then`.
        case answer(HeadAnswer, prepare: FilePreparation? = nil, then: [Action] = [])
        /// The exchange fails with this error (thrown from the head).
        case refuse(HaulError)
        /// The probe's answer is the file, which has no name yet: the driver names it, then feeds
        /// ``acceptProbe(_:head:on:)`` (or ``retire(_:)`` to continue a journal the name leads to).
        case nameFile(ProbeResponseDecision)
    }

    /// A response head arrived on connection `id`'s current exchange.
    mutating func headArrived(_ facts: ResponseFacts, head: ResponseHead, on id: Int) -> HeadStep {
        guard isActive, let exchange = connections[id].exchange else { return .answer(.abandon) }
        if facts.isRedirect {
            connections[id].verdict = .redirect(facts)
            return .answer(.drain)
        }
        switch exchange.role {
        case .probe: return probeHead(facts, head: head, exchange: exchange)
        case .ranged: return rangedHead(facts, head: head, exchange: exchange)
        case .mirrorCheck: return mirrorCheckHead(facts, exchange: exchange)
        }
    }

    /// A 304's `Content-Length` (which frames nothing there): the digits of the first field, nil when there is
    /// none or it is not a plain number.
    static func declaredLength(in head: ResponseHead) -> Int64? {
        guard let value = head.fields.first("content-length"), !value.isEmpty, value.count <= 18,
              value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return value.reduce(Int64(0)) { $0 * 10 + Int64($1 - UInt8(ascii: "0")) }
    }

    private mutating func probeHead(_ facts: ResponseFacts, head: ResponseHead, exchange: SegmentAssignment) -> HeadStep {
        // A bounded probe counted its range when it was sent; what it carries is counted per decision.
        if let end = exchange.end { bytesRequested -= end - exchange.first }
        switch NotModifiedDecision.decide(status: facts.status, framing: facts.framing, askedConditionally: exchange.sentConditional,
                                          sentIfRange: exchange.sentIfRange, asked: facts.status == 304 ? conditional : nil,
                                          answeredEntityTag: facts.entityTag,
                                          answeredLength: facts.status == 304 ? Self.declaredLength(in: head) : nil,
                                          url: exchange.url.description) {
        case .notApplicable: break
        case .faulty(let error): return .refuse(error)
        case .upToDate:
            // Nothing of this response is the file; the exchange ends (the connection kept), then the download.
            connections[exchange.connection].verdict = .upToDate
            return .answer(.drain)
        }
        if followsMetalink {
            switch MetalinkResponseDecision.decide(facts, limit: MetalinkLimits().maximumBytes) {
            case .notMetalink:
                break
            case .follow:
                // Nothing of this body goes to the destination; the document is read on its own, bounded.
                connections[exchange.connection].verdict = .metalinkDocument(exchange.url)
                return .answer(.abandon)
            case .tooLargeToFollow(let length, let limit):
                notices.append("\(exchange.url) is served as a Metalink document (application/metalink4+xml) of \(length) bytes, more than the \(limit) a document may have: saved as a file, not followed")
            }
        }
        let decision = ProbeResponseDecision.decide(facts, url: exchange.url.description, form: exchange.probeForm,
                                                    expectedSize: expectedSize)
        switch decision {
        case .redirect: return .refuse(.unexpected("redirects are followed before the probe's decision"))
        case .faulty(let error), .failed(let error): return .refuse(error)
        case .retryProbe(let form, let refusal):
            // Nothing of this response is the file: its body is drained, then the probe goes again.
            probeFallback = form
            connections[exchange.connection].verdict = .retryProbe(because: refusal)
            return .answer(.drain)
        case .ranged, .whole, .empty, .withoutValidators:
            return awaitingName ? .nameFile(decision) : acceptProbe(decision, head: head, on: exchange.connection)
        }
    }

    /// The probe's answer is the file: it decides the shape of the whole download (``ProbeResponseDecision``).
    mutating func acceptProbe(_ decision: ProbeResponseDecision, head: ResponseHead, on id: Int) -> HeadStep {
        guard let exchange = connections[id].exchange else { return .refuse(.unexpected("a probe without a request")) }
        awaitingName = false
        let url = exchange.url
        if response == nil { response = head }
        switch decision {
        case .ranged(let length, let served, let validators, let streamBody):
            if let refusal = sizeRefusal(length, url: url) { return .refuse(refusal) }
            mirrors.record(validators, for: exchange.mirror)
            total = length
            rangesSupported = true
            // Mirrors that have not shown their length yet are asked first: URLs that are different files
            // fail the download before a byte is written.
            let unchecked = mirrors.indices.filter { $0 != exchange.mirror && !mirrors[$0].verified && !mirrors[$0].dropped }
            let streamBody = streamBody && unchecked.isEmpty
            var planner = sink != .stream
                ? SegmentPlanner(total: length, minimumSegment: options.minimumSegment)
                : SegmentPlanner(total: length, minimumSegment: min(options.minimumSegment, streamChunk),
                                 horizon: streamWindow, requestChunk: streamChunk)
            let wanted = planner.usefulConnections(limit: options.connections)
            planner.splitForStart(connections: wanted)
            guard let work = planner.nextRequest(for: id), work.range.lowerBound == 0 else {
                return .refuse(.unexpected("the probe's segment does not start at byte 0"))
            }
            var window: BodyWindow?
            if streamBody {
                // What the response carries of the probe's segment is in flight and nobody may take part of
                // it (all of the segment for an open-ended probe); the rest is asked for a request at a time.
                let inFlight = min(planner.end(of: work.segment) ?? 0, served.upperBound)
                planner.markRequested(work.segment, upTo: inFlight)
                connections[id].segment = work.segment
                window = BodyWindow(start: 0, end: served.upperBound, bounded: true)
                bytesRequested += inFlight
            } else {
                // A body without a length to hold it to: the same bytes are fetched again in bounded ranges.
                planner.release(work.segment)
            }
            self.planner = consume planner
            guard unchecked.isEmpty else {
                phase = .checkingMirrors
                return .answer(.abandon, then: [.takeSlots(unchecked.count, .mirrorChecks(unchecked))])
            }
            phase = .running
            fileOpen = true
            // The probe keeps streaming from byte 0 (or starts over with a bounded range); the others open now.
            let then = startJournalIfLarge() + openConnections(wanted - 1)
            peakConnections = max(peakConnections, connections.count)
            return .answer(HeadAnswer(decision: streamBody ? .receiveBody : .abandon, window: window),
                           prepare: preparation(length), then: then)
        case .whole(let length, let validators):
            // Ranges are not supported: this one connection carries the file.
            return takeWholeFile(length: length, validators: validators, on: id, url: url)
        case .withoutValidators(let length, let carriesWholeFile):
            if probeFallback != .withoutRange {
                notices.append("\(url) sends no ETag or Last-Modified: nothing could show that two responses are of the same file, so it is fetched as one response over one connection")
                // Every later probe of this download (after a failure, a restart) asks without Range too.
                probeFallback = .withoutRange
            }
            if carriesWholeFile {
                // `rangesSupported` stays false: a retry or a pause starts the file over, never continues it.
                return takeWholeFile(length: length, validators: Validators(), on: id, url: url)
            }
            guard exchange.sendsRange else {
                return .refuse(.faultyResponse(url: url.description, detail: "answered a request without Range with part of the file (206)"))
            }
            connections[id].verdict = .retryProbe(because: .faultyResponse(
                url: url.description, detail: "sends no ETag or Last-Modified, and this answer is not the whole file"))
            return .answer(.abandon)
        case .empty(let validators):
            // Whatever body came with it (a 416's error text) is not the file.
            mirrors.record(validators, for: exchange.mirror)
            total = 0
            planner = SegmentPlanner(total: 0, minimumSegment: options.minimumSegment)
            phase = .running
            fileOpen = true
            peakConnections = max(peakConnections, connections.count)
            return .answer(.drain, prepare: preparation(0))
        case .redirect, .faulty, .failed, .retryProbe:
            return .refuse(.unexpected("the probe's answer is not the file"))
        }
    }

    /// Makes connection `id`'s response the one that carries the whole file (`length` bytes, when known).
    private mutating func takeWholeFile(length: Int64?, validators: Validators, on id: Int, url: HTTPURL) -> HeadStep {
        if let length, let refusal = sizeRefusal(length, url: url) { return .refuse(refusal) }
        mirrors.record(validators, for: connections[id].exchange?.mirror ?? 0)
        total = length
        if let length {
            var planner = SegmentPlanner(total: length, minimumSegment: options.minimumSegment)
            connections[id].segment = planner.nextRequest(for: id)?.segment
            if let segment = connections[id].segment { planner.markRequestedToEnd(segment) }
            self.planner = planner
            bytesRequested += length
        } else {
            connections[id].segment = nil
        }
        phase = .running
        fileOpen = true
        peakConnections = max(peakConnections, connections.count)
        return .answer(HeadAnswer(decision: .receiveBody, window: BodyWindow(start: 0, end: length, bounded: length != nil)),
                       prepare: preparation(length))
    }

    /// Empties the file and checks for room; a small file (one connection's work, no journal) is not
    /// preallocated: that buys nothing and costs syscalls and extent conversions per file.
    func preparation(_ length: Int64?) -> FilePreparation {
        let size = length ?? 0
        return FilePreparation(length: length, preallocate: sink == .file && !(size < 2 * options.minimumSegment && size <= options.checkpointBytes))
    }

    /// Refuses a resource of `length` bytes that the download may not hold (into memory, or over
    /// `DownloadOptions/maximumFileSize`).
    func sizeRefusal(_ length: Int64, url: HTTPURL) -> HaulError? {
        guard let sizeLimit, length > sizeLimit else { return nil }
        return .responseTooLarge(url: url.description, limit: Int(sizeLimit), length: length)
    }

    /// Whether a ranged response may be written (``RangedResponseDecision``), and the window of its body.
    private mutating func rangedHead(_ facts: ResponseFacts, head: ResponseHead, exchange: SegmentAssignment) -> HeadStep {
        guard let total else { return .refuse(.unexpected("a ranged request before the length is known")) }
        let mirror = mirrors[exchange.mirror]
        let end = exchange.end ?? total
        let known = RangedResponseDecision.Known(
            total: total, validators: mirror.validators, verified: mirror.verified, sentIfRange: exchange.sentIfRange,
            partialSince: resumeState.map { HTTPDate(secondsSinceEpoch: $0.createdAt) },
            failuresInRow: connections[exchange.connection].failuresInRow)
        switch RangedResponseDecision.decide(facts, requested: exchange.first..<end, known: known, url: exchange.url.description) {
        case .accept(let validators, let bounded):
            if response == nil { response = head }
            if !mirror.verified { mirrors.record(validators, for: exchange.mirror) }
            return .answer(HeadAnswer(decision: .receiveBody, window: BodyWindow(start: exchange.first, end: end, bounded: bounded)))
        case .acceptFromWholeBody:
            let log = Action.log(.debug, "taking a range out of a whole-file answer with the download's ETag", {
                [LogKey.connection: "\(exchange.connection)", LogKey.url: "\(exchange.url)", LogKey.range: "\((exchange.first..<end).logText)"]
            })
            return .answer(HeadAnswer(decision: .receiveBody, window: BodyWindow(wholeBodyTaking: exchange.first..<end)), then: [log])
        case .redirect:
            return .refuse(.unexpected("redirects are followed before the ranged decision"))
        case .faulty(let error), .changed(let error), .mirrorDisagrees(let error), .mirrorWithoutValidators(let error), .failed(let error):
            // A mirror without validators that its check did not reach: retried, then dropped by its tries.
            return .refuse(error)
        }
    }

    /// Whether a mirror's answer to the check shows the same resource (its length); a
    /// ``HaulError/mirrorMismatch(url:detail:)`` otherwise. Its body is never read.
    private mutating func mirrorCheckHead(_ facts: ResponseFacts, exchange: SegmentAssignment) -> HeadStep {
        if facts.status == 200 {
            // It ignores ranges: it cannot share the work, but that says nothing against the file.
            _ = mirrors.drop(exchange.mirror)
            return .answer(.abandon)
        }
        guard let total else { return .refuse(.unexpected("a mirror check before the length is known")) }
        let known = RangedResponseDecision.Known(total: total, validators: Validators(), verified: false, sentIfRange: false)
        switch RangedResponseDecision.decide(facts, requested: 0..<1, known: known, url: exchange.url.description) {
        case .accept(let validators, _):
            mirrors.record(validators, for: exchange.mirror)
        case .mirrorDisagrees(let error):
            // The length was given (a Metalink's size) and the probe matched it: this mirror is the one that
            // lies, so it is left out rather than failing the download as URLs of different files would.
            if let expectedSize, let served = facts.contentRange.flatMap(ContentRange.init)?.completeLength, served != expectedSize {
                _ = mirrors.drop(exchange.mirror)
                let refusal = HaulError.Reason.sizeMismatch(url: exchange.url.description, expected: expectedSize, served: served)
                notices.append("\(refusal.description): mirror left out")
                return .answer(.abandon)
            }
            return .refuse(error)
        case .mirrorWithoutValidators(let error):
            // Like a mirror that ignores ranges: it says nothing against the file, but cannot share the work.
            _ = mirrors.drop(exchange.mirror)
            return .answer(.abandon, then: [.log(.notice, "leaving out a mirror without validators", {
                [LogKey.url: "\(exchange.url)", LogKey.reason: "\(error)"]
            })])
        case .redirect:
            return .refuse(.unexpected("redirects are followed before the check's decision"))
        case .faulty, .changed, .failed, .acceptFromWholeBody:
            break   // not an answer about the resource: its first ranged response will check it
        }
        return .answer(.abandon)
    }

    /// A mirror check ended (whatever its answer); the last one starts the download.
    mutating func mirrorCheckEnded(_ id: Int) -> [Action] {
        if mirrors[connections[id].mirror].dropped { connections[id].mirror = mirrors.mirror(forConnection: id) }
        mirrorChecksPending -= 1
        return mirrorChecksPending == 0 ? startAfterMirrorChecks() : []
    }

    mutating func startAfterMirrorChecks() -> [Action] {
        guard isActive, let total else { return [] }
        phase = .running
        fileOpen = true
        if let error = pieceGeometryFailure(total) { return fail(error) }
        var actions: [Action] = [.prepareFile(preparation(total))]
        actions += startJournalIfLarge()
        actions += wakeIdleConnections()
        if let planner {
            actions += openConnections(planner.usefulConnections(limit: options.connections) - connections.lazy.filter(\.isBusy).count)
        }
        peakConnections = max(peakConnections, connections.count)
        return actions
    }

    /// Drops the probe's exchange on purpose: the name it gave leads to a journal to continue instead.
    mutating func retire(_ id: Int) {
        awaitingName = false
        connections[id].verdict = .retired
    }

    /// Takes what naming the file created, to remove it again on an early stop.
    mutating func noteCreated(_ more: EarlyStopCleanup.Created) {
        created = created.merged(with: more)
        fileOpen = true
    }

    /// The file without a name got its `.part` name (``SegmentedDownload``): this run created that `.part`.
    mutating func noteWorkingFileNamed() {
        created.part = true
        created.unnamed = false
    }
}
