import HaulHTTP

/// Whether a response to a ranged request (`Range: bytes=first-last`, usually with `If-Range`) may be
/// written as those bytes of the file.
///
/// The distinction that matters is between a *faulty response* — wrong offsets, a body longer or shorter
/// than the range, a missing `Content-Range`, a `200` that carries the very validators of the file being
/// downloaded — which is retried because the resource itself is fine, and a *changed resource* — another
/// length, or validators that differ from the download's identity in any way (another value, a weak tag
/// for a strong one, one dropped or gained; ``Validators/changes(in:)``) — which must never be mixed with
/// what was already written. Pure: a function of the response's facts and what is known of the resource.
enum RangedResponseDecision {
    /// Write the body as bytes `requested`. `bodyIsBounded` is false when its framing (chunked,
    /// close-delimited) does not promise the length: the bytes then count only once the body has ended at
    /// exactly the range's end.
    case accept(validators: Validators, bodyIsBounded: Bool)
    /// The server ignores `Range` on this request again, but the whole file it sent instead carries the
    /// download's strong ETag and length: the range's bytes are taken out of it, body bytes before
    /// `requested` skipped (``BodyWindow/skipped``) and the rest left unread.
    case acceptFromWholeBody
    case redirect
    /// This response is broken; the same range may be asked for again.
    case faulty(HaulError)
    /// The resource is no longer the one being downloaded.
    case changed(HaulError)
    /// A mirror that has not yet been checked serves something else.
    case mirrorDisagrees(HaulError)
    /// A mirror that has not yet been checked shows no validator: nothing could tell whether two of its
    /// responses are of one file, so it cannot share the work (the error says so, for a retry's log).
    case mirrorWithoutValidators(HaulError)
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
        /// Failures of the connection in a row before this response: a `200` that proves the same file is
        /// retried first (another backend may honour `Range`), and only then taken from.
        var failuresInRow = 0
    }

    static func decide(_ response: ResponseFacts, requested: Range<Int64>, known: Known, url: String) -> RangedResponseDecision {
        if response.isRedirect { return .redirect }
        let asked = "\(requested.lowerBound)-\(requested.upperBound - 1)"
        let text = response.contentRange ?? ""
        if let contradiction = response.contradiction, response.mayBeContent {
            return .faulty(.faultyResponse(url: url, detail: "\(contradiction) (the answer to bytes \(asked))"))
        }
        switch response.status {
        case 206:
            // MIME framing or a content coding: whatever the Content-Range says, the body is not those bytes.
            if let fault = PartialContentBody.judge(response, asked: asked, url: url).fault { return .faulty(fault) }
            guard let range = ContentRange(text), let bytes = range.range else {
                return .faulty(.wrongContentRange(url: url, requested: asked, received: text.isEmpty ? "(none)" : text))
            }
            if let length = range.completeLength, length != known.total {
                return differentResource(length: length, known: known, url: url)
            }
            if known.verified, let change = known.validators.changes(in: response.validators) {
                return changed("\(change) (the answer to bytes \(asked))", known: known, url: url)
            }
            if !known.verified, response.validators.isEmpty {
                return .mirrorWithoutValidators(.faultyResponse(url: url, detail: "sends no ETag or Last-Modified: nothing could show that its responses are of one file"))
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
            return decideWholeBody(response, asked: asked, known: known, url: url)
        case 416:
            if case .unsatisfied(let length)? = ContentRange(text), length != known.total {
                return differentResource(length: length, known: known, url: url)
            }
            return .faulty(.faultyResponse(url: url, detail: "range \(asked) of a \(known.total)-byte file called unsatisfiable (416)"))
        default:
            return .failed(.httpStatus(status: response.status, reason: response.reason, url: url))
        }
    }

    /// A `200` to a ranged request of a verified mirror. Only the validators it carries can tell a changed
    /// file (If-Range failed, or the server changed and ignores `Range`) from a server that ignores `Range`
    /// for this request (a load-balanced backend, say): equal validators with a strong ETag and the same
    /// length prove the file unchanged, so the response is faulty, never a change.
    private static func decideWholeBody(_ response: ResponseFacts, asked: String, known: Known, url: String) -> RangedResponseDecision {
        let answer = "a request for bytes \(asked)\(known.sentIfRange ? " with If-Range" : "") got the whole file (200)"
        if let length = response.declaredLength, length != known.total {
            return .changed(.changedOnServer(url: url, detail: "\(answer) of \(length) bytes, was \(known.total)"))
        }
        if let change = known.validators.changes(in: response.validators) {
            return changed("\(answer) and \(change)", known: known, url: url)
        }
        guard known.validators.hasStrongEntityTag else {
            // Equal weak validators disprove no change and prove none. The date an If-Range carried was
            // judged not to match although it is the one sent back: servers do that when the file was
            // modified within the second (the date is then weak), so its bytes are not taken from this body.
            return .faulty(.faultyResponse(url: url, detail: "\(answer) with the same validators; only a strong ETag could prove it the same file"))
        }
        guard known.failuresInRow > 0 else {
            return .faulty(.faultyResponse(url: url, detail: "\(answer) with the same ETag \(known.validators.entityTag!): the server ignored Range"))
        }
        // Its length is the file's (checked above): the range's bytes lie at known offsets of the body. A
        // body without a length could end anywhere, and is only retried.
        guard case .contentLength = response.framing else {
            return .faulty(.faultyResponse(url: url, detail: "\(answer) with the same ETag \(known.validators.entityTag!) but no Content-Length"))
        }
        // A coded or multipart body is not the file's bytes at their offsets, whatever its length.
        if let fault = PartialContentBody.judge(response, asked: asked, url: url).fault { return .faulty(fault) }
        return .acceptFromWholeBody
    }

    /// A change, said against the partial download when one is being resumed.
    private static func changed(_ detail: String, known: Known, url: String) -> RangedResponseDecision {
        .changed(.changedOnServer(url: url, detail: known.partialSince.map { "it no longer matches the partial download started \($0): \(detail)" } ?? detail))
    }

    private static func differentResource(length: Int64, known: Known, url: String) -> RangedResponseDecision {
        known.verified
            ? .changed(.changedOnServer(url: url, detail: "length is now \(length), was \(known.total)"))
            : .mirrorDisagrees(.mirrorMismatch(url: url, detail: "length \(length), expected \(known.total)"))
    }
}
