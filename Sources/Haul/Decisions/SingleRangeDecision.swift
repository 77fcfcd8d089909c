import HaulHTTP

/// Whether the answer to one ranged request (``HaulClient/download(_:range:)``, curl's `-r`) carries exactly
/// the bytes asked for, so that they can be written as the output: offset 0 of the output is the range's
/// first byte. Pure: a function of the response's facts.
///
/// Stricter than a download's ranged responses, because nothing else checks these bytes — no probe, no
/// journal, no second response: the `Content-Range` must name exactly the asked range (its end clipped to
/// the resource's end, as RFC 9110 §14.1.2 lets a server do), the body's framing must promise exactly that
/// many bytes (or none: a chunked or close-delimited body is then held to the count as it ends), and nothing
/// may say the body is not those bytes as they are (``PartialContentBody``: multipart, a content coding).
/// A `200` is the whole file, which is not what was asked for: it is refused, never cut.
enum SingleRangeDecision: Equatable {
    /// Write the body: it is bytes `served` of a resource of `total` bytes (nil: the server said `*`).
    case accept(served: ClosedRange<Int64>, total: Int64?)
    /// Follow the `Location`.
    case redirect
    /// Not the asked range, or an error status.
    case failed(HaulError)

    static func == (lhs: SingleRangeDecision, rhs: SingleRangeDecision) -> Bool {
        switch (lhs, rhs) {
        case (.accept(let a, let b), .accept(let c, let d)): a == c && b == d
        case (.redirect, .redirect): true
        case (.failed(let a), .failed(let b)): a.reason == b.reason
        default: false
        }
    }

    static func decide(_ response: ResponseFacts, asked: ByteRange, url: String) -> SingleRangeDecision {
        if response.isRedirect { return .redirect }
        switch response.status {
        case 206:
            break
        case 200:
            return .failed(.faultyResponse(url: url, detail: "answered the range \(asked) with the whole file (200): the server does not take ranges, and cutting one out of the whole would fetch everything before it"))
        default:
            return .failed(.httpStatus(status: response.status, reason: response.reason, url: url))
        }
        if let contradiction = response.contradiction { return .failed(.faultyResponse(url: url, detail: contradiction)) }
        if let fault = PartialContentBody.judge(response, asked: asked.description, url: url).fault { return .failed(fault) }
        let text = response.contentRange ?? ""
        let wrong = HaulError.wrongContentRange(url: url, requested: asked.description, received: text.isEmpty ? "(none)" : text)
        guard let range = ContentRange(text), let served = range.range else { return .failed(wrong) }
        let total = range.completeLength
        let expected: ClosedRange<Int64>
        if let total {
            guard let satisfied = asked.satisfied(total: total) else { return .failed(wrong) }
            expected = satisfied
        } else if case .closed(let first, let last) = asked.form {
            // Without the resource's length only the asked range itself can be checked.
            expected = first...last
        } else {
            // `A-` and `-N` end at the resource's end, which `*` does not tell.
            return .failed(wrong)
        }
        guard served == expected else { return .failed(wrong) }
        let count = served.upperBound - served.lowerBound + 1
        switch response.framing {
        case .contentLength(let length) where length == count:
            return .accept(served: served, total: total)
        case .contentLength(let length):
            return .failed(.faultyResponse(url: url, detail: "Content-Length \(length) does not match Content-Range \"\(text)\" (\(count) bytes)"))
        case .chunked, .untilClose:
            return .accept(served: served, total: total)
        case .none:
            return .failed(.faultyResponse(url: url, detail: "206 with Content-Range \"\(text)\" but no body"))
        }
    }
}
