import SystemPackage

/// One download: what to fetch, where to put it, and the per-file choices.
///
/// Connection counts, timeouts, TLS and the like belong to the ``HaulClient`` (its ``DownloadOptions``);
/// what differs from file to file lives here.
public struct DownloadRequest: Sendable, CustomReflectable {
    /// Where the file goes.
    public enum Destination: Sendable, Hashable {
        /// This exact path. While the download runs it holds this name, in this process and against Haul
        /// downloads of others: a second download of the same path, or of a path that is a working file of
        /// this one (`NAME.part`, `NAME.part.haul`) or whose working file this one is, fails with
        /// ``HaulError/Reason/destinationBusy(path:holder:)``.
        case file(String)
        /// This directory, under the name the server suggests (`Content-Disposition`), else the last segment
        /// of the final URL's path, else `index.html`. Suggested names are sanitized: no path separators, no
        /// `..`, no control characters, at most 255 bytes, and never ending in a working suffix (`.part`,
        /// `.part.haul`, `.part.haul.tmp`, in any case: the last `.` becomes `_`, `x.part` is `x_part`).
        /// The name is held as a file destination's is; a second download given the same name is not renamed but
        /// fails with ``HaulError/Reason/destinationBusy(path:holder:)``.
        case directory(String)
        /// Deliver the bytes in order to this open descriptor (standard output, a pipe, a socket) while
        /// still fetching over several connections: no `.part`, no journal, nothing to resume. Connections
        /// fetch at most one request each (``DownloadOptions/minimumSegment``, at least 1 MiB) ahead of what
        /// the stream has taken, so memory stays bounded by that window; writes block, so the stream's
        /// reader paces the download. The descriptor stays open: it is the caller's, e.g.
        /// `.stream(.standardOutput)`.
        case stream(FileDescriptor)
        /// Keep the bytes in memory and hand them over as ``DownloadResult/body``: for a small resource (a
        /// JSON document, a manifest) that needs no file. Nothing is written to disk: no `.part`, no journal,
        /// no rename, and ``DownloadResult/path`` is empty. The download still fetches over several
        /// connections into an anonymous in-memory file (`memfd_create`), and a ``DownloadRequest/checksum``
        /// is checked against the bytes.
        ///
        /// `limit` bounds the memory it takes, in bytes: a resource whose announced length is larger is
        /// refused before any of its body is kept, and one sent without a length (chunked, or delimited by
        /// the connection's close) is stopped as soon as its bytes pass the limit; both end with
        /// ``HaulError/Reason/responseTooLarge(url:limit:length:)``. A negative limit is
        /// ``HaulError/Reason/invalidDestination(_:)``. At the end the bytes are copied once from the in-memory
        /// file into the result, so for that moment the download holds twice its length.
        ///
        /// A pause keeps nothing: ``DownloadTask/resume()`` fetches the resource again from its start, and no
        /// other process can continue it. ``createsDirectories``, ``replacesExisting`` and
        /// ``discardsPartialDownload`` have no meaning here and are ignored.
        case memory(limit: Int)

        /// This exact path.
        public static func file(_ path: FilePath) -> Destination { .file(path.string) }
        /// This directory, under the name the server suggests (as for the `String` form).
        public static func directory(_ path: FilePath) -> Destination { .directory(path.string) }
    }

