/// The one retry policy: which failures are retried, how often, and how long to wait.
///
/// Waits double from `baseDelay` up to `maxDelay`, each drawn at random between half and all of its step
/// ("equal jitter": never shorter than half the step, yet many connections failing together do not come
/// back together); a server's `Retry-After` is honoured up to `maxRetryAfter`.
public struct RetryPolicy: Sendable, Hashable {
    /// Tries for one range before its mirror counts as failed (the first try included).
    public var triesPerRange: Int
    /// Retries allowed across the whole download.
    public var totalRetries: Int
    /// First wait.
    public var baseDelay: Duration
    /// Longest computed wait.
    public var maxDelay: Duration
    /// Longest `Retry-After` honoured; a server asking for more fails the try instead.
    public var maxRetryAfter: Duration

    /// The default: 5 tries per range, 100 retries per download, waits from 250 ms up to 10 s.
    public init(triesPerRange: Int = 5, totalRetries: Int = 100, baseDelay: Duration = .milliseconds(250),
                maxDelay: Duration = .seconds(10), maxRetryAfter: Duration = .seconds(120)) {
        self.triesPerRange = triesPerRange
        self.totalRetries = totalRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// No retries at all.
    public static let none = RetryPolicy(triesPerRange: 1, totalRetries: 0)

    /// Whether `error` is worth another try: ``HaulError/isTransient`` — network failures, timeouts,
    /// truncation, malformed or faulty responses (a lying range is tried again), 408, 429 and 5xx. Other
    /// 4xx, TLS verification failures, proxy authentication failures and local errors are not.
    public func isRetriable(_ error: HaulError) -> Bool { error.isTransient }

    /// The wait before retry number `attempt` (1 for the first retry), or the server's `retryAfter`.
    public func delay(attempt: Int, retryAfter: Duration? = nil) -> Duration {
        if let retryAfter { return min(retryAfter, maxRetryAfter) }
        var step = baseDelay
        for _ in 1..<max(1, attempt) where step < maxDelay { step = step * 2 }
        step = min(step, maxDelay)
        let fraction = Double.random(in: 0.5...1.0)
        return step * fraction
    }
}
