/// Once a second, which connections are too slow: those far below the median (their unrequested range is
/// split off for faster ones, so the tail does not wait on them), and those under the user's low-speed
/// limit (curl's `--speed-limit`/`--speed-time`; closed and retried like any failed connection). Pure: it
/// sees byte counters, not sockets.
struct ConnectionSpeedWatch {
    /// Seconds a connection must stay slow before its range is split.
    let window: Int
    /// "Slow" is below this fraction of the median rate.
    let slowRatio: Double
    let lowSpeed: LowSpeedLimit?
    /// Bytes written by each connection, sampled once a second, oldest first.
    private var samples: [Int: [Int64]] = [:]

    init(window: Int, slowRatio: Double, lowSpeed: LowSpeedLimit?) {
        self.window = window
        self.slowRatio = slowRatio
        self.lowSpeed = lowSpeed
    }

    struct Verdict: Equatable {
        /// Connections whose range should shrink, with how many bytes to leave them (about a second's worth,
        /// likely already in flight).
        var split: [(connection: Int, keep: Int64)]
        /// Connections under the low-speed limit for its whole duration.
        var belowLimit: [Int]

        static func == (a: Verdict, b: Verdict) -> Bool {
            a.belowLimit == b.belowLimit && a.split.map(\.connection) == b.split.map(\.connection)
                && a.split.map(\.keep) == b.split.map(\.keep)
        }
    }

    /// Records one sample per connection that is transferring (`written`: its byte counter) and decides.
    /// Connections missing from `written` are idle or waiting: their history is dropped.
    mutating func tick(written: [Int: Int64]) -> Verdict {
        let keepSamples = max(window, lowSpeed?.seconds ?? 0) + 1
        samples = samples.filter { written[$0.key] != nil }
        for (connection, bytes) in written {
            var history = samples[connection] ?? []
            history.append(bytes)
            if history.count > keepSamples { history.removeFirst(history.count - keepSamples) }
            samples[connection] = history
        }
        var verdict = Verdict(split: [], belowLimit: [])
        if let lowSpeed {
            for (connection, history) in samples.sorted(by: { $0.key < $1.key }) where history.count > lowSpeed.seconds {
                let moved = history.last! - history[history.count - 1 - lowSpeed.seconds]
                if moved < lowSpeed.bytesPerSecond * Int64(lowSpeed.seconds) { verdict.belowLimit.append(connection) }
            }
        }
        guard window > 0 else { return verdict }
        let rates = samples.filter { $0.value.count > window }.mapValues { $0.last! - $0[$0.count - 1 - window] }
        guard rates.count >= 2 else { return verdict }
        let median = rates.values.sorted()[rates.count / 2]
        for (connection, rate) in rates.sorted(by: { $0.key < $1.key }) where Double(rate) < Double(median) * slowRatio {
            verdict.split.append((connection, max(64 * 1024, rate / Int64(window))))
        }
        return verdict
    }

    /// Starts a connection's history over (its range was just split, or it begins new work).
    mutating func forget(_ connection: Int) {
        samples[connection] = nil
    }
}

/// Below `bytesPerSecond` for `seconds` seconds in a row, a connection is given up and its range retried.
public struct LowSpeedLimit: Sendable, Hashable {
    public var bytesPerSecond: Int64
    public var seconds: Int

    /// curl's `--speed-limit BYTES --speed-time SECONDS`.
    public init(bytesPerSecond: Int64, seconds: Int) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.seconds = max(1, seconds)
    }
}
