import HaulHTTP

/// The validators a conditional probe sends (``DownloadRequest/onlyIfChanged``): the server's own text for
/// the file at the destination, as Haul stored it (``StoredValidators``), or the file's modification time.
struct ConditionalProbe: Sendable, Equatable {
    /// Sent as `If-None-Match`.
    var entityTag: String?
    /// Sent as `If-Modified-Since`: the stored `Last-Modified` text exactly (nginx answers 304 only to its
    /// own text), else the file's modification time as an IMF-fixdate.
    var modifiedSince: String?
    /// The length of the file asked about (nil: no file, as for `-z DATE`): a `304` that states another
    /// `Content-Length` speaks of another file.
    var localLength: Int64? = nil

    /// The probe for the file at `path`, from its stored validators, its modification time and its length;
    /// nil when there is no file there.
    static func forFile(at path: String, stored: StoredValidators, modificationTime: Int64?, length: Int64? = nil) -> ConditionalProbe? {
        guard let modificationTime else { return nil }
        return ConditionalProbe(entityTag: stored.entityTag,
                                modifiedSince: stored.lastModified ?? HTTPDate(secondsSinceEpoch: modificationTime).description,
                                localLength: length)
    }

    /// The request fields, in the order sent.
    var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let entityTag { fields.append(("If-None-Match", entityTag)) }
        if let modifiedSince { fields.append(("If-Modified-Since", modifiedSince)) }
        return fields
    }
}

/// Whether a response to the probe is a `304 Not Modified` that leaves the destination as it is. Asked
/// before ``ProbeResponseDecision``, which reads every other status.
enum NotModifiedDecision {
    /// Not a 304: the response is read as any probe's.
    case notApplicable
    /// The server's file is the one at the destination: nothing is fetched, the file stays.
    case upToDate
    /// A 304 that cannot be believed; the download fails rather than keep a file nobody vouched for.
    case faulty(HaulError)

    /// - Parameters:
    ///   - askedConditionally: the request carried `If-None-Match` or `If-Modified-Since`.
    ///   - sentIfRange: the request continued an interrupted download (`If-Range`): a 304 is no answer to it.
    ///   - framing: a 304 has no body (RFC 9110 §15.4.5); the parser frames every 304 so, so anything else
    ///     here is a server (or a test) claiming otherwise.
    ///   - asked: the conditions sent (nil: none known); `answeredEntityTag` and `answeredLength` are the
    ///     304's `ETag` and `Content-Length`. A 304 carries the validators a 200 would (RFC 9110 §15.4.5) and
    ///     a `Content-Length` only of the length a 200 would have (§8.6): an `ETag` that does not match the
    ///     one asked about (weakly, as `If-None-Match` compares), or a length other than the file's here,
    ///     says the server's file is another one, whatever the status claims — as a server that judges
    ///     `If-Modified-Since` alone answers for a file replaced by an older one. `Content-Length: 0` is not
    ///     held against a file with bytes: servers that send it on every 304 exist, and it names no file.
    static func decide(status: Int, framing: BodyFraming, askedConditionally: Bool, sentIfRange: Bool,
                       asked: ConditionalProbe? = nil, answeredEntityTag: EntityTag? = nil, answeredLength: Int64? = nil,
                       url: @autoclosure () -> String) -> NotModifiedDecision {
        guard status == 304 else { return .notApplicable }
        if askedConditionally, !sentIfRange, let asked {
            if let text = asked.entityTag, let sent = EntityTag(text), let answered = answeredEntityTag, !sent.weakMatches(answered) {
                return .faulty(.faultyResponse(url: url(), detail: "304 Not Modified with ETag \(answered), but the request asked about \(sent) (If-None-Match): the server's file is another one"))
            }
            if let local = asked.localLength, let answered = answeredLength, answered != local, answered != 0 {
                return .faulty(.faultyResponse(url: url(), detail: "304 Not Modified with Content-Length \(answered), but the file asked about has \(local) bytes: the server's file is another one"))
            }
        }
        guard askedConditionally else {
            return .faulty(.faultyResponse(url: url(), detail: "304 Not Modified to a request that asked no condition"))
        }
        guard !sentIfRange else {
            return .faulty(.faultyResponse(url: url(), detail: "304 Not Modified to a ranged request resuming a download (If-Range)"))
        }
        switch framing {
        case .none, .contentLength(0): return .upToDate
        case .contentLength, .chunked, .untilClose:
            return .faulty(.faultyResponse(url: url(), detail: "304 Not Modified with a body (\(framing.name))"))
        }
    }
}
