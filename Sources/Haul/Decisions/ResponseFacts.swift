import HaulHTTP

/// The parts of a response head that the engine's decisions read, taken out of the head once, so that every
/// decision about a response is a pure function of plain values and its tests need no parser or socket.
struct ResponseFacts: Sendable, Equatable {
    var status: Int
    var reason: String
    /// The raw `Content-Range` value, if any.
    var contentRange: String?
    var entityTag: EntityTag?
    var lastModified: HTTPDate?
    var framing: BodyFraming
    var location: String?
    /// The `Content-Type` value as sent, for messages: of the field that declares `multipart/byteranges`
    /// when one of several does, else of the first.
    var contentType: String?
    /// What ``contentType`` declares; nil when it is absent or not `type/subtype`.
    var mediaType: MediaType?
    /// The content codings the body carries (`Content-Encoding`, every field), lowercased, `identity` left
    /// out: empty when the body is the representation's own bytes. A value that is not a list of tokens is
    /// kept whole, as one coding nobody knows, so that it never passes for identity.
    var contentCodings: [String]
    /// The first `Retry-After` value, when it parses (a `503`'s or `429`'s wait before the next attempt).
    var retryAfter: RetryAfter?
    /// What makes the head contradict itself, for a message; nil when nothing does. A field that names one
    /// thing sent twice with different values — `Content-Range`, `ETag`, `Last-Modified`: nothing says which
    /// of the two the body is, so no decision may pick one (the first was taken before); a `204` that declares
    /// a body (`Content-Length` other than 0, `Transfer-Encoding`; RFC 9110 §8.6 forbids both): the parser
    /// frames every 204 as bodiless, so such a response passed for an empty file; a `200` whose
    /// `Content-Range` names a part (``partUnderWholeStatus(_:framing:)``). Decisions that would take the
    /// response as content treat it as faulty.
    var contradiction: String?

    /// `contentTypes` and `contentEncodings` are field values as sent (a response may carry several fields
    /// of each), parsed here once.
    init(status: Int, reason: String = "", contentRange: String? = nil, entityTag: EntityTag? = nil,
         lastModified: HTTPDate? = nil, framing: BodyFraming = .contentLength(0), location: String? = nil,
         contentTypes: [String] = [], contentEncodings: [String] = [], retryAfter: RetryAfter? = nil,
         contradiction: String? = nil) {
        self.status = status
        self.contradiction = contradiction
        self.reason = reason
        self.contentRange = contentRange
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.framing = framing
        self.location = location
        (self.contentType, self.mediaType) = Self.chosenContentType(contentTypes)
        self.contentCodings = Self.codings(contentEncodings)
        self.retryAfter = retryAfter
    }

    /// The fields ``init(_:)`` reads, found in one pass over the head (in this order: the indices below).
    private static let readFieldNames = FieldNameSet([
        "content-range", "etag", "last-modified", "location", "content-type", "content-encoding", "retry-after",
    ])

