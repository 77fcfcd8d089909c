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
}
