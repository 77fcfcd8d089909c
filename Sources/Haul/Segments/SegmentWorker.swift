import Glibc
import HaulHTTP
import HaulIO
import Logging

/// One connection's worth of a segmented download: it sends a request, hands the response head to the
/// download's decisions, writes the body with `pwrite` straight from the receive buffer — only the bytes
/// its ``BodyWindow`` allows — and reports the end of the exchange.
///
/// Loop-confined; the ``SegmentedDownload`` that owns it makes every decision that concerns more than
/// one connection.
final class SegmentWorker: ResponseHandler, @unchecked Sendable {
    // @unchecked Sendable: used only on the download's event-loop thread.

    enum Role {
        /// The first request (`Range: bytes=0-`), which also learns the length and validators.
        case probe
        /// A request for one segment.
        case ranged
        /// `Range: bytes=0-0` to a mirror, to compare its length before anything is written.
        case mirrorCheck
    }

    /// Largest remainder of a response read and dropped (to keep the connection) after a segment shrank.
    static let maxDrainBytes: Int64 = 256 * 1024
    /// In durable mode, write-back is started behind the write front in steps of this size (on a thread of
    /// its own, see ``OutputFile/writeBackInBackground(offset:length:)``), so that the disk writes while the
    /// network delivers and a checkpoint's `fdatasync` finds little left to write.
    static let writeBackStep: Int64 = 2 << 20

    let id: Int
    /// Strong on purpose: an exchange's completion can arrive after the download has ended and let go of its
    /// workers, and must find the download still there (it then ignores the report).
    let download: SegmentedDownload
    /// The mirror this worker's next request goes to (it moves when a mirror is dropped).
    var mirror: Int
    /// The mirror the current request went to: what its response says is about that mirror.
    private(set) var requestMirror = 0
    var role: Role = .ranged

    /// The planner segment this worker writes into.
    var segment: Int?
    /// Bytes requested in the current exchange: `requestFirst..<requestEnd` (nil end: to the end of file).
    var requestFirst: Int64 = 0
    var requestEnd: Int64?
    /// Where the current request went, and every URL its redirect chain has visited.
    private(set) var url: HTTPURL?
    private(set) var chain: [HTTPURL] = []
    /// The bytes of the current response that may be written; nil while the body is not file content
    /// (a redirect, an error, a response given up) and is only drained.
    var window: BodyWindow?
    /// Whether the window's bytes are recorded only once the body has ended exactly at the range's end.
    var provisional: Bool { window.map { !$0.bounded && $0.end != nil } ?? false }
    /// Bytes read and dropped from the current response.
    private var drained: Int64 = 0
    /// Whether some of the current response's body was spliced into the file (logged once per exchange).
    private var spliced = false
    /// The segment is done but its response goes on: its remaining bytes are drained.
    private var draining = false
    /// What the response handler decided that the exchange's completion must act on.
    var verdict: Verdict = .none
    var failuresInRow = 0
    /// The server's `Retry-After` on the current response, if any.
    var retryAfter: Duration?
    /// Whether the current request carried `If-Range`.
    private(set) var sentIfRange = false
    /// Whether the current request carried `Range` (a probe of a server without validators, or one whose
    /// range was refused, does not: ``ProbeForm/withoutRange``).
    private(set) var sentRange = true
    /// Why the download stopped the current exchange itself (too slow), reported instead of the close.
    var interruption: HaulError?
    var cancellation: ExchangeCancellation?
    var isBusy = false
    var timer: TimerID?

    /// Body bytes received, whatever became of them (written, drained, dropped), for the low-speed limit: a
    /// server that trickles a body nobody keeps holds the connection all the same.
    var bytesReceived: Int64 = 0
    /// Until when haul itself holds this connection's reads (the rate limit, the checkpoints): time the
    /// low-speed limit does not count against the server.
    private(set) var readsPausedUntil: MonotonicInstant?
    private var bytesSinceRateCheck = 0
    /// Bytes this worker wrote in one run, `writeBackFrom..<writeFront`, whose write-back is not started yet.
    /// The run goes on across requests that continue where the last one ended (a segment is fetched in
    /// several requests), so that it is not cut into pieces of less than a step.
    private var writeBackFrom: Int64 = 0
    private var writeFront: Int64 = 0

