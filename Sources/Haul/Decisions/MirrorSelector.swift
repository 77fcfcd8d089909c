/// Which mirror a connection uses, by each mirror's measured speed (the idea of aria2's
/// `--uri-selector=adaptive`). Pure: it sees bytes written and the once-a-second tick, never a clock or a
/// socket; with one mirror every answer is that mirror.
///
/// **Measuring.** The bytes written for each mirror between two ticks, divided by the connections that wrote
/// them, are one sample of the mirror's per-connection rate; the estimate is an exponentially smoothed
/// average of its samples (``smoothing``). A second in which haul held reads back itself (a rate limit, the
/// checkpoints) is not counted: it would measure haul. A mirror counts as *measured* once it has written in
/// ``minimumSamples`` seconds or at least one request's worth of bytes (``minimumBytes``). A mirror left
/// without connections keeps its last estimate.
///
/// **Choosing**, whenever a connection takes new work (a fresh connection, its next request, work taken from
/// another connection; not a retry, which ``FailurePolicy`` places):
/// 1. A live mirror that has never had a connection gets it (its trial), except in the last round of
///    requests (when the remaining bytes are at most one request per connection).
/// 2. A connection on a mirror not yet measured stays there until it is.
/// 3. Otherwise it goes to the measured mirror whose connections get the most bytes each — but stays where it
///    is unless that mirror is at least ``switchRatio`` times faster. Connections thus gather where a
///    connection gets the most, which gives faster mirrors more of the remaining work; a mirror whose speed is
///    its server's total (not per connection) gets slower per connection as connections join it, so they
///    spread again.
///
/// **Far slower mirrors and the tail.** A measured mirror slower than a quarter (``slowRatio``) of the fastest
/// measured mirror's per-connection rate is *far slower*. It gets none of the tail: no new work once the
/// remaining bytes are fewer than the fastest mirror would fetch, on every connection, in the time the slow
/// mirror takes for one request (before that, rule 3 already moves its connections away at their next
/// request). A request of a far slower mirror already under way is withdrawn (its written bytes kept, the
/// rest handed back to the planner) when it would need more than ``longestFarSlowerRequest`` seconds more,
/// or, in the tail, when the others could fetch everything that remains before it would finish its part.
struct MirrorSelector: Equatable {
    /// Weight of the newest sample in the smoothed estimate.
    static let smoothing = 0.5
    /// Seconds with bytes written after which a mirror's estimate counts (unless ``minimumBytes`` came sooner).
    static let minimumSamples = 2
    /// "Far slower": below the fastest mirror's per-connection rate divided by this.
    static let slowRatio = 4.0
    /// A connection leaves its mirror for one at least this much faster per connection.
    static let switchRatio = 1.5
    /// Seconds a far slower mirror's request may still need before it is withdrawn anyway (a new request on a
    /// mirror at least 4× faster fetches the same in under a quarter of that, plus one round trip).
    static let longestFarSlowerRequest = 2.0

    struct Estimate: Equatable {
        /// Bytes per second and connection, smoothed.
        var rate: Double
        var samples: Int
        var bytes: Int64
    }

    /// Bytes of one request: as many measure a mirror, and the tail is reckoned in them.
    let minimumBytes: Int64
    private(set) var estimates: [Estimate?]
    private(set) var tried: [Bool]
    private var pendingBytes: [Int64]
    private var pendingWriters: [Set<Int>]

    init(mirrorCount: Int, requestBytes: Int64) {
        minimumBytes = max(1, requestBytes)
        estimates = Array(repeating: nil, count: mirrorCount)
        tried = Array(repeating: false, count: mirrorCount)
        pendingBytes = Array(repeating: 0, count: mirrorCount)
        pendingWriters = Array(repeating: [], count: mirrorCount)
    }

    /// A connection was placed on `mirror`: its trial has begun.
    mutating func noteUse(of mirror: Int) {
        if tried.indices.contains(mirror) { tried[mirror] = true }
    }

    /// `count` body bytes written by `connection` from `mirror`.
    mutating func record(_ count: Int64, from mirror: Int, connection: Int) {
        guard pendingBytes.indices.contains(mirror), count > 0 else { return }
        pendingBytes[mirror] += count
        pendingWriters[mirror].insert(connection)
    }

