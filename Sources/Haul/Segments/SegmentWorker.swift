import Glibc

/// One connection's worth of a segmented download: it requests a range, checks the response, writes the
/// body with `pwrite` at the right offset straight from the receive buffer, and asks for more work.
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
    }

    /// Largest remainder of a response read and dropped (to keep the connection) after a segment shrank.
    static let maxDrainBytes: Int64 = 256 * 1024
    /// Write-back is started behind the write front in steps of this size.
    static let writeBackStep: Int64 = 8 << 20

    let id: Int
    /// Strong on purpose: an exchange's completion can arrive after the download has ended and let go of its
    /// workers, and must find the download still there (it then ignores the report).
    let download: SegmentedDownload
    var mirror: Int
    var role: Role = .ranged

    /// The planner segment this worker writes into.
    var segment: Int?
    /// Bytes requested in the current exchange: `requestFirst..<requestEnd` (nil end: to the end of file).
    var requestFirst: Int64 = 0
    var requestEnd: Int64?
    /// File offset of the next body byte of the current response.
    var position: Int64 = 0
    /// Past the (shrunk) segment end: remaining bytes of this response are read and dropped.
    var draining = false
    var drained: Int64 = 0
    /// What the response handler decided that the exchange's completion must act on.
    var verdict: Verdict = .none
    var failuresInRow = 0
    /// The server's `Retry-After` on the current response, if any.
    var retryAfter: Duration?
    var cancellation: ExchangeCancellation?
    var isBusy = false
    var timer: TimerID?

    /// Rate bookkeeping for the slow-connection check: bytes written, sampled once a second.
    var bytesWritten: Int64 = 0
    var samples: [Int64] = []
    var slowSince: MonotonicInstant?
    private var bytesSinceRateCheck = 0
    private var writeBackFrom: Int64 = 0

    enum Verdict {
        case none
        case redirect(ResponseHead)
        /// The download dropped this exchange on purpose (it resumes from a journal instead).
        case retired
    }

    init(id: Int, download: SegmentedDownload, mirror: Int) {
        self.id = id
        self.download = download
        self.mirror = mirror
    }

    /// Starts an exchange for `first..<end` (open-ended when `end` is nil).
    func request(first: Int64, end: Int64?, role: Role) {
        self.role = role
        requestFirst = first
        requestEnd = end
        position = first
        writeBackFrom = first
        draining = false
        drained = 0
        verdict = .none
        retryAfter = nil
        isBusy = true
        let url = download.mirrors[mirror].url
        var head = download.requestTemplate
        head.url = url
        head.range = end.map { .bytes(first...($0 - 1)) } ?? .from(first)
        head.ifRange = role == .probe ? nil : download.mirrors[mirror].validator
        if let end { download.bytesRequested += end - first }
        cancellation = download.client.executeOnLoop(head, handler: self) { [self] result in
            cancellation = nil
            isBusy = false
            download.exchangeEnded(self, result)
        }
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
        if RedirectPolicy.redirectStatuses.contains(head.status) {
            verdict = .redirect(head)
            return .receiveBody
        }
        switch role {
        case .probe: return try download.acceptProbe(head, from: self)
        case .ranged: try download.checkRangedResponse(head, from: self)
        }
        return .receiveBody
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        guard !download.isFinished else { return .stop }
        bytesSinceRateCheck += bytes.count
        if case .redirect = verdict {
            drained += Int64(bytes.count)
            return drained > Self.maxDrainBytes ? .stop : .continue
        }
        if draining {
            drained += Int64(bytes.count)
            return drained > Self.maxDrainBytes ? .stop : .continue
        }
        let end = segment.map { download.planner!.end(of: $0) } ?? Int64.max
        let writable = Int(min(Int64(bytes.count), end - position))
        if writable > 0 {
            try download.write(UnsafeRawBufferPointer(rebasing: bytes[0..<writable]), at: position)
            position += Int64(writable)
            bytesWritten += Int64(writable)
            download.recordWritten(Int64(writable), in: segment)
            if download.options.synchronizesToDisk && position - writeBackFrom >= Self.writeBackStep {
                download.startWriteBack(from: writeBackFrom, to: position)
                writeBackFrom = position
            }
        }
        guard position >= end else { return .continue }
        // The segment is done. Its end may have moved below what this response carries (another
        // connection took the rest): drain a small remainder to keep the connection, else close it.
        segment = nil
        let responseEnd = requestEnd ?? download.total ?? position
        let inFlight = responseEnd - position - Int64(bytes.count - writable)
        if inFlight <= 0 { return .continue }
        if inFlight <= Self.maxDrainBytes {
            draining = true
            drained = Int64(bytes.count - writable)
            return .continue
        }
        return .stop
    }

    func pauseBeforeNextRead() -> Duration? {
        defer { bytesSinceRateCheck = 0 }
        let rateWait = download.rateLimiter?.spend(bytesSinceRateCheck)
        if let durabilityWait = download.durabilityBackpressure() { return max(durabilityWait, rateWait ?? .zero) }
        return rateWait
    }
}
