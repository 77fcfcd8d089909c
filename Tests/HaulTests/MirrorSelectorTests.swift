import Testing
@testable import Haul

/// ``MirrorSelector``: each decision with scripted seconds (no clock, no randomness).
@Suite struct MirrorSelectorTests {
    static let mib: Int64 = 1 << 20
    static let chunk: Int64 = 4 << 20

    /// Three mirrors measured for `seconds` seconds at these per-connection rates (bytes a second), one
    /// connection each (connection id = mirror index).
    func measured(_ rates: [Int64], seconds: Int = 2) -> MirrorSelector {
        var selector = MirrorSelector(mirrorCount: rates.count, requestBytes: Self.chunk)
        for mirror in rates.indices { selector.noteUse(of: mirror) }
        for _ in 0..<seconds {
            for (mirror, rate) in rates.enumerated() { selector.record(rate, from: mirror, connection: mirror) }
            selector.tick()
        }
        return selector
    }

    @Test func aRateIsBytesPerConnectionSmoothed() throws {
        var selector = MirrorSelector(mirrorCount: 1, requestBytes: Self.chunk)
        selector.record(Self.mib, from: 0, connection: 0)
        selector.record(Self.mib, from: 0, connection: 1)
        selector.tick()
        #expect(selector.measuredRate(0) == nil, "one second of less than a request's worth does not count yet")
        selector.record(4 * Self.mib, from: 0, connection: 0)
        selector.tick()
        // Samples 1 MiB, then 4 MiB (one writer): halfway between.
        #expect(selector.measuredRate(0) == Double(Self.mib) * 2.5)
    }

    @Test func oneRequestsWorthCountsAtOnce() {
        var selector = MirrorSelector(mirrorCount: 2, requestBytes: Self.chunk)
        selector.record(Self.chunk, from: 1, connection: 3)
        selector.tick()
        #expect(selector.measuredRate(1) == Double(Self.chunk) && selector.measuredRate(0) == nil)
    }

    @Test func aSecondHeldBackByHaulIsNotCounted() {
        var selector = MirrorSelector(mirrorCount: 1, requestBytes: Self.chunk)
        selector.record(10, from: 0, connection: 0)
        selector.tick(counting: false)
        selector.tick()
        #expect(selector.estimates[0] == nil)
    }

    @Test func oneMirrorIsAlwaysChosen() {
        let selector = measured([5 * Self.mib])
        #expect(selector.choose(current: 0, live: [0], remaining: 1, connections: 8) == 0)
        #expect(!selector.withdraws(0, inFlight: Self.chunk, among: [0], remaining: Self.chunk, connections: 8))
    }

