/// A ``HaulClient``'s settings, shared by all its downloads: identity, connections, limits, TLS, redirects
/// and durability. Per-file choices (destination, checksum, what to do on a change) are in ``DownloadRequest``.
public struct DownloadOptions: Sendable, CustomReflectable {
    /// Sent as `User-Agent`.
    public var userAgent: String {
        get { fields.box.fields.userAgent }
        set { fields.unique.fields.userAgent = newValue }
        _modify { yield &fields.unique.fields.userAgent }
    }
    /// Extra request headers, sent in order (validated: no CR/LF, no framing headers).
    public var headers: [(name: String, value: String)] {
        get { fields.box.fields.headers }
        set { fields.unique.fields.headers = newValue }
        _modify { yield &fields.unique.fields.headers }
    }

    /// Whether ``headers`` hold a credential (`Authorization`, `Proxy-Authorization`, `Cookie`): sent only to
    /// the origin of a download's first URL.
    public var headersCarryCredentials: Bool {
        headers.contains { CredentialScope.isCredential(ArraySlice($0.name.utf8)) }
    }
    /// Connect, TLS handshake, stall (no bytes received) and response-head limits. A server that sends
    /// *something* now and then is not stalled: ``lowSpeedLimit`` is what ends it.
    public var timeouts: ConnectionTimeouts {
        get { fields.box.fields.timeouts }
        set { fields.unique.fields.timeouts = newValue }
        _modify { yield &fields.unique.fields.timeouts }
    }
    /// Longest a whole download may take; nil for no limit.
    public var totalTimeout: Duration? {
        get { fields.box.fields.totalTimeout }
        set { fields.unique.fields.totalTimeout = newValue }
        _modify { yield &fields.unique.fields.totalTimeout }
    }
    /// Certificate verification and protocol settings.
    public var tls: TLSSettings {
        get { fields.box.fields.tls }
        set { fields.unique.fields.tls = newValue }
        _modify { yield &fields.unique.fields.tls }
    }
    /// Which redirects to follow.
    public var redirects: RedirectPolicy {
        get { fields.box.fields.redirects }
        set { fields.unique.fields.redirects = newValue }
        _modify { yield &fields.unique.fields.redirects }
    }
    /// Whether to `fdatasync` before the final rename (off: survives a process crash, not a power loss).
    public var synchronizesToDisk: Bool {
        get { fields.box.fields.synchronizesToDisk }
        set { fields.unique.fields.synchronizesToDisk = newValue }
        _modify { yield &fields.unique.fields.synchronizesToDisk }
    }
    /// Most connections one download opens.
    public var connections: Int {
        get { fields.box.fields.connections }
        set { fields.unique.fields.connections = newValue }
        _modify { yield &fields.unique.fields.connections }
    }
    /// Most connections all downloads of the client have open at once; downloads beyond it wait for a slot.
    public var maximumConnections: Int {
        get { fields.box.fields.maximumConnections }
        set { fields.unique.fields.maximumConnections = newValue }
        _modify { yield &fields.unique.fields.maximumConnections }
    }
    /// Smallest piece of the file a connection is given (or steals).
    public var minimumSegment: Int64 {
        get { fields.box.fields.minimumSegment }
        set { fields.unique.fields.minimumSegment = newValue }
        _modify { yield &fields.unique.fields.minimumSegment }
    }
    /// How failed requests are retried.
    public var retry: RetryPolicy {
        get { fields.box.fields.retry }
        set { fields.unique.fields.retry = newValue }
        _modify { yield &fields.unique.fields.retry }
    }
    /// Bytes per second for the whole download, shared by its connections; nil for no limit.
    public var rateLimit: Int64? {
        get { fields.box.fields.rateLimit }
        set { fields.unique.fields.rateLimit = newValue }
        _modify { yield &fields.unique.fields.rateLimit }
    }
    /// A connection slower than this fraction of the median connection rate for `slowWindow` has its
    /// remaining range split off for others.
    public var slowConnectionRatio: Double {
        get { fields.box.fields.slowConnectionRatio }
        set { fields.unique.fields.slowConnectionRatio = newValue }
        _modify { yield &fields.unique.fields.slowConnectionRatio }
    }
    /// How long a connection must stay slow before its range is split.
    public var slowWindow: Duration {
        get { fields.box.fields.slowWindow }
        set { fields.unique.fields.slowWindow = newValue }
        _modify { yield &fields.unique.fields.slowWindow }
    }
    /// A connection that receives less than this rate on average for this long is closed and its range
    /// retried like any failed try (curl's `--speed-limit`/`--speed-time`, per connection), so that it counts
    /// against ``RetryPolicy/triesPerRange`` and ``RetryPolicy/totalRetries``: a server that trickles every
    /// try fails the download.
    ///
    /// On by default (``LowSpeedLimit/standard``: under 100 bytes/s over 60 s): the idle timeout ends only a
    /// connection that sends nothing, and a server that sends a byte a second — or a byte just inside the idle
    /// timeout, or a response head a byte at a time, or `100 Continue` forever — would otherwise hold a
    /// download forever. It watches every connection with a request out, in every phase: waiting for the
    /// head, the probe, a whole-file `200` of known or unknown length, a single-connection download. With
    /// ``rateLimit`` set, the limit is lowered to a quarter of a connection's share of it. nil turns it off.
    public var lowSpeedLimit: LowSpeedLimit? {
        get { fields.box.fields.lowSpeedLimit }
        set { fields.unique.fields.lowSpeedLimit = newValue }
        _modify { yield &fields.unique.fields.lowSpeedLimit }
    }
    /// Most time between two checkpoints of the resume journal.
    public var checkpointInterval: Duration {
        get { fields.box.fields.checkpointInterval }
        set { fields.unique.fields.checkpointInterval = newValue }
        _modify { yield &fields.unique.fields.checkpointInterval }
    }
    /// Most bytes written between two checkpoints: after a crash at most about this much is fetched again.
    public var checkpointBytes: Int64 {
        get { fields.box.fields.checkpointBytes }
        set { fields.unique.fields.checkpointBytes = newValue }
        _modify { yield &fields.unique.fields.checkpointBytes }
    }
    /// How often a running download publishes a ``DownloadProgress`` snapshot.
    public var progressInterval: Duration {
        get { fields.box.fields.progressInterval }
        set { fields.unique.fields.progressInterval = newValue }
        _modify { yield &fields.unique.fields.progressInterval }
    }
    /// Which proxy each origin is reached through (`http://`, `https://`, `socks5://`, `socks5h://`, with
    /// credentials from the proxy URL), and which hosts bypass it; `nil` (the default) connects directly. The
    /// environment is not read implicitly: pass `ProxySettings.fromEnvironment(_:)` to honour `https_proxy`
    /// and friends as curl does.
    public var proxy: ProxySettings? {
        get { fields.box.fields.proxy }
        set { fields.unique.fields.proxy = newValue }
        _modify { yield &fields.unique.fields.proxy }
    }
    /// Whether plain-HTTP bodies of known length are spliced into the file (socket → pipe → file, one copy in
    /// the kernel) rather than read into a buffer and written with `pwrite` (two copies). On by default; TLS,
    /// chunked and close-delimited bodies, streams, memory destinations and rate-limited downloads are always
    /// read. Turn it off to work around a kernel or file system whose `splice` misbehaves.
    public var splicesBodies: Bool {
        get { fields.box.fields.splicesBodies }
        set { fields.unique.fields.splicesBodies = newValue }
        _modify { yield &fields.unique.fields.splicesBodies }
    }
    /// Whether spliced bytes go pipe → file on a writer thread (a blocking-work thread), so that the loop
    /// thread receives while the page-cache copy runs beside it; off, the loop thread moves them itself. On
    /// by default; a switch for measuring and testing both ways.
    package var handsOffSplicedWrites: Bool {
        get { fields.box.fields.handsOffSplicedWrites }
        set { fields.unique.fields.handsOffSplicedWrites = newValue }
    }
    /// Runs on the writer thread before each handed-off write (``handsOffSplicedWrites``): tests hold a
    /// write with it, as a hung disk would.
    package var beforeEachHandedOffWrite: (@Sendable () -> Void)? {
        get { fields.box.fields.beforeEachHandedOffWrite }
        set { fields.unique.fields.beforeEachHandedOffWrite = newValue }
    }
    /// Whether a fresh download may write into a file without a name until it needs one
    /// (``WorkingFileChoice``). The session daemon turns it off: it recognises a finished file after a crash by
    /// the inode of its `NAME.part`, which a file without a name does not have until its finish.
    package var writesUnnamedFiles: Bool {
        get { fields.box.fields.writesUnnamedFiles }
        set { fields.unique.fields.writesUnnamedFiles = newValue }
        _modify { yield &fields.unique.fields.writesUnnamedFiles }
    }
    /// Where connections go and from where, beyond what the URL says — curl's `--resolve`, `--connect-to`,
    /// `-4`/`-6` and `--interface` (`NetworkSettings`); TLS and `Host` keep the URL's host. The client
    /// certificate (`--cert`/`--key`) is `TLSSettings.clientCertificate` in ``tls``. Pooled keep-alive
    /// connections are reused only under the settings they were made with. The default changes nothing.
    ///
    /// ```swift
    /// var options = DownloadOptions()
    /// options.network.resolve = [try ResolveRule(parsing: "example.org:443:192.0.2.10")]
    /// options.network.addressFamily = .ipv4
    /// options.tls.clientCertificate = TLSSettings.ClientCertificate(certificateFile: "client.pem", keyFile: "client.key")
    /// ```
    public var network: NetworkSettings {
        get { fields.box.fields.network }
        set { fields.unique.fields.network = newValue }
        _modify { yield &fields.unique.fields.network }
    }
    /// The largest file a download may produce, in bytes (curl's `--max-filesize`); nil, the default, for no
    /// limit. A resource whose announced length is larger is refused before any of its body is written; one
    /// sent without a length (chunked, or delimited by the connection's close) is stopped by the first bytes
    /// that would take it past the limit, and its partial file is removed. Both end with
    /// ``HaulError/Reason/responseTooLarge(url:limit:length:)``. A download into memory is held to the smaller of
    /// this and its own limit. A download resumed from its journal is not checked again: its length was known
    /// when it began.
    public var maximumFileSize: Int64? {
        get { fields.box.fields.maximumFileSize }
        set { fields.unique.fields.maximumFileSize = newValue }
        _modify { yield &fields.unique.fields.maximumFileSize }
    }
    /// How many event-loop threads the client runs its downloads on: 1 by default (every download on one
    /// thread, as the client has always run them); values below 1 count as 1.
    ///
    /// Each loop has its own keep-alive pool and TLS session cache. A download runs on one loop from its start
    /// to its end: the loop with the fewest downloads running when it starts, the first one on a tie — so
    /// downloads made one after another all run on the first loop and reuse its kept-alive connection, and
    /// only downloads that run at the same time spread. More than one loop pays off for many downloads at once
    /// (a list of small files, where one thread's CPU is the limit) on a machine with a core to spare per loop;
    /// one large download gains nothing, since its connections share its loop. ``maximumConnections`` stays
    /// one cap for all loops together. The `haul` command uses one loop per core, up to 4, when it runs more
    /// than one download at once.
    public var eventLoops: Int {
        get { fields.box.fields.eventLoops }
        set { fields.unique.fields.eventLoops = newValue }
        _modify { yield &fields.unique.fields.eventLoops }
    }

