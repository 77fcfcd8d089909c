import Glibc
import HaulHTTP
import HaulIO
import Logging

/// What a ``SegmentWorker`` asks of its download while an exchange runs (``SegmentedDownload``, which
/// asks ``DownloadStateMachine``). The worker only reads answers; nothing writes into the worker.
protocol SegmentWorkerHost: AnyObject {
    /// Whether the download has stopped (what still arrives is dropped).
    var isStopped: Bool { get }
    /// What to do with the body of this head (thrown: the exchange fails with it).
    func headArrived(_ head: ResponseHead, _ facts: ResponseFacts, on connection: Int) throws -> HeadAnswer
    /// Where the connection's segment ends now (it shrinks when another takes its tail); nil without one.
    func segmentEnd(of connection: Int) -> Int64?
    /// `count` body bytes were written at `offset`; `proven` false: provisional, accounted at the end.
    func bodyWritten(_ count: Int64, at offset: Int64, proven: Bool, on connection: Int)
    /// How long reads wait for the checkpoints to catch up, if they do.
    func durabilityHold() -> Duration?
    /// The exchange ended; called once per exchange.
    func exchangeEnded(_ end: ExchangeEnd)
}

/// One connection's worth of a segmented download: it sends the request of its ``SegmentAssignment``,
/// hands the response head to the download, writes the body into the ``BodySink`` — only the bytes its
/// ``BodyWindow`` allows, stopping at its segment's end — and reports the exchange's end once, as a value.
///
/// Loop-confined. It holds only what one exchange needs; the download decides everything else.
final class SegmentWorker: ResponseHandler, @unchecked Sendable {
    // @unchecked Sendable: used only on the download's event-loop thread.

    /// Largest remainder of a response read and dropped (to keep the connection) after a segment shrank.
    static let maxDrainBytes: Int64 = 256 * 1024
    /// In durable mode, write-back is started behind the write front in steps of this size (on a thread of
    /// its own, see ``OutputFile/writeBackInBackground(offset:length:)``), so that the disk writes while the
    /// network delivers and a checkpoint's `fdatasync` finds little left to write.
    static let writeBackStep: Int64 = 2 << 20

    /// How the worker's download runs, the same for every exchange.
    struct Settings {
        let client: HTTPClient
        let splicesBodies: Bool
        let synchronizesToDisk: Bool
        let rateLimiter: RateLimiter?
        let logger: Logger
        /// Spliced bytes go pipe → file on a writer thread rather than the loop's
        /// (``DownloadOptions/handsOffSplicedWrites``).
        var handsOffSplicedWrites = true
    }

    let id: Int
    /// Strong on purpose: an exchange's completion can arrive after the download has ended and let go of its
    /// workers, and must find the download still there (it then ignores the report).
    private let host: SegmentWorkerHost
    private let sink: BodySink
    private let settings: Settings
    private(set) var assignment: SegmentAssignment?
    /// The bytes of the current response that may be written; nil while the body is only drained.
    private var window: BodyWindow?
    /// Whether the window's bytes are recorded only once the body has ended exactly at the range's end.
    private var provisional: Bool { window.map { !$0.bounded && $0.end != nil } ?? false }
    private var drained: Int64 = 0
    /// Whether some of the current response's body was spliced into the file (logged once per exchange).
    private var spliced = false
    /// The segment is done but its response goes on: its remaining bytes are drained.
    private var draining = false
    private var retryAfter: Duration?
    private var cancellation: ExchangeCancellation?
    /// Body bytes received, whatever became of them, for the low-speed limit: a server that trickles a body
    /// nobody keeps holds the connection all the same.
    private(set) var bytesReceived: Int64 = 0
    /// Until when haul itself holds this connection's reads (the rate limit, the checkpoints).
    private var readsPausedUntil: MonotonicInstant?
    private var bytesSinceRateCheck = 0
    /// Bytes this worker wrote in one run, `writeBackFrom..<writeFront`, whose write-back is not started yet.
    /// The run goes on across requests that continue where the last one ended.
    private var writeBackFrom: Int64 = 0
    private var writeFront: Int64 = 0

    init(id: Int, host: SegmentWorkerHost, sink: BodySink, settings: Settings) {
        self.id = id
        self.host = host
        self.sink = sink
        self.settings = settings
    }

    /// Starts the exchange `assignment` describes.
    func start(_ assignment: SegmentAssignment) {
        self.assignment = assignment
        window = nil
        draining = false
        drained = 0
        spliced = false
        retryAfter = nil
        settings.logger.debug("sending request", metadata: [
            LogKey.connection: "\(id)", "haul.method": "\(assignment.head.method.rawValue)", LogKey.url: "\(assignment.url)",
            LogKey.range: "\(assignment.head.range.map(\.headerValue) ?? "-")", LogKey.attempt: "\(assignment.attempt)",
            "haul.role": "\(assignment.role)", "haul.if_range": "\(assignment.sentIfRange)",
        ])
        let serial = assignment.serial
        cancellation = settings.client.executeOnLoop(assignment.head, handler: self) { [self] result in
            let current = self.assignment?.serial == serial
            if current { cancellation = nil }
            host.exchangeEnded(ExchangeEnd(connection: id, serial: serial, outcome: result,
                                           window: current ? window : nil, retryAfter: current ? retryAfter : nil))
        }
    }