    /// The URL to fetch.
    public var url: String {
        get { fields.box.fields.url }
        set { fields.unique.fields.url = newValue }
        _modify { yield &fields.unique.fields.url }
    }
    /// ``url`` parsed already, by a caller that made the request from text it parsed anyway (the CLI parses
    /// each URL of a list when it checks the list): the engine does not parse it again. Used only while
    /// ``url`` is the text it was set with; a cache, not part of the request's value (not compared, not
    /// encoded). Whoever sets it has parsed ``url`` into it.
    package var parsedURL: HTTPURL? {
        get {
            // Compared where it lies: binding the cache would copy its `HTTPURL` for the comparison.
            guard fields.box.fields.parsedURLCache?.text == fields.box.fields.url else { return nil }
            return fields.box.fields.parsedURLCache?.url
        }
        set { parsedURLCache = newValue.map { (url, $0) } }
    }
    private var parsedURLCache: (text: String, url: HTTPURL)? {
        get { fields.box.fields.parsedURLCache }
        set { fields.unique.fields.parsedURLCache = newValue }
        _modify { yield &fields.unique.fields.parsedURLCache }
    }
    /// A path its caller found absent, with its `NAME.part` and `NAME.part.haul`, by listing the directory
    /// before the download started (the CLI lists a list's destination directory once, before its first
    /// download: `DirectorySnapshot`). When the download's file is that very path, the
    /// engine does not look for the file and its `.part` again (`ListedAbsence`). Only the first start
    /// uses it: a resume after a pause looks, since its own `.part` is there then. Nothing depends on it for
    /// safety: a file that appeared since the listing is never replaced (`FinalNaming`). A hint, not part
    /// of the request's value (not compared, not encoded); whoever sets it has listed the directory.
    ///
    /// Kept beside the box of fields, not in it: a caller sets it on a copy of a request it keeps (the CLI's
    /// plan), which would otherwise copy the whole box for it.
    package var listedAbsentPath: String?
    /// Other URLs of the same resource. Connections start spread over all of them and then move to the ones
    /// measured fastest per connection; one far slower than the fastest (under a quarter of its speed) gets
    /// none of the tail. A failing one is dropped.
    public var mirrors: [String] {
        get { fields.box.fields.mirrors }
        set { fields.unique.fields.mirrors = newValue }
        _modify { yield &fields.unique.fields.mirrors }
    }
    /// Where the file goes: a path, a directory and the server's suggested name, a stream, or memory.
    public var destination: Destination {
        get { fields.box.fields.destination }
        set { fields.unique.fields.destination = newValue }
        _modify { yield &fields.unique.fields.destination }
    }
    /// Whether missing directories on the way to the destination are created.
    public var createsDirectories: Bool {
        get { fields.box.fields.createsDirectories }
        set { fields.unique.fields.createsDirectories = newValue }
        _modify { yield &fields.unique.fields.createsDirectories }
    }
    /// Whether an existing file at the destination may be replaced; when false that is
    /// ``HaulError/destinationExists(path:)``, before anything is fetched. Only a finished file is ever
    /// replaced: a destination that is a working file of an interrupted download (`x.part` while `x.part.haul`
    /// waits for a resume) is ``HaulError/Reason/invalidDestination(_:)``, and one a live download holds or
    /// will produce is ``HaulError/Reason/destinationBusy(path:holder:)``, whatever this says.
    public var replacesExisting: Bool {
        get { fields.box.fields.replacesExisting }
        set { fields.unique.fields.replacesExisting = newValue }
        _modify { yield &fields.unique.fields.replacesExisting }
    }
    /// A digest the finished file must have; on a mismatch the file stays `NAME.part`.
    public var checksum: Checksum? {
        get { fields.box.fields.checksum }
        set { fields.unique.fields.checksum = newValue }
        _modify { yield &fields.unique.fields.checksum }
    }
    /// The digest of each fixed-size piece of the file (a Metalink's `<pieces>`): each piece is checked as
    /// soon as its bytes are written, and only a checked piece counts as done in the resume journal. A piece
    /// that fails is fetched again, from another mirror when one is left (the mirrors that served it are
    /// dropped for this download and named in ``DownloadProgress/notices``); one that keeps failing ends the
    /// download with ``HaulError/Reason/digestMismatch(_:)``. Digests that do not cover the server's length
    /// exactly fail the download before a byte is written. A stream cannot be checked this way (it keeps no
    /// file to read a piece back from): ``HaulError/Reason/invalidDestination(_:)``.
    public var pieceHashes: PieceHashes? {
        get { fields.box.fields.pieceHashes }
        set { fields.unique.fields.pieceHashes = newValue }
        _modify { yield &fields.unique.fields.pieceHashes }
    }
    /// What to do when the resource changes on the server while (or between when) it is downloaded.
    public var ifChangedOnServer: ChangePolicy {
        get { fields.box.fields.ifChangedOnServer }
        set { fields.unique.fields.ifChangedOnServer = newValue }
        _modify { yield &fields.unique.fields.ifChangedOnServer }
    }
    /// Discard a previous interrupted download of the same destination instead of resuming it.
    public var discardsPartialDownload: Bool {
        get { fields.box.fields.discardsPartialDownload }
        set { fields.unique.fields.discardsPartialDownload = newValue }
        _modify { yield &fields.unique.fields.discardsPartialDownload }
    }
    /// Fetch only when the server's file differs from the one at the destination (wget `-N`, curl `-z`): with
    /// an existing destination the first request carries `If-None-Match` (the `ETag` Haul stored with the
    /// file) and `If-Modified-Since` (the stored `Last-Modified` text, else the file's modification time). A
    /// `304 Not Modified` leaves the file as it is (``DownloadResult/upToDate``); any other answer downloads
    /// as usual and replaces the file, as if ``replacesExisting`` were set. A `.directory` destination
    /// is named from the URL's last path segment before anything is sent (as ``SuggestedFileName/forURL(_:)``
    /// names it), never from a `Content-Disposition`, which comes only with the answer, too late to ask about
    /// the file it names. Without a file there, with an interrupted download of it waiting (resumed instead),
    /// or for a stream or memory, the download is a plain one.
    public var onlyIfChanged: Bool {
        get { fields.box.fields.onlyIfChanged }
        set { fields.unique.fields.onlyIfChanged = newValue }
        _modify { yield &fields.unique.fields.onlyIfChanged }
    }
    /// Give the finished file the server's `Last-Modified` time as its modification time (curl and wget `-R`).
    public var setsRemoteTime: Bool {
        get { fields.box.fields.setsRemoteTime }
        set { fields.unique.fields.setsRemoteTime = newValue }
        _modify { yield &fields.unique.fields.setsRemoteTime }
    }
    /// Fetch only when the server's file was modified after this date (curl's `-z DATE`): the first request
    /// carries `If-Modified-Since` with it, whatever is at the destination. A `304 Not Modified` ends the
    /// download with nothing written (``DownloadResult/upToDate``; ``DownloadResult/path`` is the destination,
    /// which may not exist); any other answer downloads as usual and replaces an existing file, as if
    /// ``replacesExisting`` were set. With ``onlyIfChanged`` and a file at the destination, this date wins over
    /// the file's own. Not sent when an interrupted download is resumed (its `If-Range` decides).
    public var modifiedSince: HTTPDate? {
        get { fields.box.fields.modifiedSince }
        set { fields.unique.fields.modifiedSince = newValue }
        _modify { yield &fields.unique.fields.modifiedSince }
    }
    /// The file's length in bytes, when it is known before asking (a Metalink's `<size>`): a server that
    /// serves another length — in its first answer, or in the bytes a body without a length ends after — is
    /// refused with ``HaulError/Reason/sizeMismatch(url:expected:served:)`` before its body is written (a
    /// mirror that does is dropped and its work goes to the others), and a journal of another length is not
    /// resumed. Nothing is left under the final name. nil: any length.
    public var expectedSize: Int64? {
        get { fields.box.fields.expectedSize }
        set { fields.unique.fields.expectedSize = newValue }
        _modify { yield &fields.unique.fields.expectedSize }
    }
    /// Follow a Metalink document instead of saving it (aria2's `--follow-metalink`): when the first answer
    /// is one (a `200`, or a `206` from byte 0, whose `Content-Type` is
    /// `application/metalink4+xml`), nothing is written to the destination; the document is fetched again
    /// into memory (at most ``MetalinkLimits/maximumBytes``, with this request's headers and credentials),
    /// parsed as hostile input (``Metalink/init(parsing:limits:)``), and the download ends with it in
    /// ``DownloadResult/metalink``: download its files with ``init(metalink:directory:replacesExisting:ifChangedOnServer:discardsPartialDownload:)``.
    /// A document that does not parse fails the download (``HaulError/Reason/faultyResponse(url:detail:)``);
    /// one that announces more bytes than a document may have is not followed but downloaded as a file, with a
    /// notice. Off by default: the API saves what the server sends.
    public var followsMetalink: Bool {
        get { fields.box.fields.followsMetalink }
        set { fields.unique.fields.followsMetalink = newValue }
        _modify { yield &fields.unique.fields.followsMetalink }
    }
    /// Request headers for this download only, sent after the client's
    /// (``DownloadOptions/headers``): a token that differs from file to file, say. `Authorization`,
    /// `Proxy-Authorization` and `Cookie` among them go only to the origin of ``url``.
    public var headers: [(name: String, value: String)] {
        get { fields.box.fields.headers }
        set { fields.unique.fields.headers = newValue }
        _modify { yield &fields.unique.fields.headers }
    }

