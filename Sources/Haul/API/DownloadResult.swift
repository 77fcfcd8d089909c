import HaulHTTP

/// What a finished download produced.
///
/// A download paused and resumed in this process (``DownloadTask/pause()``, ``DownloadTask/resume()``) has
/// one result covering all its runs: ``duration``, ``bytesRequested`` and ``retries`` are summed over them
/// and ``connections`` is the most any run used. A download that resumed from the journal of another
/// process (a crash, `kill -9`, a program run again) counts only what this process did: the bytes the
/// journal already listed were requested (and their time spent) by the earlier process, so
/// ``bytesRequested`` may be less than ``bytes``.
public struct DownloadResult: Sendable {
    /// The completed file. (`-` for a download delivered to a stream; empty for one kept in memory, whose
    /// bytes are ``body``.)
    public var path: String
    /// The file's length: every byte, including those an earlier run or process wrote.
    public var bytes: Int64
    /// Time spent running, from each run's first request to its pause or, for the last, to the rename;
    /// time spent paused is not counted.
    public var duration: Duration
    /// The URL that finally answered, after redirects.
    public var finalURL: HTTPURL
    /// The final response's strong or weak entity tag.
    public var entityTag: EntityTag?
    /// The final response's Last-Modified.
    public var lastModified: HTTPDate?
    /// Redirects followed by the last run to reach ``finalURL``.
    public var redirects: Int
    /// Connections used at the same time, at most, in any run.
    public var connections: Int
    /// Bytes requested from servers in all runs of this process (equal to `bytes` when nothing was fetched
    /// twice and nothing came from an earlier process).
    public var bytesRequested: Int64
    /// Retries made, in all runs of this process.
    public var retries: Int
    /// The downloaded bytes, for a download kept in memory (``DownloadRequest/Destination/memory(limit:)``):
    /// ``bytes`` of them, never more than its limit. nil for every other destination, whose bytes are at
    /// ``path``.
    public var body: [UInt8]? = nil
    /// The status of the response the download took the file from: its first request's answer (`200` for a
    /// whole file, `206` for a range), or for a download that resumed from its journal the first range it was
    /// sent. The last run's, after redirects (``finalURL``'s). nil when no request was needed: every byte was
    /// in the journal already.
    public var status: Int? = nil
    /// That response's header fields, in order and as sent (names in the server's case, repeated fields
    /// kept); empty when ``status`` is nil.
    public var headers: [(name: String, value: String)] {
        get {
            switch headerStorage {
            case .given(let headers): headers
            case .response(let head): head.map(Self.headers(of:)) ?? []
            }
        }
        set { headerStorage = .given(newValue) }
    }
    /// ``headers``: as set, or the fields of the response, turned into strings only when read (most results
    /// are never asked for them, and for a small file that took about as many instructions as its body).
    private var headerStorage: HeaderStorage
    private enum HeaderStorage: Sendable {
        case given([(name: String, value: String)])
        case response(ResponseHead?)
    }
    /// True when nothing was fetched because the file at ``path`` is the server's (``DownloadRequest/onlyIfChanged``
    /// and a `304 Not Modified`): ``bytes`` is the file's length, ``bytesRequested`` 0, the file untouched.
    public var upToDate: Bool = false
    /// True when the answer was a Metalink document, followed rather than saved
    /// (``DownloadRequest/followsMetalink``): nothing was written (``path`` is empty), ``body`` holds the
    /// document and ``metalink`` the files it lists, for the caller to download.
    public var isMetalink: Bool = false

    init(path: String, bytes: Int64, duration: Duration, finalURL: HTTPURL, entityTag: EntityTag?,
         lastModified: HTTPDate?, redirects: Int, connections: Int, bytesRequested: Int64, retries: Int,
         body: [UInt8]? = nil, status: Int? = nil, headers: [(name: String, value: String)] = [],
         upToDate: Bool = false, isMetalink: Bool = false) {
        self.path = path
        self.bytes = bytes
        self.duration = duration
        self.finalURL = finalURL
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.redirects = redirects
        self.connections = connections
        self.bytesRequested = bytesRequested
        self.retries = retries
        self.body = body
        self.status = status
        headerStorage = .given(headers)
        self.upToDate = upToDate
        self.isMetalink = isMetalink
    }

    /// A result whose ``status`` and ``headers`` are `response`'s (none when nil).
    init(path: String, bytes: Int64, duration: Duration, finalURL: HTTPURL, entityTag: EntityTag?,
         lastModified: HTTPDate?, redirects: Int, connections: Int, bytesRequested: Int64, retries: Int,
         body: [UInt8]?, response: ResponseHead?) {
        self.init(path: path, bytes: bytes, duration: duration, finalURL: finalURL, entityTag: entityTag,
                  lastModified: lastModified, redirects: redirects, connections: connections,
                  bytesRequested: bytesRequested, retries: retries, body: body, status: response?.status)
        headerStorage = .response(response)
    }

    /// The Metalink document the download followed (``isMetalink``), parsed; nil for any other result. It
    /// parsed when the download read it, so the same bytes parse again here.
    public var metalink: Metalink? {
        guard isMetalink, let body else { return nil }
        return try? Metalink(parsing: body)
    }

    /// The value of the first `Content-Type` field of ``headers`` (named in any case), as sent: for example
    /// `application/json; charset=utf-8`. nil when the response carried none.
    public var contentType: String? {
        headers.first { $0.name.lowercased() == "content-type" }?.value
    }

    /// Whether ``contentType`` names the media type `type` (`"application/json"`), compared without case and
    /// without its parameters (`; charset=…`), as RFC 9110 §8.3.1 says media types compare.
    public func hasMediaType(_ type: String) -> Bool {
        guard let contentType else { return false }
        let essence = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return essence.trimmingSpaces.lowercased() == type.lowercased()
    }

    /// A response head's fields as strings (bytes read as Latin-1, as HTTP field values are).
    static func headers(of head: ResponseHead) -> [(name: String, value: String)] {
        (0..<head.fields.count).map { (latin1String(head.fields.name(at: $0)), latin1String(head.fields.value(at: $0))) }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    fileprivate var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}
