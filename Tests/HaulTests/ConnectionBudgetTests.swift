import Foundation
import HaulIO
import HaulTestSupport
import Synchronization
import Testing
@testable import Haul

/// The client-wide connection cap: slots taken and given back, the line of waiters, and the cap held by
/// downloads on several event loops at once.
@Suite struct ConnectionBudgetTests {
    private final class Owner: Sendable {}

    /// A value shared with closures that run on the loops.
    private final class Shared<Value: Sendable>: Sendable {
        private let state: Mutex<Value>
        init(_ value: Value) { state = Mutex(value) }
        var value: Value { state.withLock { $0 } }
        func update(_ change: (inout Value) -> Void) { state.withLock { change(&$0) } }
    }

    /// Runs `body` with `count` event loops, shut down afterwards.
    private func withLoops<Result>(_ count: Int, _ body: ([EventLoop]) async throws -> Result) async throws -> Result {
        let loops = try (0..<count).map { index in try EventLoop(name: "budget-test-\(index)") }
        defer { loops.forEach { $0.shutdown() } }
        return try await body(loops)
    }

    /// Runs `body` on `loop` and returns its result.
    private func on<Value: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> Value) async throws -> Value {
        try await loop.submit(body)
    }

    @Test func slotsAreGrantedUpToTheLimitAndCountedBack() {
        let budget = ConnectionBudget(limit: 3)
        #expect(budget.take(upTo: 2) == 2)
        #expect(budget.take(upTo: 2) == 1, "only what is left")
        #expect(budget.take(upTo: 1) == 0)
        #expect(budget.inUse == 3 && budget.peakInUse == 3)
        budget.giveBack(2)
        #expect(budget.inUse == 1 && budget.peakInUse == 3)
        #expect(ConnectionBudget(limit: 0).limit == 1, "a limit is at least one slot")
    }

    /// Given back on the waiters' own loop, slots wake waiters in order, once each, as many as are free.
    @Test func waitersAreWokenInOrderOneFreeSlotEach() async throws {
        try await withLoops(1) { loops in
            let loop = loops[0]
            let budget = ConnectionBudget(limit: 2)
            let woken = Shared<[Int]>([])
            let owners = (0..<3).map { _ in Owner() }
            try await on(loop) {
                _ = budget.take(upTo: 2)
                // Each takes the slot it is woken for, as a download does.
                for (index, owner) in owners.enumerated() {
                    budget.waitForSlot(owner: owner, on: loop) {
                        woken.update { $0.append(index) }
                        _ = budget.take(upTo: 1)
                    }
                }
                // In line already: the owner keeps its place and its first wake.
                budget.waitForSlot(owner: owners[0], on: loop) { woken.update { $0.append(99) } }
                budget.giveBack(1)
            }
            #expect(woken.value == [0], "one slot, one waiter: the first in line")
            #expect(budget.waiting == 2)
            try await on(loop) { budget.giveBack(1) }
            #expect(woken.value == [0, 1])
            #expect(budget.inUse == 2 && budget.peakInUse == 2)
            budget.stopWaiting(owner: owners[2])
            #expect(budget.waiting == 0)
            try await on(loop) { budget.giveBack(2) }
            #expect(woken.value == [0, 1], "a waiter that left the line is not woken")
            #expect(budget.inUse == 0)
        }
    }

    /// Two downloads on two loops wait for the same cap; slots given back elsewhere wake each on its own loop.
    @Test func waitersOnTwoLoopsAreEachWokenOnTheirOwnLoop() async throws {
        try await withLoops(2) { loops in
            let budget = ConnectionBudget(limit: 2)
            #expect(budget.take(upTo: 2) == 2)
            let wokenOnOwnLoop = Shared<[Int: Bool]>([:])
            let owners = [Owner(), Owner()]
            for index in 0..<2 {
                let loop = loops[index]
                try await on(loop) {
                    budget.waitForSlot(owner: owners[index], on: loop) {
                        let granted = budget.take(upTo: 1)
                        wokenOnOwnLoop.update { $0[index] = loop.inEventLoop && granted == 1 }
                    }
                }
            }
            // Given back on loop 0: its own waiter may run there at once, loop 1's waits for its loop.
            try await on(loops[0]) { budget.giveBack(2) }
            #expect(poll { wokenOnOwnLoop.value.count == 2 }, "both waiters woken")
            #expect(wokenOnOwnLoop.value == [0: true, 1: true], "each on its own loop, each with a slot")
            #expect(budget.inUse == 2 && budget.peakInUse == 2 && budget.waiting == 0)
        }
    }

    /// A slot given back on another loop between an owner's failed take and its wait is not missed: the owner
    /// is woken at once instead of waiting for a give-back that may never come.
    @Test func aSlotFreedBetweenTakeAndWaitWakesTheOwner() async throws {
        try await withLoops(2) { loops in
            let budget = ConnectionBudget(limit: 1)
            #expect(budget.take(upTo: 1) == 1)
            let owner = Owner()
            let woken = Shared(false)
            #expect(try await on(loops[0]) { budget.take(upTo: 1) } == 0)
            try await on(loops[1]) { budget.giveBack(1) }
            try await on(loops[0]) {
                budget.waitForSlot(owner: owner, on: loops[0]) { woken.update { $0 = loops[0].inEventLoop } }
            }
            #expect(poll { woken.value }, "woken on its loop although nothing was given back after it lined up")
            #expect(budget.waiting == 0)
        }
    }

    /// Many downloads on two loops take, hold and give back slots as fast as they can: the cap is never
    /// exceeded, every slot comes back, and every one of them gets all the slots it asked for (no wake-up lost).
    @Test func theCapHoldsAcrossLoops() async throws {
        let seed = TestSeed(for: "ConnectionBudgetTests.theCapHoldsAcrossLoops", default: 0x1a4e5)
        try await withLoops(2) { loops in
            let limit = 3
            let budget = ConnectionBudget(limit: limit)
            let rounds = 40
            var generator = seed.generator()
            let owners = (0..<12).map { index in
                BudgetUser(budget: budget, loop: loops[index % 2], rounds: rounds, wanted: Int.random(in: 1...2, using: &generator))
            }
            for owner in owners { owner.loop.execute { owner.next() } }
            #expect(poll(within: 60) { owners.allSatisfy(\.isDone) }, "every owner finished its rounds (\(seed))")
            #expect(budget.peakInUse <= limit, "\(seed)")
            #expect(budget.peakInUse == limit, "the owners did compete for the cap (\(seed))")
            #expect(budget.inUse == 0 && budget.waiting == 0, "\(seed)")
            #expect(owners.allSatisfy { $0.ranOnOwnLoopOnly }, "\(seed)")
        }
    }
}

