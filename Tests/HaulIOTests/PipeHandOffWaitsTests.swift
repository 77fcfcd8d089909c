import Glibc
import Synchronization
import Testing
@testable import HaulIO

/// ``WritesInFlight/whenAllReturned(on:_:)``: what must follow handed-off writes runs on the loop after them,
/// and the loop never waits for one. The writes here are fakes that return when the test says (no sockets,
/// no files): each holds its writer thread on a ``Gate``.
@Suite(.serialized) struct PipeHandOffWaitsTests {
    /// Far beyond what any step here takes; reached only by a test that fails (a hang it bounds).
    static let deadline: Double = 30

    /// Blocks a thread until opened, or until the deadline (so that a failing test never holds a thread for good).
    final class Gate: Sendable {
        private let open = Atomic<Bool>(false)
        private let entered = Atomic<Int>(0)

        func pass() {
            entered.add(1, ordering: .relaxed)
            let deadline = MonotonicInstant.now().advanced(by: .seconds(PipeHandOffWaitsTests.deadline))
            while !open.load(ordering: .acquiring), MonotonicInstant.now() < deadline { usleep(1000) }
        }

        func release() { open.store(true, ordering: .releasing) }
        var waiters: Int { entered.load(ordering: .relaxed) }
        var isOpen: Bool { open.load(ordering: .acquiring) }
    }

    /// What ran on the loop, in order (loop thread only).
    final class Events: @unchecked Sendable {
        private let list = Mutex<[String]>([])
        func add(_ event: String) { list.withLock { $0.append(event) } }
        var all: [String] { list.withLock { $0 } }
    }

    /// A fake write: holds its writer on `gate`, then posts `name` to the loop (as a hand-off posts its
    /// completion) before it counts as returned.
    func submitWrite(_ name: String, to writes: WritesInFlight, gate: Gate?, loop: EventLoop, events: Events) {
        writes.submit {
            gate?.pass()
            _ = loop.executeUnlessShuttingDown { events.add(name) }
            writes.end()
        }
    }

    /// Runs `body` on the loop and waits for it.
    func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                body()
                continuation.resume()
            }
        }
    }

    func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = MonotonicInstant.now().advanced(by: .seconds(Self.deadline))
        while !condition() {
            guard MonotonicInstant.now() < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return true
    }

    @Test func withNoWriteUnderWayTheActionRunsAtOnceOnTheCaller() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let writes = WritesInFlight()
        let ranHere = Atomic<Bool>(false)
        await onLoop(loop) {
            writes.whenAllReturned(on: loop) { ranHere.store(true, ordering: .relaxed) }
            let ran = ranHere.load(ordering: .relaxed)
            #expect(ran, "ran before whenAllReturned returned")
        }
        #expect(writes.isEmpty)
    }

    /// A held write holds up what follows it, not the loop: other tasks run meanwhile; the action runs once
    /// the write has returned, after its completion.
    @Test func aHeldWriteHoldsUpItsFollowerButNotTheLoop() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let writes = WritesInFlight()
        let gate = Gate()
        defer { gate.release() }
        let events = Events()
        await onLoop(loop) {
            submitWrite("write returned", to: writes, gate: gate, loop: loop, events: events)
            writes.whenAllReturned(on: loop) { events.add("follower") }
        }
        #expect(await eventually { gate.waiters == 1 }, "the write reached its writer")
        // The loop turns while the write is held: a task queued now runs.
        await onLoop(loop) { events.add("another task") }
        #expect(events.all == ["another task"])
        #expect(!writes.isEmpty)
        gate.release()
        #expect(await eventually { events.all.count == 3 }, "\(events.all)")
        #expect(events.all == ["another task", "write returned", "follower"])
        #expect(writes.isEmpty)
    }

    /// A follower waits for the writes submitted before it, not for later ones: a download that keeps
    /// splicing cannot put off a pause or an end for good.
    @Test func writesSubmittedAfterAFollowerDoNotHoldItUp() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let writes = WritesInFlight()
        let first = Gate(), second = Gate()
        defer { first.release(); second.release() }
        let events = Events()
        await onLoop(loop) {
            submitWrite("first", to: writes, gate: first, loop: loop, events: events)
            writes.whenAllReturned(on: loop) { events.add("after first") }
            submitWrite("second", to: writes, gate: second, loop: loop, events: events)
            writes.whenAllReturned(on: loop) { events.add("after second") }
        }
        first.release()
        #expect(await eventually { events.all.count == 2 }, "\(events.all)")
        #expect(events.all == ["first", "after first"], "the second write is still held")
        second.release()
        #expect(await eventually { events.all.count == 4 }, "\(events.all)")
        #expect(events.all == ["first", "after first", "second", "after second"])
    }

    /// Every shared blocking-work thread busy with a job that waits for this loop (as a client's shutdown
    /// joins its loops on one): the write still starts — its writer is not one of them — and what follows it
    /// runs. With the loop waiting for the write and the write waiting for a shared thread, this never ended.
    @Test func blockingWorkThatWaitsForTheLoopCannotStarveTheWrite() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let writes = WritesInFlight()
        let loopReached = Gate()
        defer { loopReached.release() }
        let occupied = Atomic<Int>(0)
        for _ in 0..<BlockingThreadPool.maximumThreads {
            BlockingWork.start {
                occupied.add(1, ordering: .relaxed)
                loopReached.pass()
            }
        }
        // Every shared thread taken (unless some other work holds one: then fewer, and the jobs left queue).
        let saturated = await eventually { occupied.load(ordering: .relaxed) == BlockingThreadPool.maximumThreads }
        if !saturated { print("PipeHandOffWaitsTests: \(occupied.load(ordering: .relaxed)) shared threads taken") }
        let events = Events()
        loop.execute {
            submitWrite("write returned", to: writes, gate: nil, loop: loop, events: events)
            writes.whenAllReturned(on: loop) { events.add("follower") }
        }
        // The jobs end only once the loop runs this task, queued after the one above.
        loop.execute { loopReached.release() }
        #expect(await eventually { events.all.count == 2 }, "\(events.all)")
        #expect(events.all == ["write returned", "follower"])
        #expect(loopReached.isOpen)
    }

    /// The test hook runs on the writer before each write, in order.
    @Test func theHookRunsBeforeEachWrite() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let events = Events()
        let writes = WritesInFlight(beforeEachWrite: { events.add("hook") })
        await onLoop(loop) {
            submitWrite("one", to: writes, gate: nil, loop: loop, events: events)
            submitWrite("two", to: writes, gate: nil, loop: loop, events: events)
        }
        #expect(await eventually { events.all.filter { $0 != "hook" }.count == 2 })
        #expect(events.all.filter { $0 == "hook" }.count == 2)
    }
}