    /// Every stored field in one copy-on-write box (`CopyOnWrite`): each download copies its client's options
    /// more than once, and a copy then retains one object instead of each of its strings, arrays and settings.
    private var fields: CopyOnWrite<Fields>

    private struct Fields: Sendable {
        var userAgent: String
        var headers: [(name: String, value: String)]
        var timeouts: ConnectionTimeouts
        var totalTimeout: Duration?
        var tls: TLSSettings
        var redirects: RedirectPolicy
        var synchronizesToDisk: Bool
        var connections: Int
        var maximumConnections: Int
        var minimumSegment: Int64
        var retry: RetryPolicy
        var rateLimit: Int64?
        var slowConnectionRatio: Double
        var slowWindow: Duration
        var lowSpeedLimit: LowSpeedLimit?
        var checkpointInterval: Duration
        var checkpointBytes: Int64
        var progressInterval: Duration
        var proxy: ProxySettings?
        var splicesBodies: Bool = true
        var handsOffSplicedWrites: Bool = true
        var beforeEachHandedOffWrite: (@Sendable () -> Void)? = nil
        var writesUnnamedFiles: Bool = true
        var network: NetworkSettings = NetworkSettings()
        var maximumFileSize: Int64? = nil
        var eventLoops: Int = 1
    }

