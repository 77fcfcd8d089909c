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

    /// Once the loop has stopped it accepts no more work (``EventLoop/executeUnlessStopped(_:)`` says so),
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
        #expect(!loop.executeUnlessStopped {})
        suspended.withLock { $0.take() }?.resume()
        let ended = try await eventually { outcome.withLock { $0 != nil } }
        #expect(ended, "the task resumed after the loop stopped never ran again")
        if ended { await task.value }
        let seen = outcome.withLock { $0 }
        #expect(seen?.before == true)
        #expect(seen?.after == false)
    }

    /// Work accepted before the stop runs on the loop: jobs queued by many tasks just before ``shutdown()``
    /// all run (on the loop, or elsewhere once it has stopped); none is lost.
    @Test func everyTaskPreferringALoopThatStopsEnds() async throws {
        let loop = try EventLoop()
        let ended = SharedCounter()
        let count = 200
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<count {
            tasks.append(Task {
                await withTaskExecutorPreference(loop) {
                    for _ in 0..<10 { await Task.yield() }
                    ended.value.add(1, ordering: .relaxed)
                }
            })
        }
        // Stops while the tasks hop on and off the loop (the join blocks: on a thread of its own).
        let stopped = Atomic(false)
        try PosixThread.spawnDetached(name: "test-shutdown") {
            loop.shutdown()
            stopped.store(true, ordering: .releasing)
        }
        #expect(try await eventually { stopped.load(ordering: .acquiring) })
        let allEnded = try await eventually { ended.value.load(ordering: .relaxed) == count }
        #expect(allEnded, "\(count - ended.value.load(ordering: .relaxed)) of \(count) tasks never ended")
        if allEnded { for task in tasks { await task.value } }
    }
}

/// A counter that tasks share (an `Atomic` itself cannot be captured by a task's closure).
private final class SharedCounter: Sendable {
    let value = Atomic(0)
}
