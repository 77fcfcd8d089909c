import HaulHTTP

/// What a finished download produced.
///
/// A download paused and resumed in this process (``DownloadTask/pause()``, ``DownloadTask/resume()``) has
/// one result covering all its runs: ``duration``, ``bytesRequested`` and ``retries`` are summed over them
/// and ``connections`` is the most any run used. A download that resumed from the journal of another
/// process (a crash, `kill -9`, a program run again) counts only what this process did: the bytes the
/// journal already listed were requested (and their time spent) by the earlier process, so
/// ``bytesRequested`` may be less than ``bytes``.
public struct DownloadResult: Sendable, CustomReflectable {
    /// The completed file. (`-` for a download delivered to a stream; empty for one kept in memory, whose
    /// bytes are ``body``.)
    public var path: String {
        get { fields.box.fields.path }
        set { fields.unique.fields.path = newValue }
        _modify { yield &fields.unique.fields.path }
    }
    /// The file's length: every byte, including those an earlier run or process wrote.
    public var bytes: Int64 {
        get { fields.box.fields.bytes }
        set { fields.unique.fields.bytes = newValue }
        _modify { yield &fields.unique.fields.bytes }
    }
    /// Time spent running, from each run's first request to its pause or, for the last, to the rename;
    /// time spent paused is not counted.
    public var duration: Duration {
        get { fields.box.fields.duration }
        set { fields.unique.fields.duration = newValue }
        _modify { yield &fields.unique.fields.duration }
    }
    /// The URL that finally answered, after redirects.
    public var finalURL: HTTPURL {
        get { fields.box.fields.finalURL }
        set { fields.unique.fields.finalURL = newValue }
        _modify { yield &fields.unique.fields.finalURL }
    }
    /// The final response's strong or weak entity tag.
    public var entityTag: EntityTag? {
        get { fields.box.fields.entityTag }
        set { fields.unique.fields.entityTag = newValue }
        _modify { yield &fields.unique.fields.entityTag }
    }
    /// The final response's Last-Modified.
    public var lastModified: HTTPDate? {
        get { fields.box.fields.lastModified }
        set { fields.unique.fields.lastModified = newValue }
        _modify { yield &fields.unique.fields.lastModified }
    }
    /// Redirects followed by the last run to reach ``finalURL``.
    public var redirects: Int {
        get { fields.box.fields.redirects }
        set { fields.unique.fields.redirects = newValue }
        _modify { yield &fields.unique.fields.redirects }
    }
    /// Connections used at the same time, at most, in any run.
    public var connections: Int {
        get { fields.box.fields.connections }
        set { fields.unique.fields.connections = newValue }
        _modify { yield &fields.unique.fields.connections }
    }
    /// Bytes requested from servers in all runs of this process (equal to `bytes` when nothing was fetched
    /// twice and nothing came from an earlier process).
    public var bytesRequested: Int64 {
        get { fields.box.fields.bytesRequested }
        set { fields.unique.fields.bytesRequested = newValue }
        _modify { yield &fields.unique.fields.bytesRequested }
    }
    /// Retries made, in all runs of this process.
    public var retries: Int {
        get { fields.box.fields.retries }
        set { fields.unique.fields.retries = newValue }
        _modify { yield &fields.unique.fields.retries }
    }
    /// The downloaded bytes, for a download kept in memory (``DownloadRequest/Destination/memory(limit:)``):
    /// ``bytes`` of them, never more than its limit. nil for every other destination, whose bytes are at
    /// ``path``.
    public var body: [UInt8]? {
        get { fields.box.fields.body }
        set { fields.unique.fields.body = newValue }
        _modify { yield &fields.unique.fields.body }
    }
    /// The status of the response the download took the file from: its first request's answer (`200` for a
    /// whole file, `206` for a range), or for a download that resumed from its journal the first range it was
    /// sent. The last run's, after redirects (``finalURL``'s). nil when no request was needed: every byte was
    /// in the journal already.
    public var status: Int? {
        get { fields.box.fields.status }
        set { fields.unique.fields.status = newValue }
        _modify { yield &fields.unique.fields.status }
    }
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
    private var headerStorage: HeaderStorage {
        get { fields.box.fields.headerStorage }
        set { fields.unique.fields.headerStorage = newValue }
        _modify { yield &fields.unique.fields.headerStorage }
    }
    private enum HeaderStorage: Sendable {
        case given([(name: String, value: String)])
        case response(ResponseHead?)
    }
    /// True when nothing was fetched because the file at ``path`` is the server's (``DownloadRequest/onlyIfChanged``
    /// and a `304 Not Modified`): ``bytes`` is the file's length, ``bytesRequested`` 0, the file untouched.
    public var upToDate: Bool {
        get { fields.box.fields.upToDate }
        set { fields.unique.fields.upToDate = newValue }
        _modify { yield &fields.unique.fields.upToDate }
    }
    /// True when the answer was a Metalink document, followed rather than saved
    /// (``DownloadRequest/followsMetalink``): nothing was written (``path`` is empty), ``body`` holds the
    /// document and ``metalink`` the files it lists, for the caller to download.
    public var isMetalink: Bool {
        get { fields.box.fields.isMetalink }
        set { fields.unique.fields.isMetalink = newValue }
        _modify { yield &fields.unique.fields.isMetalink }
    }

    /// Every stored field in one copy-on-write box (`CopyOnWrite`): a result is copied several times on its
    /// way to its caller, and a copy then retains one object instead of each of its strings and arrays.
    private var fields: CopyOnWrite<Fields>

    /// The stored properties. One added here must be added to `==`, `CodingKeys`, `init(from:)` and `encode(to:)`
    /// (DownloadResult+Codable.swift); `customMirror` shows these fields, which RequestAndResultCodableTests compares with the keys.
    private struct Fields: Sendable {
        var path: String
        var bytes: Int64
        var duration: Duration
        var finalURL: HTTPURL
        var entityTag: EntityTag?
        var lastModified: HTTPDate?
        var redirects: Int
        var connections: Int
        var bytesRequested: Int64
        var retries: Int
        var body: [UInt8]? = nil
        var status: Int? = nil
        var headerStorage: HeaderStorage
        var upToDate: Bool = false
        var isMetalink: Bool = false
    }

    init(path: String, bytes: Int64, duration: Duration, finalURL: HTTPURL, entityTag: EntityTag?,
         lastModified: HTTPDate?, redirects: Int, connections: Int, bytesRequested: Int64, retries: Int,
         body: [UInt8]? = nil, status: Int? = nil, headers: [(name: String, value: String)] = [],
         upToDate: Bool = false, isMetalink: Bool = false) {
        fields = CopyOnWrite(Fields(
            path: path, bytes: bytes, duration: duration, finalURL: finalURL, entityTag: entityTag,
            lastModified: lastModified, redirects: redirects, connections: connections, bytesRequested: bytesRequested,
            retries: retries, body: body, status: status, headerStorage: .given(headers), upToDate: upToDate,
            isMetalink: isMetalink))
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

    /// The stored fields, as a struct's (what `print` and `dump` show), not the box that holds them.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: fields.value).children, displayStyle: .struct)
    }

    /// Whether `self` and `other` share one box of fields (for tests of copy-on-write).
    func sharesStorage(with other: DownloadResult) -> Bool { fields.sharesStorage(with: other.fields) }

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
