import HaulHTTP

/// Whether a response to a ranged request (`Range: bytes=first-last`, usually with `If-Range`) may be
/// written as those bytes of the file.
///
/// The distinction that matters is between a *faulty response* — wrong offsets, a body longer or shorter
/// than the range, a missing `Content-Range` — which is retried because the resource itself is fine, and a
/// *changed resource* — another length or validator — which must never be mixed with what was already
/// written. Pure: a function of the response's facts and what is known of the resource.
enum RangedResponseDecision {
    /// Write the body as bytes `requested`. `bodyIsBounded` is false when its framing (chunked,
    /// close-delimited) does not promise the length: the bytes then count only once the body has ended at
    /// exactly the range's end.
    case accept(validators: Validators, bodyIsBounded: Bool)
    case redirect
    /// This response is broken; the same range may be asked for again.
    case faulty(HaulError)
    /// The resource is no longer the one being downloaded.
    case changed(HaulError)
    /// A mirror that has not yet been checked serves something else.
    case mirrorDisagrees(HaulError)
    /// An error status (retried or not as ``HaulError/isTransient`` says).
    case failed(HaulError)

    /// What is known of the resource on the mirror the request went to.
    struct Known: Equatable {
        var total: Int64
        /// The mirror's validators (each mirror has its own).
        var validators: Validators
        /// Whether the mirror's length was checked: until then a disagreement is the mirror's, not a change.
        var verified: Bool
        /// Whether the request carried `If-Range`.
        var sentIfRange: Bool
        /// When the partial download being resumed was started (from its journal), for the message.
        var partialSince: HTTPDate? = nil
    }

    static func decide(_ response: ResponseFacts, requested: Range<Int64>, known: Known, url: String) -> RangedResponseDecision {
        if response.isRedirect { return .redirect }
        let asked = "\(requested.lowerBound)-\(requested.upperBound - 1)"
        let text = response.contentRange ?? ""
        switch response.status {
        case 206:
            guard let range = ContentRange(text), let bytes = range.range else {
                return .faulty(.wrongContentRange(url: url, requested: asked, received: text.isEmpty ? "(none)" : text))
            }
            if let length = range.completeLength, length != known.total {
                return differentResource(length: length, known: known, url: url)
            }
            if known.verified, known.validators.contradicts(response.validators) {
                return .changed(.changedOnServer(url: url, detail: "ETag changed from \(known.validators.entityTag!) to \(response.entityTag!)"))
            }
            guard range.completeLength != nil, bytes.lowerBound == requested.lowerBound, bytes.upperBound + 1 == requested.upperBound else {
                return .faulty(.wrongContentRange(url: url, requested: asked, received: text))
            }
            switch response.framing {
            case .contentLength(let length) where length == Int64(requested.count):
                return .accept(validators: response.validators, bodyIsBounded: true)
            case .contentLength(let length):
                return .faulty(.faultyResponse(url: url, detail: "Content-Length \(length) for the \(requested.count) bytes of range \(asked)"))
            case .chunked, .untilClose:
                return .accept(validators: response.validators, bodyIsBounded: false)
            case .none:
                return .faulty(.faultyResponse(url: url, detail: "206 for range \(asked) without a body"))
            }
        case 200:
            if !known.verified {
                return .mirrorDisagrees(.mirrorMismatch(url: url, detail: "ignores Range requests"))
            }
            if known.sentIfRange {
                // If-Range failed: the server's current version is not the one the written bytes are from.
                let detail = known.partialSince.map { "it no longer matches the partial download started \($0) (a request for bytes \(asked) with If-Range got the whole file)" }
                    ?? "a request for bytes \(asked) with If-Range got the whole file (200): the file is no longer the one being downloaded"
                return .changed(.changedOnServer(url: url, detail: detail))
            }
            return .faulty(.faultyResponse(url: url, detail: "answered the request for bytes \(asked) with the whole file (200)"))
        case 416:
            if case .unsatisfied(let length)? = ContentRange(text), length != known.total {
                return differentResource(length: length, known: known, url: url)
            }
            return .faulty(.faultyResponse(url: url, detail: "range \(asked) of a \(known.total)-byte file called unsatisfiable (416)"))
        default:
            return .failed(.httpStatus(status: response.status, reason: response.reason, url: url))
        }
    }

    private static func differentResource(length: Int64, known: Known, url: String) -> RangedResponseDecision {
        known.verified
            ? .changed(.changedOnServer(url: url, detail: "length is now \(length), was \(known.total)"))
            : .mirrorDisagrees(.mirrorMismatch(url: url, detail: "length \(length), expected \(known.total)"))
    }
}
