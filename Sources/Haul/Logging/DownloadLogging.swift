import Logging

// Haul logs like AsyncHTTPClient: request-level events at `debug` (`trace` for the chattier ones), with
// metadata an embedder can filter on, and nothing at all unless a `Logger` is given. Nothing is logged per
// byte or per read: the busiest points are one line per request sent and per response head, a few hundred
// for a 1 GiB file. With the default logger each of them costs one level check (the message and metadata
// are autoclosures that are never evaluated). Nothing is logged above `notice`: ``HaulClient/start(_:logger:)``
// relies on it to skip the per-download metadata for a logger set higher.

extension Logger {
    /// The logger a client without one uses: it drops everything, and its level (`critical`) makes every
    /// `debug` call return after one comparison.
    static let haulDisabled = Logger(label: "haul.disabled", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// The metadata keys Haul's log records carry (all under `haul.`).
enum LogKey {
    /// A number for the download, unique within its client; on every record of that download.
    static let download = "haul.download.id"
    /// The URL a request went to (after redirects).
    static let url = "haul.url"
    /// The `Range` header a request carried, or the range a decision is about.
    static let range = "haul.range"
    /// Which of the download's connections (0 is the first; ids are reused when a connection is replaced).
    static let connection = "haul.connection"
    /// 1 for a first try, 2 for the first retry of the same work, and so on.
    static let attempt = "haul.attempt"
    /// Status code of a response.
    static let status = "haul.status"
    /// Why something happened (the error a retry answers, say).
    static let reason = "haul.reason"
}

extension Range where Bound == Int64 {
    /// `first-last`, as in a `Range` header (empty ranges as `first-`).
    var logText: String { isEmpty ? "\(lowerBound)-" : "\(lowerBound)-\(upperBound - 1)" }
}