    /// A user and password sent as HTTP Basic authorization (`Authorization: Basic …`, RFC 7617), only to
    /// the origin (scheme, host and port) of ``url``: never to a mirror or a redirect target on another
    /// origin, exactly as an `Authorization` header in ``headers`` is scoped. An `Authorization` header in
    /// ``headers`` wins over these. The `haul` command's `-u user:password` is the same.
    public var credentials: Credentials? {
        get { fields.box.fields.credentials }
        set { fields.unique.fields.credentials = newValue }
        _modify { yield &fields.unique.fields.credentials }
    }

    /// A user and password for HTTP Basic authorization (``DownloadRequest/credentials``).
    ///
    /// Its description shows the user only (`alice:***`), so printing a request never prints a password.
    /// Encoded (``DownloadRequest`` is `Codable`) it holds the password in clear: keep an encoded request as
    /// you keep the password.
    public struct Credentials: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible {
        /// The user name, sent as it is (UTF-8).
        public var user: String
        /// The password, sent as it is (UTF-8).
        public var password: String

        /// `user` and `password` as given (not percent-decoded, unlike the user info of a URL).
        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }

        /// `user:***`.
        public var description: String { "\(user):***" }
        /// Same as ``description``: debug output cannot leak the password either.
        public var debugDescription: String { description }

