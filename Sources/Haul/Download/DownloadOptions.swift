/// Settings for downloads: identity, limits, TLS and redirects.
public struct DownloadOptions: Sendable {
    /// Sent as `User-Agent`.
    public var userAgent: String
    /// Extra request headers, sent in order (validated: no CR/LF, no framing headers).
    public var headers: [(name: String, value: String)]
    /// Connect, TLS handshake and stall (no bytes received) limits.
    public var timeouts: ConnectionTimeouts
    /// Longest a whole download may take; nil for no limit.
    public var totalTimeout: Duration?
    /// Certificate verification and protocol settings.
    public var tls: TLSConfiguration
    /// Which redirects to follow.
    public var redirects: RedirectPolicy
    /// Whether an existing destination file may be replaced.
    public var replaceExisting: Bool
    /// Whether to `fdatasync` before the final rename (off: survives a process crash, not a power loss).
    public var synchronizesToDisk: Bool
    /// Most connections one download opens.
    public var connections: Int
    /// Smallest piece of the file a connection is given (or steals).
    public var minimumSegment: Int64
    /// How failed requests are retried.
    public var retry: RetryPolicy
    /// What to do when the file changes on the server mid-download.
    public var onChange: ChangePolicy
    /// Bytes per second for the whole download, shared by its connections; nil for no limit.
    public var rateLimit: Int64?
    /// A checksum the finished file must have; on mismatch the file stays `.part`.
    public var checksum: Checksum?
    /// A connection slower than this fraction of the median connection rate for `slowWindow` has its
    /// remaining range split off for others.
    public var slowConnectionRatio: Double
    /// How long a connection must stay slow before its range is split.
    public var slowWindow: Duration
    /// Most time between two checkpoints of the resume journal.
    public var checkpointInterval: Duration
    /// Most bytes written between two checkpoints: after a crash at most about this much is fetched again.
    public var checkpointBytes: Int64

    public init(
        userAgent: String = "haul/0.1",
        headers: [(name: String, value: String)] = [],
        timeouts: ConnectionTimeouts = ConnectionTimeouts(connect: .seconds(10), tlsHandshake: .seconds(10), idle: .seconds(30)),
        totalTimeout: Duration? = nil,
        tls: TLSConfiguration = TLSConfiguration(),
        redirects: RedirectPolicy = RedirectPolicy(),
        replaceExisting: Bool = true,
        synchronizesToDisk: Bool = true,
        connections: Int = 8,
        minimumSegment: Int64 = 1 << 20,
        retry: RetryPolicy = RetryPolicy(),
        onChange: ChangePolicy = .fail,
        rateLimit: Int64? = nil,
        checksum: Checksum? = nil,
        slowConnectionRatio: Double = 0.25,
        slowWindow: Duration = .seconds(5),
        checkpointInterval: Duration = .seconds(1),
        checkpointBytes: Int64 = 32 << 20
    ) {
        self.userAgent = userAgent
        self.headers = headers
        self.timeouts = timeouts
        self.totalTimeout = totalTimeout
        self.tls = tls
        self.redirects = redirects
        self.replaceExisting = replaceExisting
        self.synchronizesToDisk = synchronizesToDisk
        self.connections = max(1, connections)
        self.minimumSegment = max(1, minimumSegment)
        self.retry = retry
        self.onChange = onChange
        self.rateLimit = rateLimit
        self.checksum = checksum
        self.slowConnectionRatio = slowConnectionRatio
        self.slowWindow = slowWindow
        self.checkpointInterval = checkpointInterval
        self.checkpointBytes = max(1, checkpointBytes)
    }
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
    public var algorithm: DigestAlgorithm
    /// Lowercase hex.
    public var hex: String

    public init(algorithm: DigestAlgorithm, hex: String) {
        self.algorithm = algorithm
        self.hex = hex.lowercased()
    }

    /// Parses `ALGO=HEX` (sha256, sha1 or md5); nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let algorithm = DigestAlgorithm(rawValue: parts[0].lowercased()) else { return nil }
        let hex = parts[1].lowercased()
        guard hex.count == algorithm.byteCount * 2, hex.allSatisfy({ $0.isHexDigit }) else { return nil }
        self.init(algorithm: algorithm, hex: hex)
    }

    public var description: String { "\(algorithm.rawValue)=\(hex)" }
}

/// What a finished download produced.
public struct DownloadResult: Sendable {
    /// The completed file.
    public var path: String
    /// Bytes written.
    public var bytes: Int64
    /// Wall time from the first request to the rename.
    public var duration: Duration
    /// The URL that finally answered, after redirects.
    public var finalURL: HTTPURL
    /// The final response's strong or weak entity tag.
    public var entityTag: EntityTag?
    /// The final response's Last-Modified.
    public var lastModified: HTTPDate?
    /// Redirects followed.
    public var redirects: Int
    /// Connections used at the same time, at most.
    public var connections: Int
    /// Bytes requested from servers in all (equal to `bytes` when nothing was fetched twice).
    public var bytesRequested: Int64
    /// Retries made.
    public var retries: Int
}
