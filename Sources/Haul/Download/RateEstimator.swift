import HaulIO

/// The current download rate: bytes over a sliding window of recent samples, so that the rate follows
/// changes within seconds without jumping at every read.
struct RateEstimator {
    /// How far back the rate looks.
    static let window: UInt64 = 3_000_000_000
    private var samples: [(at: MonotonicInstant, bytes: Int64)] = []

    mutating func record(bytes: Int64, at instant: MonotonicInstant) {
        samples.append((instant, bytes))
        while samples.count > 2, instant.nanoseconds(since: samples[1].at) >= Self.window { samples.removeFirst() }
    }

    /// Bytes per second over the window; 0 until two samples exist.
    var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last, last.at > first.at else { return 0 }
        return Double(last.bytes - first.bytes) / (Double(last.at.nanoseconds(since: first.at)) / 1e9)
    }
}