/// A stand-in for a download in ``ConnectionBudgetTests/theCapHoldsAcrossLoops()``: on its loop, takes up to
/// `wanted` slots, holds what it got for one turn of the loop, gives them back; waits in line when it got
/// none; `rounds` times.
private final class BudgetUser: @unchecked Sendable {
    // @unchecked Sendable: `round` is touched on `loop` only; the flags are atomics.
    let budget: ConnectionBudget
    let loop: EventLoop
    let rounds: Int
    let wanted: Int
    private var round = 0
    private let done = Atomic(false)
    private let strayThread = Atomic(false)

    init(budget: ConnectionBudget, loop: EventLoop, rounds: Int, wanted: Int) {
        self.budget = budget
        self.loop = loop
        self.rounds = rounds
        self.wanted = wanted
    }

    var isDone: Bool { done.load(ordering: .acquiring) }
    var ranOnOwnLoopOnly: Bool { !strayThread.load(ordering: .acquiring) }

    func next() {
        if !loop.inEventLoop { strayThread.store(true, ordering: .releasing) }
        guard round < rounds else { return done.store(true, ordering: .releasing) }
        let granted = budget.take(upTo: wanted)
        guard granted > 0 else {
            return budget.waitForSlot(owner: self, on: loop) { [self] in next() }
        }
        round += 1
        loop.execute { [self] in
            budget.giveBack(granted)
            next()
        }
    }
}