    @Test func anUntriedMirrorGetsATrialButNotInTheLastRound() {
        var selector = MirrorSelector(mirrorCount: 3, requestBytes: Self.chunk)
        selector.noteUse(of: 0)
        selector.noteUse(of: 1)
        #expect(selector.choose(current: 0, live: [0, 1, 2], remaining: 100 * Self.mib, connections: 4) == 2)
        #expect(selector.choose(current: 0, live: [0, 1, 2], remaining: 16 * Self.mib, connections: 4) == 0,
                "the last round of requests (one per connection) tries nothing new")
        #expect(selector.choose(current: 0, live: [0, 1], remaining: 100 * Self.mib, connections: 4) == 0, "a dropped mirror gets no trial")
    }

    @Test func aConnectionStaysOnAMirrorUntilItIsMeasured() {
        var selector = measured([40 * Self.mib, 0, 0], seconds: 1)
        selector.noteUse(of: 1)
        selector.noteUse(of: 2)
        #expect(selector.choose(current: 1, live: [0, 1, 2], remaining: 500 * Self.mib, connections: 8) == 1)
    }

    @Test func aConnectionMovesToTheFastestMirrorWhenItIsClearlyFaster() {
        let selector = measured([40 * Self.mib, 20 * Self.mib, 5 * Self.mib])
        let live = [0, 1, 2]
        #expect(selector.choose(current: 1, live: live, remaining: 900 * Self.mib, connections: 8) == 0)
        #expect(selector.choose(current: 2, live: live, remaining: 900 * Self.mib, connections: 8) == 0)
        #expect(selector.choose(current: 0, live: live, remaining: 900 * Self.mib, connections: 8) == 0)
        #expect(selector.choose(current: 1, live: [1, 2], remaining: 900 * Self.mib, connections: 8) == 1, "the fastest was dropped")
    }

    @Test func aMirrorWithinTheSwitchRatioKeepsItsConnections() {
        let selector = measured([30 * Self.mib, 21 * Self.mib, 5 * Self.mib])
        #expect(selector.choose(current: 1, live: [0, 1, 2], remaining: 900 * Self.mib, connections: 8) == 1)
    }

    @Test func equalRatesPreferTheLowerIndexOnlyWhenMoving() {
        let selector = measured([10 * Self.mib, 10 * Self.mib, 1 * Self.mib])
        #expect(selector.choose(current: 2, live: [0, 1, 2], remaining: 900 * Self.mib, connections: 2) == 0)
        #expect(selector.choose(current: 1, live: [0, 1, 2], remaining: 900 * Self.mib, connections: 2) == 1)
    }

    @Test func farSlowerMeansBelowAQuarterOfTheFastest() {
        let selector = measured([40 * Self.mib, 11 * Self.mib, 9 * Self.mib])
        #expect(!selector.isFarSlower(1, among: [0, 1, 2]))
        #expect(selector.isFarSlower(2, among: [0, 1, 2]))
        #expect(!selector.isFarSlower(2, among: [1, 2]), "judged against the live mirrors only")
        let young = measured([40 * Self.mib, 1 * Self.mib], seconds: 1)
        #expect(!young.isFarSlower(1, among: [0, 1]), "not before the slow one has enough samples")
    }

    /// 40 and 5 MiB/s a connection, 8 connections, 4 MiB requests: the slow mirror needs 0.8 s for a
    /// request, in which the fast one fetches 8 × 40 × 0.8 = 256 MiB.
    @Test func aFarSlowerMirrorGetsNoneOfTheTail() {
        let selector = measured([40 * Self.mib, 20 * Self.mib, 5 * Self.mib])
        let live = [0, 1, 2]
        #expect(!selector.isExcludedFromTail(2, among: live, remaining: 257 * Self.mib, connections: 8))
        #expect(selector.isExcludedFromTail(2, among: live, remaining: 255 * Self.mib, connections: 8))
        #expect(!selector.isExcludedFromTail(1, among: live, remaining: 1, connections: 8), "half as fast is not far slower")
        // Excluded, it is not chosen even for a connection that is on it and has no better place to stay.
        var stuck = selector
        stuck.noteUse(of: 2)
        #expect(stuck.choose(current: 2, live: live, remaining: 100 * Self.mib, connections: 8) == 0)
        #expect(!stuck.isExcludedFromTail(2, among: [1, 2], remaining: 1, connections: 8),
                "without the fast mirror, 5 against 20 is not far slower")
    }

    @Test func aFarSlowerRequestIsWithdrawnWhenTheOthersWouldFinishFirst() {
        let selector = measured([40 * Self.mib, 20 * Self.mib, 5 * Self.mib])
        let live = [0, 1, 2]
        // 3 MiB left on the slow mirror: 0.6 s; 100 MiB on 8 fast connections: 0.31 s.
        #expect(selector.withdraws(2, inFlight: 3 * Self.mib, among: live, remaining: 100 * Self.mib, connections: 8))
        // 1 MiB left: 0.2 s, sooner than the others' 0.31 s.
        #expect(!selector.withdraws(2, inFlight: 1 * Self.mib, among: live, remaining: 100 * Self.mib, connections: 8))
        // Before the tail a request of 0.8 s is left to end, and a mirror that is not far slower is never
        // withdrawn from, however long its request.
        #expect(!selector.withdraws(2, inFlight: 4 * Self.mib, among: live, remaining: 600 * Self.mib, connections: 8))
        #expect(!selector.withdraws(1, inFlight: 400 * Self.mib, among: live, remaining: 500 * Self.mib, connections: 8))
    }

    @Test func aFarSlowerRequestOfMoreThanTwoSecondsIsWithdrawnAnywhere() {
        // 64 KiB/s against 40 MiB/s: 4 MiB would take 64 s; with one connection the tail rule alone would
        // leave a long download on the slow mirror until its end.
        let selector = measured([40 * Self.mib, 64 << 10])
        #expect(selector.withdraws(1, inFlight: 4 * Self.mib, among: [0, 1], remaining: 10_000 * Self.mib, connections: 1))
        #expect(!selector.withdraws(1, inFlight: 64 << 10, among: [0, 1], remaining: 10_000 * Self.mib, connections: 1),
                "a second's worth is left to end")
    }
}