    /// Options with defaults suited to one fast download: 8 connections, 1 MiB minimum segment, durable
    /// writes, a checkpoint every second or 32 MiB. Every wait has an end by default: 10 s to connect and to
    /// handshake, 30 s without a byte or for a response head, a connection under 100 bytes/s for 60 s is
    /// retried, a `Retry-After` of more than 60 s fails the try, and tries are counted (``RetryPolicy``).
    public init(
        userAgent: String = "haul/0.2.0",
        headers: [(name: String, value: String)] = [],
        timeouts: ConnectionTimeouts = ConnectionTimeouts(connect: .seconds(10), tlsHandshake: .seconds(10), idle: .seconds(30)),
        totalTimeout: Duration? = nil,
        tls: TLSSettings = TLSSettings(),
        redirects: RedirectPolicy = RedirectPolicy(),
        synchronizesToDisk: Bool = true,
        connections: Int = 8,
        maximumConnections: Int = 64,
        minimumSegment: Int64 = 1 << 20,
        retry: RetryPolicy = RetryPolicy(),
        rateLimit: Int64? = nil,
        slowConnectionRatio: Double = 0.25,
        slowWindow: Duration = .seconds(5),
        lowSpeedLimit: LowSpeedLimit? = .standard,
        checkpointInterval: Duration = .seconds(1),
        checkpointBytes: Int64 = 32 << 20,
        progressInterval: Duration = .milliseconds(200),
        proxy: ProxySettings? = nil
    ) {
        fields = CopyOnWrite(Fields(
            userAgent: userAgent, headers: headers, timeouts: timeouts, totalTimeout: totalTimeout, tls: tls,
            redirects: redirects, synchronizesToDisk: synchronizesToDisk, connections: max(1, connections),
            maximumConnections: max(1, maximumConnections), minimumSegment: max(1, minimumSegment), retry: retry,
            rateLimit: rateLimit, slowConnectionRatio: slowConnectionRatio, slowWindow: slowWindow,
            lowSpeedLimit: lowSpeedLimit, checkpointInterval: checkpointInterval, checkpointBytes: max(1, checkpointBytes),
            progressInterval: progressInterval, proxy: proxy))
    }

