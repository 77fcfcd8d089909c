/// What a finished download produced.
public struct DownloadResult: Sendable {
    /// The completed file.
    /// (`-` for a download delivered to a stream.)
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