        /// The `Authorization` field value.
        var authorizationValue: String { BasicAuthorization.fieldValue(user: user, password: password) }
    }

    /// `headers` and, unless they authorize already, `credentials` as their `Authorization` field: both are
    /// per-download headers, which `CredentialScope` sends only to the origin of `url`.
    package var headersWithCredentials: [(name: String, value: String)] {
        guard let credentials, !headers.contains(where: { $0.name.lowercased() == "authorization" }) else { return headers }
        return headers + [(name: "Authorization", value: credentials.authorizationValue)]
    }

    /// Every stored field in one copy-on-write box (`CopyOnWrite`): a request is copied several times per
    /// download, and a copy then retains one object instead of each of its strings and arrays.
    private var fields: CopyOnWrite<Fields>

    /// The stored properties. One added here must be added to `==`, `CodingKeys`, `init(from:)` and `encode(to:)`
    /// (DownloadRequest+Codable.swift); `customMirror` shows these fields, which RequestAndResultCodableTests compares with the keys.
    private struct Fields: Sendable {
        var url: String
        var parsedURLCache: (text: String, url: HTTPURL)?
        var mirrors: [String]
        var destination: Destination
        var createsDirectories: Bool
        var replacesExisting: Bool
        var checksum: Checksum?
        var pieceHashes: PieceHashes? = nil
        var ifChangedOnServer: ChangePolicy
        var discardsPartialDownload: Bool
        var onlyIfChanged: Bool = false
        var setsRemoteTime: Bool = false
        var modifiedSince: HTTPDate?
        var expectedSize: Int64?
        var followsMetalink: Bool = false
        var headers: [(name: String, value: String)] = []
        var credentials: Credentials?
    }

    /// A request with the safe defaults: no directories created, an existing file not replaced, fail on change.
    ///
    /// The URLs are checked when the download starts: an invalid one ends it with
    /// ``HaulError/Reason/invalidURL(_:)``, from ``DownloadTask/value``. To find out here instead, give
    /// `HTTPURL`s, parsed where the text comes in (`DownloadRequest(url: try HTTPURL(text), destination: …)`),
    /// or Foundation `URL`s, which the initializer taking them checks.
    public init(url: String, mirrors: [String] = [], destination: Destination, createsDirectories: Bool = false,
                replacesExisting: Bool = false, checksum: Checksum? = nil, ifChangedOnServer: ChangePolicy = .fail,
                discardsPartialDownload: Bool = false, headers: [(name: String, value: String)] = [],
                credentials: Credentials? = nil) {
        fields = CopyOnWrite(Fields(
            url: url, mirrors: mirrors, destination: destination, createsDirectories: createsDirectories,
            replacesExisting: replacesExisting, checksum: checksum, ifChangedOnServer: ifChangedOnServer,
            discardsPartialDownload: discardsPartialDownload, headers: headers, credentials: credentials))
    }

    /// A request for URLs already parsed, so none can be invalid when the download starts. User information in
    /// a URL (`https://user:pw@host/…`) is kept and sent as Basic authorization to that URL's origin.
    public init(url: HTTPURL, mirrors: [HTTPURL] = [], destination: Destination, createsDirectories: Bool = false,
                replacesExisting: Bool = false, checksum: Checksum? = nil, ifChangedOnServer: ChangePolicy = .fail,
                discardsPartialDownload: Bool = false, headers: [(name: String, value: String)] = [],
                credentials: Credentials? = nil) {
        self.init(url: url.absoluteText, mirrors: mirrors.map(\.absoluteText), destination: destination,
                  createsDirectories: createsDirectories, replacesExisting: replacesExisting, checksum: checksum,
                  ifChangedOnServer: ifChangedOnServer, discardsPartialDownload: discardsPartialDownload,
                  headers: headers, credentials: credentials)
    }

    /// The stored fields, as a struct's (what `print` and `dump` show), not the box that holds them.
    public var customMirror: Mirror {
        let hint: Mirror.Child = (label: "listedAbsentPath", value: listedAbsentPath as Any)
        return Mirror(self, children: Array(Mirror(reflecting: fields.value).children) + [hint], displayStyle: .struct)
    }

    /// Whether `self` and `other` share one box of fields (for tests of copy-on-write).
    func sharesStorage(with other: DownloadRequest) -> Bool { fields.sharesStorage(with: other.fields) }
}