    init(_ head: ResponseHead) {
        let fields = head.fields
        self.status = head.status
        self.reason = head.reason
        self.framing = head.framing
        // One pass over the fields finds every one read here: a lookup per name went over them all again each
        // time, most of the cost of these facts for every small file's response.
        var contentRange = -1, entityTag = -1, lastModified = -1, location = -1, contentType = -1, retryAfter = -1
        var contentTypeCount = 0, contentEncodingCount = 0
        // A second field of a name that must be one: judged after the pass (rare, so the slow way).
        var repeated = false
        fields.forEachField(named: Self.readFieldNames) { index, name in
            if name <= 2, (name == 0 ? contentRange : name == 1 ? entityTag : lastModified) >= 0 {
                repeated = true
                return
            }
            switch name {
            case 0: if contentRange < 0 { contentRange = index }
            case 1: if entityTag < 0 { entityTag = index }
            case 2: if lastModified < 0 { lastModified = index }
            case 3: if location < 0 { location = index }
            case 4:
                if contentType < 0 { contentType = index }
                contentTypeCount += 1
            case 5: contentEncodingCount += 1
            default: if retryAfter < 0 { retryAfter = index }
            }
        }
        self.contentRange = contentRange < 0 ? nil : latin1String(fields.value(at: contentRange))
        self.entityTag = entityTag < 0 ? nil : EntityTag(fields.value(at: entityTag))
        self.lastModified = lastModified < 0 ? nil : HTTPDate(fields.value(at: lastModified))
        self.location = location < 0 ? nil : latin1String(fields.value(at: location))
        if contentTypeCount > 1 {
            // The field values as the other initializer takes them, without building the arrays of text it takes.
            (self.contentType, self.mediaType) = Self.chosenContentType(fields.all("content-type").lazy.map(latin1String))
        } else if contentType >= 0 {
            // One field, the usual case: parsed from its bytes when they are the text's UTF-8 (ASCII), as
            // `chosenContentType` parses the text, without copying the text into an array first.
            let value = fields.value(at: contentType)
            let text = latin1String(value)
            (self.contentType, self.mediaType) = (text, text.utf8.count == value.count ? MediaType(value) : MediaType(text))
        } else {
            (self.contentType, self.mediaType) = (nil, nil)
        }
        self.contentCodings = contentEncodingCount == 0 ? [] : Self.codings(fields.all("content-encoding").map(latin1String))
        self.retryAfter = retryAfter < 0 ? nil : RetryAfter(fields.value(at: retryAfter))
        self.contradiction = repeated ? Self.repeatedSingletons(fields) : nil
        if head.status == 204, contradiction == nil { self.contradiction = Self.bodyOnNoContent(fields) }
        if head.status == 200, contradiction == nil, let text = self.contentRange {
            self.contradiction = Self.partUnderWholeStatus(text, framing: head.framing)
        }
    }

    /// What a `200` (the whole representation) says when its `Content-Range` names only a part of it, or
    /// another length than its body's: a `206` sent under the wrong status, as some servers answer a range.
    /// Taken as the whole file, the part became the file (the bounded probe's 4 MiB of a bigger one, exit 0).
    /// A value that is not a byte range says nothing and is left alone.
    static func partUnderWholeStatus(_ text: String, framing: BodyFraming) -> String? {
        guard case .bytes(let first, let last, let total)? = ContentRange(text) else { return nil }
        let count = last - first + 1
        var whole = first == 0 && (total.map { $0 == count } ?? true)
        if case .contentLength(let length) = framing, length != count { whole = false }
        return whole ? nil : "a 200 (the whole file) with Content-Range \"\(text)\", which names a part of it"
    }

    /// The first `Content-Range`, `ETag` or `Last-Modified` field whose value means something else than the
    /// first of its name (the same range, tag or date written differently is no contradiction), for a message.
    static func repeatedSingletons(_ fields: HTTPFields) -> String? {
        func conflict(_ name: String, _ same: (ArraySlice<UInt8>, ArraySlice<UInt8>) -> Bool) -> String? {
            let values = fields.all(name.lowercased())
            guard let first = values.first, let other = values.dropFirst().first(where: { !same(first, $0) }) else { return nil }
            return "\(name) sent twice, \"\(latin1String(first))\" and \"\(latin1String(other))\": nothing says which the body is"
        }
        return conflict("Content-Range") { a, b in ContentRange(a).map { $0 == ContentRange(b) } ?? a.elementsEqual(b) }
            ?? conflict("ETag") { a, b in EntityTag(a).map { $0 == EntityTag(b) } ?? a.elementsEqual(b) }
            ?? conflict("Last-Modified") { a, b in HTTPDate(a).map { $0 == HTTPDate(b) } ?? a.elementsEqual(b) }
    }

