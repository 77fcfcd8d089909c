import HaulIO

/// A token bucket shared by every connection of a download: reads pause once the budget is spent.
///
/// Loop-confined. The bucket holds at most a tenth of a second of traffic (at least 64 KiB), which keeps
/// bursts short without reading in tiny pieces.
final class RateLimiter {
    let bytesPerSecond: Int64
    private let capacity: Double
    private var tokens: Double
    private var refilledAt: MonotonicInstant

    init(bytesPerSecond: Int64) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        capacity = max(64 * 1024, Double(bytesPerSecond) / 10)
        tokens = capacity
        refilledAt = .now()
    }

    /// Spends `count` bytes; returns how long reading should pause before more may be spent, if at all.
    func spend(_ count: Int) -> Duration? {
        let now = MonotonicInstant.now()
        tokens = min(capacity, tokens + Double(now.nanoseconds(since: refilledAt)) / 1e9 * Double(bytesPerSecond))
        refilledAt = now
        tokens -= Double(count)
        guard tokens < 0 else { return nil }
        return .nanoseconds(Int64(-tokens / Double(bytesPerSecond) * 1e9))
    }
}
