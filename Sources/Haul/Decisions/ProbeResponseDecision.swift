import HaulHTTP

/// How the probe asks for the file: which `Range` it sends.
///
/// Servers refuse some forms: webfs answers `400` to `bytes=0-4194303` whenever the file is shorter than
/// 4 MiB, others `416` or `501`. Each refusal moves one form down, never back: bounded, open-ended, none; a
/// content-coded `206` moves straight to none (no range is taken over a coding, ``PartialContentBody``).
enum ProbeForm: Equatable, Sendable {
    /// `Range: bytes=0-(end-1)`: one request's worth, when other connections will share the file.
    case bounded(end: Int64)
    /// `Range: bytes=0-`.
    case openEnded
    /// No `Range` at all: a plain `GET`, whose `200` is the single-connection whole-file path.
    case withoutRange

    /// The form to ask in when a server refuses this one; nil when none is left.
    var fallback: ProbeForm? {
        switch self {
        case .bounded: .openEnded
        case .openEnded: .withoutRange
        case .withoutRange: nil
        }
    }

    /// Where the range ends (exclusive); nil when it runs to the end of the file or there is none.
    var end: Int64? {
        if case .bounded(let end) = self { return end }
        return nil
    }

    var sendsRange: Bool { self != .withoutRange }

    /// The range asked for, as in messages: `0-4194303`, `0-`, or `(none)`.
    var rangeText: String {
        switch self {
        case .bounded(let end): "0-\(end - 1)"
        case .openEnded: "0-"
        case .withoutRange: "(none)"
        }
    }
}

