import Testing
@testable import Haul

@Suite struct ConnectionSpeedWatchTests {
    @Test func aConnectionFarBelowTheMedianHasItsRangeSplit() {
        var watch = ConnectionSpeedWatch(window: 2, slowRatio: 0.25, lowSpeed: nil)
        var counters: [Int: Int64] = [0: 0, 1: 0, 2: 0]
        var verdict = ConnectionSpeedWatch.Verdict(split: [], belowLimit: [])
        for _ in 0..<3 {
            verdict = watch.tick(written: counters)
            counters[0]! += 10_000_000
            counters[1]! += 10_000_000
            counters[2]! += 100_000
        }
        verdict = watch.tick(written: counters)
        #expect(verdict.split.map(\.connection) == [2])
        #expect(verdict.split.first?.keep == 100_000 / 1 * 1 || verdict.split.first!.keep >= 64 * 1024)
        #expect(verdict.belowLimit.isEmpty)
    }

    @Test func theLowSpeedLimitNeedsItsWholeDuration() {
        var watch = ConnectionSpeedWatch(window: 0, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 1000, seconds: 3))
        var bytes: Int64 = 0
        for second in 0..<3 {
            #expect(watch.tick(written: [7: bytes]).belowLimit.isEmpty, "second \(second): not yet the whole duration")
            bytes += 500
        }
        #expect(watch.tick(written: [7: bytes]).belowLimit == [7])
        watch.forget(7)
        #expect(watch.tick(written: [7: bytes]).belowLimit.isEmpty, "a forgotten connection starts over")
    }

    @Test func idleConnectionsLoseTheirHistory() {
        var watch = ConnectionSpeedWatch(window: 0, slowRatio: 0.25, lowSpeed: LowSpeedLimit(bytesPerSecond: 1000, seconds: 1))
        _ = watch.tick(written: [1: 0])
        _ = watch.tick(written: [:])
        #expect(watch.tick(written: [1: 10]).belowLimit.isEmpty)
        #expect(watch.tick(written: [1: 20]).belowLimit == [1])
    }
}
