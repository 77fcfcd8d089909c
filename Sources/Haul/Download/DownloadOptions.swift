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

    public init(
        userAgent: String = "haul/0.1",
        headers: [(name: String, value: String)] = [],
        timeouts: ConnectionTimeouts = ConnectionTimeouts(connect: .seconds(10), tlsHandshake: .seconds(10), idle: .seconds(30)),
        totalTimeout: Duration? = nil,
        tls: TLSConfiguration = TLSConfiguration(),
        redirects: RedirectPolicy = RedirectPolicy(),
        replaceExisting: Bool = true,
        synchronizesToDisk: Bool = true
    ) {
        self.userAgent = userAgent
        self.headers = headers
        self.timeouts = timeouts
        self.totalTimeout = totalTimeout
        self.tls = tls
        self.redirects = redirects
        self.replaceExisting = replaceExisting
        self.synchronizesToDisk = synchronizesToDisk
    }
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
}
