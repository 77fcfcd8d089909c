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

    init(status: Int, reason: String = "", contentRange: String? = nil, entityTag: EntityTag? = nil,
         lastModified: HTTPDate? = nil, framing: BodyFraming = .contentLength(0), location: String? = nil) {
        self.status = status
        self.reason = reason
        self.contentRange = contentRange
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.framing = framing
        self.location = location
    }

    init(_ head: ResponseHead) {
        self.init(status: head.status, reason: head.reason, contentRange: head.fields.firstString("content-range"),
                  entityTag: head.fields.first("etag").flatMap { EntityTag($0) },
                  lastModified: head.fields.first("last-modified").flatMap { HTTPDate($0) },
                  framing: head.framing, location: head.fields.firstString("location"))
    }

    var isRedirect: Bool { RedirectPolicy.redirectStatuses.contains(status) }

    /// The validators this response carries.
    var validators: Validators { Validators(entityTag: entityTag, lastModified: lastModified) }

    /// The number of body bytes the framing promises, when it promises a number.
    var declaredLength: Int64? {
        if case .contentLength(let length) = framing { return length }
        return nil
    }
}

/// What identifies one version of a resource: its entity tag and modification date, as a server sent them.
struct Validators: Sendable, Equatable {
    var entityTag: EntityTag?
    var lastModified: HTTPDate?

    init(entityTag: EntityTag? = nil, lastModified: HTTPDate? = nil) {
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// What a ranged request sends as `If-Range`: a strong tag, else the date (RFC 9110 §13.1.5).
    var ifRange: IfRangeValidator? {
        if let entityTag, !entityTag.isWeak { return .entityTag(entityTag) }
        return lastModified.map { .lastModified($0) }
    }

    /// Whether `other` names a different version than these validators: only strong tags can say so.
    func contradicts(_ other: Validators) -> Bool {
        guard let known = entityTag, !known.isWeak, let seen = other.entityTag, !seen.isWeak else { return false }
        return !seen.strongMatches(known)
    }
}
