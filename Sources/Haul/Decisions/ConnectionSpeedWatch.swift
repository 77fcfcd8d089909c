/// Once a second, which connections are too slow: those far below the median (their unrequested range is
/// split off for faster ones, so the tail does not wait on them), and those under the low-speed limit
/// (curl's `--speed-limit`/`--speed-time`; closed and retried like any failed connection). Pure: it
/// sees byte counters, not sockets.
///
/// The low-speed limit watches every connection with a request out, whatever it is waiting for: the
/// response head (dripped, or `100 Continue` forever: no body byte comes), a probe, a whole-file `200` of
/// known or unknown length, a body it drains after its range is done. So however a server holds a
/// connection, the connection ends; the idle and head timeouts catch the quiet cases sooner.
struct ConnectionSpeedWatch {
    /// Seconds a connection must stay slow before its range is split.
    let window: Int
    /// "Slow" is below this fraction of the median rate.
    let slowRatio: Double
    let lowSpeed: LowSpeedLimit?
    /// Body bytes received by each connection, sampled once a second, oldest first.
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

    /// Records one sample per connection with a request out (`received`: its counter of body bytes received,
    /// whatever became of them) and decides. Only connections in `splittable` (those writing a range that
    /// others may take over) are weighed against the median; every one in `received` is held to the low-speed
    /// limit. Connections missing from `received` rest or wait to retry: their history is dropped. Those in
    /// `paused` are held back by haul itself (a rate limit, the checkpoints): their history is kept but this
    /// second is not counted, neither for nor against them.
    mutating func tick(received: [Int: Int64], splittable: Set<Int>, paused: Set<Int> = []) -> Verdict {
        let keepSamples = max(window, lowSpeed?.seconds ?? 0) + 1
        samples = samples.filter { received[$0.key] != nil }
        for (connection, bytes) in received where !paused.contains(connection) {
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
        let rates = samples.filter { splittable.contains($0.key) && $0.value.count > window }.mapValues { $0.last! - $0[$0.count - 1 - window] }
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

/// Below `bytesPerSecond` on average over `seconds` seconds, a connection is given up and its range retried
/// (libcurl's low-speed check: `CURLOPT_LOW_SPEED_LIMIT`/`CURLOPT_LOW_SPEED_TIME`, per connection).
public struct LowSpeedLimit: Sendable, Hashable {
    public var bytesPerSecond: Int64
    public var seconds: Int

    /// curl's `--speed-limit BYTES --speed-time SECONDS`.
    public init(bytesPerSecond: Int64, seconds: Int) {
        self.bytesPerSecond = max(1, bytesPerSecond)
        self.seconds = max(1, seconds)
    }

    /// The default (``DownloadOptions/lowSpeedLimit``): under 100 bytes a second over a minute.
    ///
    /// curl, aria2 and wget set no such limit by default (curl's `--speed-limit`, aria2's
    /// `--lowest-speed-limit` are off), and their stall timeouts (aria2's `--timeout` 60 s, wget's
    /// `--read-timeout` 900 s) end only a connection that sends nothing at all: one byte a second holds them
    /// forever. dnf sets 1000 bytes/s over 30 s for its single connection per file; haul shares a link among
    /// up to 8 connections, so the floor is lower — a 1 KB/s link shared 8 ways still passes — and the time
    /// longer, aria2's minute, so that a moment of congestion is not a failure. The limit is there to end a
    /// held connection, not to judge a slow server: a retry does not make a slow server faster, it only
    /// spends the tries of a download that would have finished (the median split handles a slow tail).
    public static let standard = LowSpeedLimit(bytesPerSecond: 100, seconds: 60)

    /// This limit as it applies to a download paced by a rate limit (`rateLimit` bytes a second shared by up
    /// to `connections`): never above a quarter of a connection's share, so that haul's own pacing is never
    /// taken for a slow server.
    func allowing(rateLimit: Int64?, connections: Int) -> LowSpeedLimit {
        guard let rateLimit else { return self }
        let share = rateLimit / Int64(max(1, connections)) / 4
        return LowSpeedLimit(bytesPerSecond: min(bytesPerSecond, share), seconds: seconds)
    }
}
