import Synchronization
import Testing
@testable import HaulIO

/// The loop as a Swift task executor (`withTaskExecutorPreference(loop)`).
extension EventLoopTests {
    /// A task that prefers the loop runs on its thread, and continues there after awaiting a continuation
    /// that the loop resumes (what a download's end does), with no write to the loop's eventfd for the
    /// resumption (queued from the loop itself).
    @Test func aTaskPreferringTheLoopRunsAndContinuesOnItsThread() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let (before, after, wakeUps) = await withTaskExecutorPreference(loop) { () async -> (Bool, Bool, Int) in
            let before = loop.inEventLoop
            let wakeUpsBefore = loop.wakeUps.load(ordering: .relaxed)
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                loop.execute { continuation.resume() }
            }
            return (before, loop.inEventLoop, loop.wakeUps.load(ordering: .relaxed) - wakeUpsBefore)
        }
        #expect(before)
        #expect(after)
        #expect(wakeUps == 0)
    }

    /// Once the loop has stopped it accepts no more jobs (``EventLoop/executeUnlessShuttingDown(_:)`` says so),
    /// and a task that still prefers it is not dropped: resumed after the stop, it goes on on the global
    /// concurrent executor and ends. A dropped job would leave the task suspended forever (caught here by
    /// the deadline).
    @Test func aTaskPreferringAStoppedLoopGoesOnElsewhere() async throws {
        let loop = try EventLoop()
        let suspended = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let outcome = Mutex<(before: Bool, after: Bool)?>(nil)
        let task = Task {
            await withTaskExecutorPreference(loop) {
                let before = loop.inEventLoop
                await withCheckedContinuation { continuation in suspended.withLock { $0 = continuation } }
                let after = loop.inEventLoop
                outcome.withLock { $0 = (before, after) }
            }
        }
        let didSuspend = try await eventually { suspended.withLock { $0 != nil } }
        try #require(didSuspend, "the task never ran on the loop")
        loop.shutdown()
        #expect(!loop.executeUnlessShuttingDown {})
        suspended.withLock { $0.take() }?.resume()
        let ended = try await eventually { outcome.withLock { $0 != nil } }
        #expect(ended, "the task resumed after the loop stopped never ran again")
        if ended { await task.value }
        let seen = outcome.withLock { $0 }
        #expect(seen?.before == true)
        #expect(seen?.after == false)
    }

    /// A task that keeps yielding on the loop (each job queues the next from the loop thread) does not hold
    /// up the loop's shutdown: once it is asked for, its jobs go to the global executor, the loop's queue
    /// empties and its thread exits; the task goes on there until told to stop, and ends.
    @Test func aTaskThatKeepsYieldingOnTheLoopDoesNotHoldItsShutdown() async throws {
        let loop = try EventLoop()
        let flags = SharedFlags()
        let task = Task {
            await withTaskExecutorPreference(loop) {
                while !flags.stop.load(ordering: .acquiring) {
                    if loop.inEventLoop { flags.ranOnLoop.store(true, ordering: .releasing) }
                    await Task.yield()
                }
                flags.ended.store(true, ordering: .releasing)
            }
        }
        #expect(try await eventually { flags.ranOnLoop.load(ordering: .acquiring) }, "the task never ran on the loop")
        // The join blocks: on a thread of its own.
        try PosixThread.spawnDetached(name: "test-shutdown") {
            loop.shutdown()
            flags.stopped.store(true, ordering: .releasing)
        }
        let stopped = try await eventually { flags.stopped.load(ordering: .acquiring) }
        #expect(stopped, "the loop's shutdown did not return while a task kept yielding on it")
        flags.stop.store(true, ordering: .releasing)
        let ended = try await eventually { flags.ended.load(ordering: .acquiring) }
        #expect(ended, "the task never ended")
        if ended { await task.value }
    }
}

/// Flags that a task and the test share (an `Atomic` itself cannot be captured by a task's closure).
private final class SharedFlags: Sendable {
    let ranOnLoop = Atomic(false), stop = Atomic(false), stopped = Atomic(false), ended = Atomic(false)
}
