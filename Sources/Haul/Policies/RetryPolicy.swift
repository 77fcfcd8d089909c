/// The one retry policy: which failures are retried, how often, and how long to wait.
///
/// Waits double from `baseDelay` up to `maxDelay`, each drawn at random between half and all of its step
/// ("equal jitter": never shorter than half the step, yet many connections failing together do not come
/// back together). A server's `Retry-After` on a failing response (any form: seconds or an HTTP-date, on
/// a 503, a 429 or any other status that is retried) is honoured up to `maxRetryAfter`; a server that asks
/// for longer fails the try at once with ``HaulError/Reason/retryAfterTooLong(url:status:asked:limit:)``,
/// which counts like any failed try: retried after the policy's own backoff within `triesPerRange` and
/// `totalRetries`, then another mirror or the end of the download with that error. Waiting as long as a
/// server asks would let it hold a download for as long as it likes; refusing the whole download on one
/// such answer would let one misconfigured node of many end it.
public struct RetryPolicy: Sendable, Hashable {
    /// Tries for one range before its mirror counts as failed (the first try included).
    public var triesPerRange: Int
    /// Retries allowed across the whole download.
    public var totalRetries: Int
    /// First wait.
    public var baseDelay: Duration
    /// Longest computed wait.
    public var maxDelay: Duration
    /// Longest `Retry-After` honoured; a server asking for more fails the try at once (see above).
    public var maxRetryAfter: Duration

    /// The longest `Retry-After` honoured by default: a minute, long enough for a server restarting or
    /// shedding load to come back, short enough that a download asked to wait longer says so while the
    /// person who started it is still there.
    public static let defaultMaxRetryAfter: Duration = .seconds(60)

    /// The default: 5 tries per range, 100 retries per download, waits from 250 ms up to 10 s, a
    /// `Retry-After` of up to 60 s.
    public init(triesPerRange: Int = 5, totalRetries: Int = 100, baseDelay: Duration = .milliseconds(250),
                maxDelay: Duration = .seconds(10), maxRetryAfter: Duration = RetryPolicy.defaultMaxRetryAfter) {
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

    /// The wait before retry number `attempt` (1 for the first retry), or the server's `retryAfter` (never
    /// more than `maxRetryAfter`: `serverWait(after:retryAfter:)` has turned a longer one into a failure).
    public func delay(attempt: Int, retryAfter: Duration? = nil) -> Duration {
        if let retryAfter { return min(retryAfter, maxRetryAfter) }
        var step = baseDelay
        for _ in 1..<max(1, attempt) where step < maxDelay { step = step * 2 }
        step = min(step, maxDelay)
        let fraction = Double.random(in: 0.5...1.0)
        return step * fraction
    }

    /// What a response's `Retry-After` (`retryAfter`, already turned into a delay from now) means for a try
    /// that failed with `error`: the wait to honour (nil: none asked, or not about this failure), or the
    /// failure the try ends with instead when the server asks for longer than `maxRetryAfter`.
    ///
    /// Only the response's own status failure carries it: a 200 that announced `Retry-After` and was then cut
    /// off is retried on the usual backoff.
    func serverWait(after error: HaulError, retryAfter: Duration?) -> Result<Duration?, HaulError> {
        guard let retryAfter, case .httpStatus(let status, _, let url) = error.reason, isRetriable(error) else {
            return .success(nil)
        }
        guard retryAfter <= maxRetryAfter else {
            return .failure(HaulError.retryAfterTooLong(url: url, status: status, asked: retryAfter, limit: maxRetryAfter)
                .adding(url: error.url, attempts: error.attempts))
        }
        return .success(retryAfter)
    }
}