    enum Verdict {
        case none
        case redirect(ResponseFacts)
        /// The download dropped this exchange on purpose (it resumes from a journal instead).
        case retired
        /// The probe's answer cannot be used in the form it was asked (a refused range, a coded answer, a
        /// server without validators): once its exchange has ended, the probe goes again in the form the
        /// download now holds (``ProbeForm``).
        case retryProbe(because: HaulError)
    }

    init(id: Int, download: SegmentedDownload, mirror: Int) {
        self.id = id
        self.download = download
        self.mirror = mirror
    }

    /// File offset of the next body byte of the current response.
    var position: Int64 { window?.position ?? requestFirst }

    /// How the current request asked, when it is the probe.
    var probeForm: ProbeForm { !sentRange ? .withoutRange : requestEnd.map { .bounded(end: $0) } ?? .openEnded }

    /// Starts an exchange for `first..<end` (open-ended when `end` is nil) on a new redirect chain from the
    /// mirror's resolved URL, or — `hop` — continues the current chain at `hop`. `withoutRange` sends no
    /// `Range` at all (a probe's plain `GET`); a hop keeps what the chain's first request sent.
    func request(first: Int64, end: Int64?, role: Role, hop: HTTPURL? = nil, withoutRange: Bool = false) {
        if hop == nil {
            requestMirror = mirror
            sentRange = !withoutRange
        }
        let target = hop ?? download.mirrors[requestMirror].resolved
        if hop == nil { chain = [target] }
        url = target
        self.role = role
        requestFirst = first
        requestEnd = end
        window = nil
        draining = false
        drained = 0
        spliced = false
        verdict = .none
        retryAfter = nil
        interruption = nil
        isBusy = true
        let ifRange = role == .ranged ? download.mirrors[requestMirror].validators.ifRange : nil
        sentIfRange = ifRange != nil
        let range: RangeRequest? = sentRange ? end.map { .bytes(first...($0 - 1)) } ?? .from(first) : nil
        let head = download.mirrors.request(to: target, range: range, ifRange: ifRange)
        download.logger.debug("sending request", metadata: [
            LogKey.connection: "\(id)", "haul.method": "\(head.method.rawValue)", LogKey.url: "\(target)",
            LogKey.range: "\(range.map(\.headerValue) ?? "-")", LogKey.attempt: "\(failuresInRow + 1)",
            "haul.role": "\(role)", "haul.if_range": "\(ifRange != nil)",
        ])
        if let end, role != .mirrorCheck { download.bytesRequested += end - first }
        cancellation = download.client.executeOnLoop(head, handler: self) { [self] result in
            cancellation = nil
            isBusy = false
            download.exchangeEnded(self, result)
        }
    }

    /// Records `target` as the next hop of the current chain; false when it was visited already or the
    /// chain is longer than the policy allows.
    func extendChain(_ head: ResponseFacts, policy: RedirectPolicy) throws(RedirectError) -> HTTPURL {
        try policy.target(status: head.status, location: head.location, from: url!, visited: &chain)
    }

    /// Stops the current exchange (closing its connection) and any pending retry.
    func stop() {
        cancellation?.cancelOnLoop()
        cancellation = nil
        if let timer { download.loop.cancelTimer(timer) }
        timer = nil
    }