    /// One second is over: its bytes become one sample per mirror that wrote any (`counting` false: the
    /// second is dropped, haul held reads back itself).
    mutating func tick(counting: Bool = true) {
        for mirror in pendingBytes.indices {
            defer { pendingBytes[mirror] = 0; pendingWriters[mirror] = [] }
            guard counting, pendingBytes[mirror] > 0, !pendingWriters[mirror].isEmpty else { continue }
            let sample = Double(pendingBytes[mirror]) / Double(pendingWriters[mirror].count)
            if var estimate = estimates[mirror] {
                estimate.rate += Self.smoothing * (sample - estimate.rate)
                estimate.samples += 1
                estimate.bytes += pendingBytes[mirror]
                estimates[mirror] = estimate
            } else {
                estimates[mirror] = Estimate(rate: sample, samples: 1, bytes: pendingBytes[mirror])
            }
        }
    }

    /// The mirror's per-connection rate once it counts; nil before.
    func measuredRate(_ mirror: Int) -> Double? {
        guard estimates.indices.contains(mirror), let estimate = estimates[mirror],
              estimate.samples >= Self.minimumSamples || estimate.bytes >= minimumBytes else { return nil }
        return estimate.rate
    }

    /// The highest measured per-connection rate among `live` mirrors.
    func fastestRate(among live: [Int]) -> Double? {
        live.compactMap(measuredRate).max()
    }

    /// Whether `mirror` is measured and slower than the fastest measured one by ``slowRatio`` or more.
    func isFarSlower(_ mirror: Int, among live: [Int]) -> Bool {
        guard let rate = measuredRate(mirror), let fastest = fastestRate(among: live) else { return false }
        return rate * Self.slowRatio < fastest
    }

    /// Whether `mirror` gets no new work: far slower, and `remaining` bytes are fewer than the fastest mirror
    /// fetches on `connections` connections while this one fetches one request.
    func isExcludedFromTail(_ mirror: Int, among live: [Int], remaining: Int64, connections: Int) -> Bool {
        guard isFarSlower(mirror, among: live), let rate = measuredRate(mirror), let fastest = fastestRate(among: live) else {
            return false
        }
        let secondsForOneRequest = Double(minimumBytes) / max(rate, 1)
        return Double(remaining) < fastest * Double(max(1, connections)) * secondsForOneRequest
    }

    /// The mirror for a connection on `current` that takes new work, among the `live` ones.
    func choose(current: Int, live: [Int], remaining: Int64, connections: Int) -> Int {
        guard live.count > 1 else { return live.first ?? current }
        let candidates = live.filter { !isExcludedFromTail($0, among: live, remaining: remaining, connections: connections) }
        let lastRound = remaining <= minimumBytes * Int64(max(1, connections))
        if !lastRound, let untried = candidates.first(where: { !tried[$0] }) { return untried }
        let currentCounts = candidates.contains(current)
        if currentCounts, measuredRate(current) == nil { return current }
        let best = candidates.compactMap { mirror in measuredRate(mirror).map { (mirror, $0) } }
            .max { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 > $1.0 }
        guard let best else { return currentCounts ? current : candidates.first ?? current }
        if currentCounts, let rate = measuredRate(current), rate * Self.switchRatio >= best.1 { return current }
        return best.0
    }

    /// Whether a request on `mirror` with `inFlight` bytes still to come is withdrawn: the mirror is far slower,
    /// and the request would need more than ``longestFarSlowerRequest`` seconds more, or the mirror gets none
    /// of the tail and the fastest mirror on `connections` connections would fetch all `remaining` bytes
    /// before this request ends.
    func withdraws(_ mirror: Int, inFlight: Int64, among live: [Int], remaining: Int64, connections: Int) -> Bool {
        guard inFlight > 0, isFarSlower(mirror, among: live), let rate = measuredRate(mirror),
              let fastest = fastestRate(among: live) else { return false }
        let secondsLeft = Double(inFlight) / max(rate, 1)
        if secondsLeft > Self.longestFarSlowerRequest { return true }
        return isExcludedFromTail(mirror, among: live, remaining: remaining, connections: connections)
            && secondsLeft > Double(remaining) / (fastest * Double(max(1, connections)))
    }
}