    /// What a `204 No Content` head says about a body it must not have; nil when it declares none.
    private static func bodyOnNoContent(_ fields: HTTPFields) -> String? {
        if let coding = fields.first("transfer-encoding") {
            return "204 No Content with Transfer-Encoding \"\(latin1String(coding))\": a 204 has no body"
        }
        for length in fields.all("content-length") where length.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) {
            return "204 No Content with Content-Length \"\(latin1String(length))\": a 204 has no body"
        }
        return nil
    }

    /// Two `Content-Type` fields are a contradiction; the one that says the body is framed must not be hidden
    /// behind the other: the first that declares `multipart/byteranges`, else the first.
    private static func chosenContentType(_ texts: some Sequence<String>) -> (String?, MediaType?) {
        var chosen: (String?, MediaType?) = (nil, nil)
        for text in texts {
            let type = MediaType(text)
            if type?.isMultipartByteranges == true { return (text, type) }
            if chosen.0 == nil { chosen = (text, type) }
        }
        return chosen
    }

    private static func codings(_ encodings: [String]) -> [String] {
        encodings.flatMap { ContentEncoding($0)?.appliedCodings ?? [$0] }
    }

    var isRedirect: Bool { RedirectPolicy.redirectStatuses.contains(status) }

    /// Whether a decision may take this response as content (bytes of the file, or its emptiness): the
    /// statuses a ``contradiction`` makes faulty. An error status stays the error it is.
    var mayBeContent: Bool { status == 200 || status == 204 || status == 206 || status == 416 }

    /// The validators this response carries.
    var validators: Validators { Validators(entityTag: entityTag, lastModified: lastModified) }

    /// The number of body bytes the framing promises, when it promises a number.
    var declaredLength: Int64? {
        if case .contentLength(let length) = framing { return length }
        return nil
    }
}

/// What identifies one version of a resource: its entity tag and modification date, as a server sent them.
///
/// The probe's validators are the download's identity (kept in the journal with the length). Every later
/// response is held to them *exactly* (``changes(in:)``): another tag, a weak tag where a strong one was
/// (or the reverse), another date, or a validator dropped or gained all mean another version. Only a strong
/// tag *proves* that two responses are the same version; a weak tag or a date can only disprove it, which is
/// why a download without any validator uses one response (``isEmpty``).
struct Validators: Sendable, Equatable {
    var entityTag: EntityTag?
    var lastModified: HTTPDate?

    init(entityTag: EntityTag? = nil, lastModified: HTTPDate? = nil) {
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Whether the response carried no validator at all: nothing could tell two of its versions apart.
    var isEmpty: Bool { entityTag == nil && lastModified == nil }

    /// Whether a strong entity tag is among them: the one validator whose equality proves the same bytes.
    var hasStrongEntityTag: Bool { entityTag.map { !$0.isWeak } ?? false }

    /// What a ranged request sends as `If-Range`: a strong tag, else the date (RFC 9110 §13.1.5).
    ///
    /// The date goes even when it may be a weak validator (a file modified within the second the server
    /// sent it): a server may then answer `206` for a changed file, but every response's validators are
    /// compared exactly anyway, and a change that keeps the date is beyond any client's sight.
    var ifRange: IfRangeValidator? {
        if let entityTag, !entityTag.isWeak { return .entityTag(entityTag) }
        return lastModified.map { .lastModified($0) }
    }

    /// How `seen` differs from these validators (the known identity), for a message; nil when it names the
    /// same version — every validator present in both, or absent in both, and equal.
    ///
    /// Entity tags compare exactly, weakness included: `W/"a"` and `"a"` are different validators (a server
    /// that turns a strong tag weak has started to transform the content, as compressing servers do).
    func changes(in seen: Validators) -> String? {
        var changes: [String] = []
        switch (entityTag, seen.entityTag) {
        case (let known?, let now?) where known != now: changes.append("ETag changed from \(known) to \(now)")
        case (let known?, nil): changes.append("ETag \(known) is no longer sent")
        case (nil, let now?): changes.append("an ETag \(now) appeared where there was none")
        default: break
        }
        switch (lastModified, seen.lastModified) {
        case (let known?, let now?) where known != now: changes.append("Last-Modified changed from \(known) to \(now)")
        case (let known?, nil): changes.append("Last-Modified \(known) is no longer sent")
        case (nil, let now?): changes.append("a Last-Modified \(now) appeared where there was none")
        default: break
        }
        return changes.isEmpty ? nil : changes.joined(separator: "; ")
    }
}
