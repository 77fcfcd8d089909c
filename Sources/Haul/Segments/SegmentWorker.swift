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
        retryAfter = head.fields.first("retry-after").flatMap { RetryAfter($0) }
            .map { .seconds($0.delay(now: Int64(time(nil)))) }
        let facts = ResponseFacts(head)
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
        if !spliced {
            spliced = true
            settings.logger.debug("splicing the body into the file", metadata: [
                LogKey.connection: "\(id)", "haul.offset": "\(position)", "haul.bytes": "\(piped.count)",
            ])
        }
        return try receiveBody(count: piped.count) { part, at in
            // Never the case: no splice is asked for while a whole-file body still has bytes to drop.
            guard part.lowerBound == 0 else {
                throw HaulError.unexpected("spliced body bytes \(part) would skip a part of the pipe")
            }
            try sink.write(piped: piped, count: part.count, at: at)
        }
    }

    /// Takes `count` body bytes: `write` is given the part of them that belongs in the file and the offset
    /// it goes to.
    private func receiveBody(count: Int, write: (Range<Int>, Int64) throws -> Void) throws -> BodyDecision {
        guard !host.isStopped else { return .stop }
        bytesSinceRateCheck += count
        bytesReceived += Int64(count)
        guard var window, !draining else {
            drained += Int64(count)
            return drained > Self.maxDrainBytes ? .stop : .continue
        }
        let at = window.position
        let step = window.take(count)
        self.window = window
        // The segment's end may lie below the window's: the probe asked for everything, and others took
        // the rest of the file meanwhile.
        let segmentEnd = host.segmentEnd(of: id) ?? Int64.max
        let writable = Int(min(Int64(step.writable), max(0, segmentEnd - at)))
        if writable > 0 {
            // A whole-file body taken from for one range first drops what comes before the range.
            try write(step.dropped..<(step.dropped + writable), at)
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
        drained = Int64(count - writable)
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