    /// Stops the current exchange (closing its connection); its end is reported as a failure.
    func stop() {
        cancellation?.cancelOnLoop()
        cancellation = nil
    }

    /// Whether haul holds this connection's reads right now (``readsPausedUntil``).
    var readsPaused: Bool {
        readsPausedUntil.map { MonotonicInstant.now() < $0 } ?? false
    }

    /// File offset of the next body byte of the current response.
    private var position: Int64 { window?.position ?? assignment?.first ?? 0 }

    // MARK: ResponseHandler

    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision {
        guard !host.isStopped else { return .abandon }
        // The wait a `Retry-After` asks for, read with the other facts in their one pass over the fields.
        let facts = ResponseFacts(head)
        retryAfter = facts.retryAfter.map { .seconds($0.delay(now: Int64(time(nil)))) }
        settings.logger.debug("received response head", metadata: [
            LogKey.connection: "\(id)", LogKey.status: "\(facts.status)", LogKey.url: "\(assignment.map { "\($0.url)" } ?? "-")",
            "haul.content_length": "\(facts.declaredLength.map { "\($0)" } ?? "-")",
            "haul.content_range": "\(facts.contentRange ?? "-")",
        ])
        let answer = try host.headArrived(head, facts, on: id)
        window = answer.window
        return answer.decision
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        let url = assignment?.url
        return try receiveBody(count: bytes.count) { part, at in
            guard let url else { throw HaulError.unexpected("body bytes without a request") }
            try sink.write(UnsafeRawBufferPointer(rebasing: bytes[part]), at: at, proven: !provisional, url: url)
        }
    }

    func bodyBytesToSplice() -> Int64 {
        guard !host.isStopped else { return 0 }
        return BodyReceivePath.decide(
            enabled: settings.splicesBodies, sink: sink.kind, rateLimited: settings.rateLimiter != nil,
            window: window, draining: draining, segmentEnd: host.segmentEnd(of: id)
        ).spliceBytes
    }

    /// The same steps as for bytes read (the window, the segment's end, the accounting, the rate and
    /// durability checks that follow), with the bytes moved from the connection's pipe into the file.
    func didReceiveBody(piped: PipedBytes) throws -> BodyDecision {
        noteSplicing(piped)
        return try receiveBody(count: piped.count) { part, at in
            try checkSpliced(part)
            try sink.write(piped: piped, count: part.count, at: at)
        }
    }

    /// ``didReceiveBody(piped:)`` with the pipe → file move on a writer thread
    /// (``Settings/handsOffSplicedWrites``): the bytes count as written — the window, ``SegmentWorkerHost/bodyWritten(_:at:proven:on:)``,
    /// the segment's end — only in the completion, once the writer has returned; until then the connection
    /// reads nothing more. A write that returns after its exchange was stopped or replaced counts for nothing
    /// (its bytes are in the file, where a later write of the same range puts the same bytes).
    func didReceiveBody(piped: PipedBytes, resume: @escaping (Result<BodyDecision, any Error>) -> Void) throws -> PipedBodyDecision {
        guard SplicedWritePlace.decide(handsOff: settings.handsOffSplicedWrites, count: piped.count) == .writerThread else {
            return .now(try didReceiveBody(piped: piped))
        }
        noteSplicing(piped)
        let step: BodyStep
        switch takeBody(count: piped.count) {
        case .decided(let decision): return .now(decision)
        case .write(let planned): step = planned
        }
        try checkSpliced(step.part)
        // Nothing of them belongs in the file (never the case: no more is spliced than the segment takes):
        // nothing to hand off; the bytes go with the pipe.
        guard !step.part.isEmpty else {
            window = step.window
            return .now(try bodyTaken(step))
        }
        let serial = assignment?.serial
        try sink.handOff(piped: piped, count: step.part.count, at: step.at) { [self] failure in
            switch HandedOffWriteReturn.decide(exchangeCurrent: cancellation != nil && assignment?.serial == serial,
                                               downloadStopped: host.isStopped, failed: failure != nil) {
            case .countsForNothing:
                resume(.success(.stop))
            case .fails:
                // As a failed write on the loop leaves it: the window past the bytes, none of them counted.
                window = step.window
                resume(.failure(failure ?? HaulError.unexpected("a failed write without its error")))
            case .counts:
                resume(Result { () throws -> BodyDecision in try bodyTaken(step) })
            }
        }
        return .later
    }

    private func noteSplicing(_ piped: PipedBytes) {
        guard !spliced else { return }
        spliced = true
        settings.logger.debug("splicing the body into the file", metadata: [
            LogKey.connection: "\(id)", "haul.offset": "\(position)", "haul.bytes": "\(piped.count)",
        ])
    }

    /// Never the case: no splice is asked for while a whole-file body still has bytes to drop.
    private func checkSpliced(_ part: Range<Int>) throws {
        guard part.lowerBound == 0 else {
            throw HaulError.unexpected("spliced body bytes \(part) would skip a part of the pipe")
        }
    }