    /// The stored fields, as a struct's (what `print` and `dump` show), not the box that holds them.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: fields.value).children, displayStyle: .struct)
    }

    /// Whether `self` and `other` share one box of fields (for tests of copy-on-write).
    func sharesStorage(with other: DownloadOptions) -> Bool { fields.sharesStorage(with: other.fields) }
}

/// What to do when a resource changes on the server during (or between parts of) a download.
public enum ChangePolicy: String, Sendable, Hashable {
    /// Stop with ``HaulError/changedOnServer(url:detail:)``; nothing already written is mixed with new bytes.
    case fail
    /// Discard what was downloaded and start again from the first byte.
    case restart
}

/// An expected whole-file digest, e.g. `sha256=9f86d0...`.
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The digest function.
    public var algorithm: DigestAlgorithm
    /// Lowercase hex.
    public var hex: String

    /// A checksum from a digest in hex (any case).
    public init(algorithm: DigestAlgorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    /// Parses `ALGO=HEX` (sha256, sha512, sha1 or md5; aria2's spellings `sha-256`, `sha-512`, `sha-1` too).
    /// A malformed checksum is an error, never a checksum quietly left out: a digest one character short
    /// must not turn verification off.
    public init(_ text: String) throws(ChecksumFormatError) {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let algorithm = Self.algorithm(named: parts[0]) else {
            throw ChecksumFormatError(text: text, reason: "not ALGO=HEX with ALGO sha256, sha512, sha1 or md5")
        }
        let hex = parts[1].lowercased()
        guard hex.count == algorithm.byteCount * 2 else {
            throw ChecksumFormatError(text: text, reason: "a \(algorithm.rawValue) digest has \(algorithm.byteCount * 2) hex digits, not \(hex.count)")
        }
        guard hex.allSatisfy({ $0.isHexDigit }) else {
            throw ChecksumFormatError(text: text, reason: "the digest has a character that is not a hex digit")
        }
        self.init(algorithm: algorithm, hex: hex)
    }

    public var description: String { "\(algorithm.rawValue)=\(hex)" }

    /// `sha256` or aria2's `sha-256` (any case); nil for a name that is neither.
    static func algorithm(named name: Substring) -> DigestAlgorithm? {
        let lowered = name.lowercased()
        if let algorithm = DigestAlgorithm(rawValue: lowered) { return algorithm }
        // aria2 writes the SHA family with a hyphen (its --checksum=sha-256=HEX); md5 has none.
        guard lowered.hasPrefix("sha-") else { return nil }
        return DigestAlgorithm(rawValue: "sha" + lowered.dropFirst(4))
    }
}

/// Why a `ALGO=HEX` checksum text is not one.
public struct ChecksumFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let reason: String

    public var description: String { "checksum \"\(text)\": \(reason)" }
}