/// What the first response of a download (to `GET` with `Range: bytes=0-`, bounded or not, or without
/// `Range` once the server refused both: ``ProbeForm``) says about the whole download.
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
    /// Ask again, at once, in `form`: the server refused the probe's form (`refusal`: its status, from its
    /// URL), or answered it in a content coding no range can be taken over. Either is an answer about how
    /// the server takes ranges, not a fault, so the same request again would get the same answer.
    case retryProbe(ProbeForm, because: HaulError)
    /// This response is broken but the resource may be fine: retry it.
    case faulty(HaulError)
    /// An error status, or a response that cannot be a download.
    case failed(HaulError)

    /// `form`: how the probe asked. `expectedSize`: the length the download was given
    /// (``DownloadRequest/expectedSize``, a Metalink's `<size>`); an answer that shows another length of the
    /// file is ``HaulError/Reason/sizeMismatch(url:expected:served:)``, whatever else it is. A whole file sent
    /// without a length can only be held to it when its body ends.
    static func decide(_ response: ResponseFacts, url: @autoclosure () -> String, form: ProbeForm = .openEnded, expectedSize: Int64?) -> ProbeResponseDecision {
        let decision = decide(response, url: url(), form: form)
        guard let expectedSize, let served = decision.fileLength, served != expectedSize else { return decision }
        return .failed(.sizeMismatch(url: url(), expected: expectedSize, served: served))
    }

    /// The length of the whole file this decision learned; nil when it learned none (yet).
    var fileLength: Int64? {
        switch self {
        case .ranged(let total, _, _, _), .withoutValidators(let total, _): total
        case .whole(let length, _): length
        case .empty: 0
        case .redirect, .retryProbe, .faulty, .failed: nil
        }
    }

    /// `form`: how the probe asked.
    ///
    /// `url` is for the errors only, and made only for one (every download's probe is decided here).
    static func decide(_ response: ResponseFacts, url: @autoclosure () -> String, form: ProbeForm = .openEnded) -> ProbeResponseDecision {
        if response.isRedirect { return .redirect }
        // A head that contradicts itself (a field that must be one sent twice, a 204 with a body) says nothing
        // that can be taken as the file: retried like any broken response.
        if let contradiction = response.contradiction, response.mayBeContent {
            return .faulty(.faultyResponse(url: url(), detail: contradiction))
        }
        switch response.status {
        case 206:
            return decidePartial(response, url: url(), form: form)
        case 200:
            // Only a 206 may be multipart/byteranges (RFC 9110 §14.6): a 200 saying so carries MIME framing
            // around whatever it carries, not a representation anybody serves as a file.
            if response.mediaType?.isMultipartByteranges == true {
                return .faulty(.faultyResponse(url: url(), detail: "a 200 with Content-Type \"\(response.contentType ?? "")\": multipart/byteranges frames parts of a 206, never a whole file"))
            }
            switch response.framing {
            case .contentLength(let length): return .whole(length: length, validators: response.validators)
            case .chunked, .untilClose: return .whole(length: nil, validators: response.validators)
            case .none: return .whole(length: 0, validators: response.validators)
            }
        case 204:
            return .empty(validators: response.validators)
        case 416:
            // A range from 0 is unsatisfiable only for an empty resource; the answer must say so (`*/0`).
            if form.sendsRange, case .unsatisfied(let length)? = response.contentRange.flatMap(ContentRange.init), length == 0 {
                return .empty(validators: response.validators)
            }
            return refused(response, url: url(), form: form)
        case 400, 501:
            // webfs: 400 to a bounded range past the end of the file; others 501 to any Range they do not do.
            return refused(response, url: url(), form: form)
        default:
            return .failed(.httpStatus(status: response.status, reason: response.reason, url: url()))
        }
    }

    /// A status that refuses the probe's form (400, 416 other than `*/0`, 501): the next form, or the error
    /// once no form is left.
    private static func refused(_ response: ResponseFacts, url: @autoclosure () -> String, form: ProbeForm) -> ProbeResponseDecision {
        let error = HaulError.httpStatus(status: response.status, reason: response.reason, url: url())
        guard let next = form.fallback else { return .failed(error) }
        return .retryProbe(next, because: error)
    }

    private static func decidePartial(_ response: ResponseFacts, url: @autoclosure () -> String, form: ProbeForm) -> ProbeResponseDecision {
        let text = response.contentRange ?? ""
        if isEmptyRangeForm(text) {
            // `bytes 0--1/0`: what webfs answers for an empty file (curl accepts it too).
            return response.declaredLength ?? 0 == 0
                ? .empty(validators: response.validators)
                : .faulty(.faultyResponse(url: url(), detail: "Content-Range \"\(text)\" says the file is empty but Content-Length is \(response.declaredLength!)"))
        }
        switch PartialContentBody.judge(response, asked: form.rangeText, url: url()) {
        case .bytes:
            break
        case .multipart(let error):
            return .faulty(error)
        case .coded(let error):
            // No range is taken over a coding: the whole file in one plain GET instead.
            return form.sendsRange ? .retryProbe(.withoutRange, because: error) : .faulty(error)
        }
        guard let range = ContentRange(text), let bytes = range.range, bytes.lowerBound == 0,
              let total = range.completeLength else {
            return .faulty(.wrongContentRange(url: url(), requested: form.rangeText, received: text.isEmpty ? "(none)" : text))
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
            return .faulty(.faultyResponse(url: url(), detail: "Content-Length \(length) does not match Content-Range \"\(text)\" (\(served.count) bytes)"))
        case .none:
            return .faulty(.faultyResponse(url: url(), detail: "206 with Content-Range \"\(text)\" but no body"))
        case .chunked, .untilClose:
            return .ranged(total: total, served: served, validators: response.validators, streamBody: false)
        }
    }

    /// `bytes 0--1/0`, with the tolerance for spacing and case that a parsed field would have.
    static func isEmptyRangeForm(_ text: String) -> Bool {
        // By bytes: asked of every 206 probe, and lowercasing and filtering Characters cost more than the rest
        // of the decision. Only ASCII letters are folded, as before for an ASCII form. The bytes where they
        // lie: iterating `utf8` cost about 500 instructions for a short field.
        let expected: StaticString = "bytes0--1/0"
        var text = text
        return text.withUTF8 { bytes in
            expected.withUTF8Buffer { expected in
                var matched = 0
                for byte in bytes where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") {
                    guard matched < expected.count, asciiLowercase(byte) == expected[matched] else { return false }
                    matched += 1
                }
                return matched == expected.count
            }
        }
    }
}
