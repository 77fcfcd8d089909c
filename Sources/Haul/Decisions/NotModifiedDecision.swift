import HaulHTTP

/// The validators a conditional probe sends (``DownloadRequest/onlyIfChanged``): the server's own text for
/// the file at the destination, as Haul stored it (``StoredValidators``), or the file's modification time.
struct ConditionalProbe: Sendable, Equatable {
    /// Sent as `If-None-Match`.
    var entityTag: String?
    /// Sent as `If-Modified-Since`: the stored `Last-Modified` text exactly (nginx answers 304 only to its
    /// own text), else the file's modification time as an IMF-fixdate.
    var modifiedSince: String?

    /// The probe for the file at `path`, from its stored validators and its modification time; nil when
    /// there is no file there.
    static func forFile(at path: String, stored: StoredValidators, modificationTime: Int64?) -> ConditionalProbe? {
        guard let modificationTime else { return nil }
        return ConditionalProbe(entityTag: stored.entityTag,
                                modifiedSince: stored.lastModified ?? HTTPDate(secondsSinceEpoch: modificationTime).description)
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
    static func decide(status: Int, framing: BodyFraming, askedConditionally: Bool, sentIfRange: Bool,
                       url: @autoclosure () -> String) -> NotModifiedDecision {
        guard status == 304 else { return .notApplicable }
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