    // MARK: ResponseHandler

    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision {
        guard !download.isFinished else { return .abandon }
        retryAfter = head.fields.first("retry-after").flatMap { RetryAfter($0) }
            .map { .seconds($0.delay(now: Int64(time(nil)))) }
        let facts = ResponseFacts(head)
        download.logger.debug("received response head", metadata: [
            LogKey.connection: "\(id)", LogKey.status: "\(facts.status)", LogKey.url: "\(url.map { "\($0)" } ?? "-")",
            "haul.content_length": "\(facts.declaredLength.map { "\($0)" } ?? "-")",
            "haul.content_range": "\(facts.contentRange ?? "-")",
        ])
        if facts.isRedirect {
            verdict = .redirect(facts)
            return .receiveBody
        }
        switch role {
        case .probe: return try download.acceptProbe(head, facts, from: self)
        case .ranged: try download.acceptRanged(head, facts, from: self)
        case .mirrorCheck:
            try download.acceptMirrorCheck(facts, from: self)
            return .abandon
        }
        return .receiveBody
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        try receiveBody(count: bytes.count) { part, at in
            try download.write(UnsafeRawBufferPointer(rebasing: bytes[part]), at: at, proven: !provisional, from: self)
        }
    }

    func bodyBytesToSplice() -> Int64 {
        guard !download.isFinished else { return 0 }
        return BodyReceivePath.decide(
            enabled: download.options.splicesBodies, sink: download.sink, rateLimited: download.rateLimiter != nil,
            window: window, draining: draining, segmentEnd: segment.map { download.planner!.end(of: $0) }
        ).spliceBytes
    }

    /// The same steps as for bytes read (the window, the segment's end, the accounting, the rate and
    /// durability checks that follow), with the bytes moved from the connection's pipe into the file.
    func didReceiveBody(piped: PipedBytes) throws -> BodyDecision {
        if !spliced {
            spliced = true
            download.logger.debug("splicing the body into the file", metadata: [
                LogKey.connection: "\(id)", "haul.offset": "\(position)", "haul.bytes": "\(piped.count)",
            ])
        }
        return try receiveBody(count: piped.count) { part, at in
            // Never the case: no splice is asked for while a whole-file body still has bytes to drop.
            guard part.lowerBound == 0 else {
                throw HaulError.unexpected("spliced body bytes \(part) would skip a part of the pipe")
            }
            try download.write(piped: piped, count: part.count, at: at, from: self)
        }
    }

    /// Takes `count` body bytes: `write` is given the part of them that belongs in the file and the offset
    /// it goes to.
    private func receiveBody(count: Int, write: (Range<Int>, Int64) throws -> Void) throws -> BodyDecision {
        guard !download.isFinished else { return .stop }
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
        let segmentEnd = segment.map { download.planner!.end(of: $0) } ?? Int64.max
        let writable = Int(min(Int64(step.writable), max(0, segmentEnd - at)))
        if writable > 0 {
            // A whole-file body taken from for one range first drops what comes before the range.
            try write(step.dropped..<(step.dropped + writable), at)
            if !provisional { download.recordWritten(Int64(writable), in: segment) }
            if download.options.synchronizesToDisk { noteWritten(at: at, count: Int64(writable)) }
        }
        if step.overrun > 0, !window.isWholeBody {
            throw HaulError.faultyResponse(url: url!.description, detail: "the body ran past the \(window.end! - window.start) bytes of range \(window.start)-\(window.end! - 1)")
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
        segment = nil
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
        if writeFront > writeBackFrom { download.startWriteBack(from: writeBackFrom, to: writeFront) }
        writeBackFrom = writeFront
    }

    func pauseBeforeNextRead() -> Duration? {
        defer { bytesSinceRateCheck = 0 }
        let rateWait = download.rateLimiter?.spend(bytesSinceRateCheck)
        let wait = download.durabilityBackpressure().map { max($0, rateWait ?? .zero) } ?? rateWait
        readsPausedUntil = wait.map { MonotonicInstant.now().advanced(by: $0) }
        return wait
    }

    /// Whether haul holds this connection's reads right now (``readsPausedUntil``).
    var readsPaused: Bool {
        readsPausedUntil.map { MonotonicInstant.now() < $0 } ?? false
    }
}
