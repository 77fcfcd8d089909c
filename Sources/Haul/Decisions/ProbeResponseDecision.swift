import HaulHTTP

/// What the first response of a download (to `GET` with `Range: bytes=0-`) says about the whole download.
///
/// The probe decides the shape of everything after it, so it is where a lying server does most harm: an
/// error page saved as the file, a length that the body does not keep, an empty resource answered with an
/// error status. Pure: a function of the response's facts.
enum ProbeResponseDecision {
    /// Ranges work. The resource has `total` bytes and this response carries `served` (it starts at 0; a
    /// server may send less than the whole). `streamBody` is false when the body's framing does not promise
    /// exactly `served.count` bytes (chunked or close-delimited): such a body cannot be bounded as it
    /// arrives, so the connection is closed and the bytes are fetched in bounded ranges instead.
    case ranged(total: Int64, served: Range<Int64>, validators: Validators, streamBody: Bool)
    /// Ranges work, but the response carries no validator (no `ETag`, no `Last-Modified`): no later response
    /// could be told to be of the same file, so the download must be one response. With `carriesWholeFile`
    /// this one is it (it serves all `total` bytes under a `Content-Length`); otherwise the file is asked for
    /// again without `Range`, so that one response carries it all.
    case withoutValidators(total: Int64, carriesWholeFile: Bool)
    /// The server ignores ranges: this one response carries the whole file, of `length` bytes when the
    /// framing says so (nil: until the body ends).
    case whole(length: Int64?, validators: Validators)
    /// The resource is empty. Whatever body the response has is not content (a 416's error text).
    case empty(validators: Validators)
    /// Follow the `Location`.
    case redirect
    /// This response is broken but the resource may be fine: retry it.
    case faulty(HaulError)
    /// An error status, or a response that cannot be a download.
    case failed(HaulError)

    static func decide(_ response: ResponseFacts, url: String) -> ProbeResponseDecision {
        if response.isRedirect { return .redirect }
        switch response.status {
        case 206:
            return decidePartial(response, url: url)
        case 200:
            switch response.framing {
            case .contentLength(let length): return .whole(length: length, validators: response.validators)
            case .chunked, .untilClose: return .whole(length: nil, validators: response.validators)
            case .none: return .whole(length: 0, validators: response.validators)
            }
        case 204:
            return .empty(validators: response.validators)
        case 416:
            // `bytes=0-` is unsatisfiable only for an empty resource; the answer must say so (`*/0`).
            if case .unsatisfied(let length)? = response.contentRange.flatMap(ContentRange.init), length == 0 {
                return .empty(validators: response.validators)
            }
            return .failed(.httpStatus(status: 416, reason: response.reason, url: url))
        default:
            return .failed(.httpStatus(status: response.status, reason: response.reason, url: url))
        }
    }

    private static func decidePartial(_ response: ResponseFacts, url: String) -> ProbeResponseDecision {
        let text = response.contentRange ?? ""
        if isEmptyRangeForm(text) {
            // `bytes 0--1/0`: what webfs answers for an empty file (curl accepts it too).
            return response.declaredLength ?? 0 == 0
                ? .empty(validators: response.validators)
                : .faulty(.faultyResponse(url: url, detail: "Content-Range \"\(text)\" says the file is empty but Content-Length is \(response.declaredLength!)"))
        }
        guard let range = ContentRange(text), let bytes = range.range, bytes.lowerBound == 0,
              let total = range.completeLength else {
            return .faulty(.wrongContentRange(url: url, requested: "0-", received: text.isEmpty ? "(none)" : text))
        }
        let served = 0..<(bytes.upperBound + 1)
        if response.validators.isEmpty {
            switch response.framing {
            case .contentLength(let length) where length == served.count:
                return .withoutValidators(total: total, carriesWholeFile: served.upperBound == total)
            case .chunked, .untilClose:
                // Nothing holds this body to its range; the body of a plain GET is the file.
                return .withoutValidators(total: total, carriesWholeFile: false)
            case .contentLength, .none:
                break   // faulty, as with validators
            }
        }
        switch response.framing {
        case .contentLength(let length) where length == served.count:
            return .ranged(total: total, served: served, validators: response.validators, streamBody: true)
        case .contentLength(let length):
            return .faulty(.faultyResponse(url: url, detail: "Content-Length \(length) does not match Content-Range \"\(text)\" (\(served.count) bytes)"))
        case .none:
            return .faulty(.faultyResponse(url: url, detail: "206 with Content-Range \"\(text)\" but no body"))
        case .chunked, .untilClose:
            return .ranged(total: total, served: served, validators: response.validators, streamBody: false)
        }
    }

    /// `bytes 0--1/0`, with the tolerance for spacing and case that a parsed field would have.
    static func isEmptyRangeForm(_ text: String) -> Bool {
        let compact = text.lowercased().filter { $0 != " " && $0 != "\t" }
        return compact == "bytes0--1/0"
    }
}
