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
        /// A 206 wrapped in `multipart/byteranges` framing (cut to the range's length, so only the media type
        /// tells), which a server must not send for one range.
        case multipartByteranges
        /// `Content-Encoding: gzip` over bytes that are not the file's, at the length of the range.
        case contentEncoded
        /// Another version of the file for this response (every byte and every validator changed, a weak ETag
        /// kept weak), with `If-Range` honoured: a file replaced on the server between two requests.
        case otherVersion
        /// Another version of the file, served as `206` whatever `If-Range` says.
        case otherVersionIgnoringIfRange
        /// `200` with the whole file and the same validators: a backend that ignores `Range`.
        case wholeFileForRange
        /// `503 Service Unavailable` with `Retry-After: 999999999` (about 32 years).
        case longRetryAfter
        /// The first 4 KiB of the body 64 bytes every 20 ms (about 1.3 s, 3 KiB/s), then the rest at full speed.
        case trickle
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
        // Without `Range` the server's framing is all there is to say how long the file is: bytes "past the
        // end" of such a body are the file, so an overrun there is no fault a client could see.
        if request.range == nil, [.overrunContentLength, .overrunChunked, .overrunCloseDelimited].contains(fault) { return .normal }
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
        case .multipartByteranges: .multipartByteranges()
        case .contentEncoded: .contentEncoded("gzip")
        case .otherVersion: .otherVersion
        case .otherVersionIgnoringIfRange: .otherVersion.with { $0.ignoresIfRange = true }
        case .wholeFileForRange: .ignoreRange
        case .longRetryAfter: .status(503, retryAfter: "999999999")
        case .trickle: .trickle(bytes: 64, everyMilliseconds: 20, forBytes: 4096)
        }
        behavior.chaosFault = fault
        return behavior
    }
}