    /// One read's bytes, taken from the window but not yet written (``takeBody(count:)``).
    struct BodyStep {
        /// The window once the bytes are taken.
        let window: BodyWindow
        /// The bytes' offset in the file.
        let at: Int64
        /// How many bytes were read.
        let count: Int
        /// The part of them that belongs in the file (at `at`); may be empty.
        let part: Range<Int>
        /// How many bytes past the window's end came.
        let overrun: Int64
    }

    enum BodyTake {
        /// Nothing to write: what to do next.
        case decided(BodyDecision)
        /// Write `part` of the bytes at `at`, then ``bodyTaken(_:)``.
        case write(BodyStep)
    }

    /// The first half of taking `count` body bytes: what of them goes where. Changes no state the write
    /// must come before (the window is only replaced by ``bodyTaken(_:)``).
    private func takeBody(count: Int) -> BodyTake {
        guard !host.isStopped else { return .decided(.stop) }
        bytesSinceRateCheck += count
        bytesReceived += Int64(count)
        guard var window, !draining else {
            drained += Int64(count)
            return .decided(drained > Self.maxDrainBytes ? .stop : .continue)
        }
        let at = window.position
        let step = window.take(count)
        // The segment's end may lie below the window's: the probe asked for everything, and others took
        // the rest of the file meanwhile.
        let writable = Int(min(Int64(step.writable), max(0, segmentEnd - at)))
        return .write(BodyStep(window: window, at: at, count: count, part: step.dropped..<(step.dropped + max(0, writable)),
                               overrun: Int64(step.overrun)))
    }

    /// Where the connection's segment ends now; `Int64.max` without one.
    private var segmentEnd: Int64 { host.segmentEnd(of: id) ?? Int64.max }

    /// Takes `count` body bytes: `write` is given the part of them that belongs in the file and the offset
    /// it goes to.
    private func receiveBody(count: Int, write: (Range<Int>, Int64) throws -> Void) throws -> BodyDecision {
        switch takeBody(count: count) {
        case .decided(let decision):
            return decision
        case .write(let step):
            window = step.window
            if !step.part.isEmpty { try write(step.part, step.at) }
            return try bodyTaken(step)
        }
    }

    /// The second half of taking body bytes, once `step`'s part is in the file: the accounting, and whether
    /// the segment or the body is done.
    private func bodyTaken(_ step: BodyStep) throws -> BodyDecision {
        let window = step.window
        self.window = window
        let at = step.at
        // The segment may have shrunk while a writer thread wrote (never in between for a write on the
        // loop): the bytes past its new end are in the file all the same, but count for the connection
        // that took them.
        let segmentEnd = segmentEnd
        let writable = Int(min(Int64(step.part.count), max(0, segmentEnd - at)))
        if writable > 0 {
            host.bodyWritten(Int64(writable), at: at, proven: !provisional, on: id)
            if settings.synchronizesToDisk { noteWritten(at: at, count: Int64(writable)) }
        }
        if step.overrun > 0, !window.isWholeBody, let end = window.end {
            throw HaulError.faultyResponse(url: assignment.map { "\($0.url)" } ?? "-",
                                           detail: "the body ran past the \(end - window.start) bytes of range \(window.start)-\(end - 1)")
        }
        guard at + Int64(writable) >= segmentEnd, !provisional else {
            // A whole-file body has nothing more for this request once its range is written.
            if window.isWholeBody, window.isFilled {
                startWriteBack()
                return .stop
            }
            return .continue
        }
        // The segment is done. The response may still carry bytes that now belong to another connection:
        // drain a small remainder to keep the connection, else close it.
        startWriteBack()
        // The rest of a whole-file body is the rest of the file: other requests fetch it.
        if window.isWholeBody { return .stop }
        let inFlight = (window.end ?? window.position) - window.position
        if inFlight <= 0 { return .continue }
        draining = true
        drained = Int64(step.count - writable)
        return inFlight <= Self.maxDrainBytes ? .continue : .stop
    }

    /// Extends the current run of written bytes (or starts a new one where a write does not continue it) and
    /// starts write-back of each full step.
    private func noteWritten(at offset: Int64, count: Int64) {
        if offset != writeFront {
            startWriteBack()
            writeBackFrom = offset
        }
        writeFront = offset + count
        if writeFront - writeBackFrom >= Self.writeBackStep { startWriteBack() }
    }

    /// Starts write-back of the run written so far (durable mode only; a no-op otherwise).
    private func startWriteBack() {
        if writeFront > writeBackFrom { sink.startWriteBack(from: writeBackFrom, to: writeFront) }
        writeBackFrom = writeFront
    }

    func pauseBeforeNextRead() -> Duration? {
        defer { bytesSinceRateCheck = 0 }
        let rateWait = settings.rateLimiter?.spend(bytesSinceRateCheck)
        let wait = host.durabilityHold().map { max($0, rateWait ?? .zero) } ?? rateWait
        readsPausedUntil = wait.map { MonotonicInstant.now().advanced(by: $0) }
        return wait
    }
}
