extension MisbehavingServer {
    /// One fault ``Script/chaos(seed:faultRate:faults:)`` can inject into a response. Each ends by itself
    /// (nothing waits for ``MisbehavingServer/stop()``), so a client that times out, retries or rejects the
    /// response recovers, and one that does nothing of the kind still finishes or fails in seconds.
    public enum ChaosFault: String, Sendable, Hashable, CaseIterable {
        /// Close the connection part-way through the body.
        case dropMidBody
        /// Pause 2 s part-way through the body, then carry on (a 1 s stall timeout fires first).
        case stallMidBody
        /// `503 Service Unavailable` with `Retry-After: 0`.
        case serviceUnavailable
        /// A correct 206 head whose `Content-Length` covers up to 64 KiB more than the range, and such a body.
        case overrunContentLength
        /// A correct 206 head, chunked framing carrying up to 64 KiB more than the range.
        case overrunChunked
        /// A correct 206 head, a close-delimited body up to 64 KiB longer than the range.
        case overrunCloseDelimited
        /// The requested bytes under a `Content-Range` moved 1 to 4096 bytes on (same total).
        case shiftedContentRange
        /// 206 without `Content-Range`.
        case missingContentRange
        /// Chunked framing cut off part-way, before the last chunk.
        case truncatedChunked
        /// Bytes that are not HTTP, then close.
        case garbageHead
        /// Close without sending anything.
        case closeWithoutResponse
        /// The head one byte every 3 ms (about a second for the whole head), then the body normally.
        case headDrip
        /// Ten `100 Continue` 20 ms apart, then the real response.
        case interimFlood
    }

    /// The generator of the chaos script (now shared by every seeded test, see ``HaulTestSupport/SplitMix64``).
    public typealias SplitMix64 = HaulTestSupport.SplitMix64
}

extension MisbehavingServer.Script {
    /// For each request a deterministic choice, a function of `seed` and the request's index only: a
    /// correct response (with probability `1 - faultRate`) or one of `faults`, with the fault's parameters
    /// (where to cut, how far to shift, how much to overrun) drawn from the same generator. The same seed
    /// gives the same fault for the same request index in every run; which range a request index carries
    /// depends on the client's timing. Each chosen fault is recorded in
    /// ``MisbehavingServer/Exchange/chaosFault``.
    public static func chaos(seed: UInt64, faultRate: Double = 0.3,
                             faults: [MisbehavingServer.ChaosFault] = MisbehavingServer.ChaosFault.allCases) -> Self {
        Self { request in MisbehavingServer.Behavior.chaos(seed: seed, requestIndex: request.index, request: request,
                                                            faultRate: faultRate, faults: faults) }
    }
}

extension MisbehavingServer.Behavior {
    /// The behavior ``MisbehavingServer/Script/chaos(seed:faultRate:faults:)`` chooses for request `requestIndex`.
    static func chaos(seed: UInt64, requestIndex: Int, request: MisbehavingServer.ReceivedRequest, faultRate: Double,
                      faults: [MisbehavingServer.ChaosFault]) -> Self {
        var random = MisbehavingServer.SplitMix64(seed: seed ^ (UInt64(requestIndex) &* 0xD1B5_4A32_D192_ED03))
        let draw = Double(random.next() >> 11) / Double(1 << 53)
        guard !faults.isEmpty, draw < faultRate else { return .normal }
        let fault = faults[Int(random.next() % UInt64(faults.count))]
        // Somewhere inside the body: within the requested range when it is bounded, else the first 256 KiB.
        let span: UInt64 = switch request.range {
        case .bounded(let first, let last)?: UInt64(max(1, last - first + 1))
        default: 256 * 1024
        }
        let inside = Int(random.next() % span)
        let extra = 1 + Int(random.next() % (64 * 1024))
        var behavior: Self = switch fault {
        case .dropMidBody: .closeMidBody(afterBytes: inside)
        case .stallMidBody: .stallMidBody(afterBytes: inside, .seconds(2))
        case .serviceUnavailable: .status(503, retryAfter: "0")
        case .overrunContentLength: .bodyOverrun(extra: extra, framing: .contentLength)
        case .overrunChunked: .bodyOverrun(extra: extra, framing: .chunked)
        case .overrunCloseDelimited: .bodyOverrun(extra: extra, framing: .closeDelimited)
        case .shiftedContentRange: .wrongContentRange(shiftedBy: 1 + Int(random.next() % 4096))
        case .missingContentRange: .omitContentRange
        case .truncatedChunked: .truncatedChunked(afterBytes: inside)
        case .garbageHead: .garbageHead
        case .closeWithoutResponse: .closeWithoutResponse
        case .headDrip: .dripHead(bytes: 1, everyMilliseconds: 3)
        case .interimFlood: .interimFlood(everyMilliseconds: 20, count: 10)
        }
        behavior.chaosFault = fault
        return behavior
    }
}
