import Testing
@testable import Haul

@Suite struct ConnectionSpeedWatchTests {
    @Test func aConnectionFarBelowTheMedianHasItsRangeSplit() {
        var watch = ConnectionSpeedWatch(window: 2, slowRatio: 0.25, lowSpeed: nil)
        var counters: [Int: Int64] = [0: 0, 1: 0, 2: 0]
        var verdict = ConnectionSpeedWatch.Verdict(split: [], belowLimit: [])
        for _ in 0..<3 {
            verdict = watch.tick(received: counters, splittable: [0, 1, 2])
            counters[0]! += 10_000_000
            counters[1]! += 10_000_000
            counters[2]! += 100_000
        }
        verdict = watch.tick(received: counters, splittable: [0, 1, 2])
        #expect(verdict.split.map(\.connection) == [2])
        #expect(verdict.split.first?.keep == 100_000 / 1 * 1 || verdict.split.first!.keep >= 64 * 1024)
        #expect(verdict.belowLimit.isEmpty)
    }

    @Test func theLowSpeedLimitNeedsItsWholeDuration() {
        var watch = ConnectionSpeedWatch(window: 0, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 1000, seconds: 3))
        var bytes: Int64 = 0
        for second in 0..<3 {
            #expect(watch.tick(received: [7: bytes], splittable: [7]).belowLimit.isEmpty, "second \(second): not yet the whole duration")
            bytes += 500
        }
        #expect(watch.tick(received: [7: bytes], splittable: [7]).belowLimit == [7])
        watch.forget(7)
        #expect(watch.tick(received: [7: bytes], splittable: [7]).belowLimit.isEmpty, "a forgotten connection starts over")
    }

    @Test func idleConnectionsLoseTheirHistory() {
        var watch = ConnectionSpeedWatch(window: 0, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 1000, seconds: 1))
        _ = watch.tick(received: [1: 0], splittable: [1])
        _ = watch.tick(received: [:], splittable: [])
        #expect(watch.tick(received: [1: 10], splittable: [1]).belowLimit.isEmpty)
        #expect(watch.tick(received: [1: 20], splittable: [1]).belowLimit == [1])
    }

    /// A connection waiting for its response head (dripped, or `100 Continue` forever) receives no body byte:
    /// it is held to the limit like one whose body trickles, though it has no range yet.
    @Test func aConnectionWaitingForItsHeadIsHeldToTheLimit() {
        var watch = ConnectionSpeedWatch(window: 5, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 1, seconds: 2))
        #expect(watch.tick(received: [3: 0], splittable: []).belowLimit.isEmpty)
        #expect(watch.tick(received: [3: 0], splittable: []).belowLimit.isEmpty)
        #expect(watch.tick(received: [3: 0], splittable: []).belowLimit == [3])
    }

    /// A whole-file `200` of unknown length (or a drain) has no range others could take: it is never split,
    /// however slow beside the others, but the low-speed limit ends it all the same.
    @Test func aConnectionWithoutARangeIsNeverSplitButIsHeldToTheLimit() {
        var watch = ConnectionSpeedWatch(window: 2, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 100, seconds: 2))
        var counters: [Int: Int64] = [0: 0, 1: 0, 2: 0]
        var verdict = ConnectionSpeedWatch.Verdict(split: [], belowLimit: [])
        for _ in 0..<3 {
            verdict = watch.tick(received: counters, splittable: [0, 1])
            counters[0]! += 1_000_000
            counters[1]! += 1_000_000
            counters[2]! += 1
        }
        verdict = watch.tick(received: counters, splittable: [0, 1])
        #expect(verdict.split.isEmpty, "only connections with a range are weighed against the median")
        #expect(verdict.belowLimit == [2])
    }

    /// The default ends a byte a second, and a byte just inside the idle timeout, within its minute; a slow
    /// but real link (a few hundred bytes a second on one connection) passes.
    @Test func theDefaultLimitEndsATrickleAndPassesASlowLink() {
        let standard = LowSpeedLimit.standard
        for (name, bytesEvery, bytes) in [("1 byte/s", 1, Int64(1)), ("1 byte per 29 s", 29, Int64(1)), ("200 bytes/s", 1, Int64(200))] {
            var watch = ConnectionSpeedWatch(window: 5, slowRatio: 0.25, lowSpeed: standard)
            var received: Int64 = 0
            var closedAt: Int?
            for second in 0...(standard.seconds * 2) {
                if watch.tick(received: [0: received], splittable: [0]).belowLimit == [0] {
                    closedAt = second
                    break
                }
                if second % bytesEvery == 0 { received += bytes }
            }
            if bytes == 200 {
                #expect(closedAt == nil, "\(name): a slow link is not a held one")
            } else {
                #expect(closedAt == standard.seconds, "\(name): closed after the limit's whole duration, not \(String(describing: closedAt))")
            }
        }
    }

    /// Seconds in which haul holds a connection's reads itself (a rate limit's pause, the checkpoints) count
    /// neither for nor against it; its history is kept, and the seconds around them still count.
    @Test func secondsHaulHoldsTheReadsAreNotCounted() {
        var watch = ConnectionSpeedWatch(window: 0, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 100, seconds: 2))
        #expect(watch.tick(received: [0: 0], splittable: [0]).belowLimit.isEmpty)
        for _ in 0..<10 {
            #expect(watch.tick(received: [0: 0], splittable: [0], paused: [0]).belowLimit.isEmpty, "held by haul")
        }
        #expect(watch.tick(received: [0: 0], splittable: [0]).belowLimit.isEmpty, "one counted second is not the limit's two")
        #expect(watch.tick(received: [0: 0], splittable: [0]).belowLimit == [0], "two counted seconds of nothing")
    }

    @Test func theDefaultsHoldEveryConnectionToALimit() {
        #expect(DownloadOptions().lowSpeedLimit == LowSpeedLimit.standard)
        #expect(LowSpeedLimit.standard == LowSpeedLimit(bytesPerSecond: 100, seconds: 60))
    }

    /// haul's own pacing is never a slow server: the floor stays under a quarter of a connection's share of
    /// a rate limit.
    @Test func aRateLimitLowersTheFloor() {
        let limit = LowSpeedLimit(bytesPerSecond: 100, seconds: 60)
        #expect(limit.allowing(rateLimit: nil, connections: 8) == limit)
        #expect(limit.allowing(rateLimit: 10 << 20, connections: 8) == limit, "a generous rate limit changes nothing")
        #expect(limit.allowing(rateLimit: 1000, connections: 8) == LowSpeedLimit(bytesPerSecond: 31, seconds: 60))
        #expect(limit.allowing(rateLimit: 10, connections: 8).bytesPerSecond == 1, "never below a byte a second")
        #expect(limit.allowing(rateLimit: 1000, connections: 0).bytesPerSecond == 100, "no division by zero")
    }
}
