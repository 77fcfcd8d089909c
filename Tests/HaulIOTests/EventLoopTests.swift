import Glibc
import Synchronization
import Testing
@testable import HaulIO
import SystemPackage

@Suite("Event loop")
struct EventLoopTests {
    @Test func executeFromAnotherThreadRunsOnTheLoopThread() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        #expect(!loop.inEventLoop)
        let ranOnLoop = try await loop.submit { loop.inEventLoop }
        #expect(ranOnLoop)
    }

    @Test func tasksRunInSubmissionOrder() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let order = Mutex<[Int]>([])
        for index in 0..<100 { loop.execute { order.withLock { $0.append(index) } } }
        _ = try await loop.submit { () }
        #expect(order.withLock { $0 } == Array(0..<100))
    }

    /// A task queued from the loop thread itself writes no wake-up to the loop's eventfd; it must still run,
    /// after the current batch of events, and not wait for an unrelated event. A chain of tasks, each queued
    /// by the one before, on an otherwise idle loop: each would hang in `epoll_wait` if the loop missed it.
    /// A watchdog wakes the loop from outside after a generous deadline, and the test then fails.
    @Test func tasksQueuedOnTheLoopThreadRunWithoutAWakeUp() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let waiter = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        let finish: @Sendable (Bool) -> Void = { finished in waiter.withLock { $0.take() }?.resume(returning: finished) }
        let steps = Mutex(0)
        @Sendable func step() {
            let count = steps.withLock { $0 += 1; return $0 }
            if count == 200 { finish(true) } else { loop.execute { step() } }
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            finish(false)
            loop.execute {}
        }
        let finished = await withCheckedContinuation { continuation in
            waiter.withLock { $0 = continuation }
            loop.execute { step() }
        }
        watchdog.cancel()
        #expect(finished, "the chain stopped after \(steps.withLock { $0 }) of 200 tasks")
    }

    /// Tasks submitted from other threads while the loop runs (a task group starting downloads while the loop
    /// finishes others) write no wake-up: the loop takes them at the end of its turn. A task holds the loop
    /// until 100 tasks are submitted from this thread; none of them may write the eventfd, and all run.
    @Test func tasksSubmittedWhileTheLoopRunsWriteNoWakeUp() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let started = Atomic(false), released = Atomic(false)
        let deadline = MonotonicInstant.now().advanced(by: .seconds(30))
        loop.execute {
            started.store(true, ordering: .releasing)
            while !released.load(ordering: .acquiring) && MonotonicInstant.now() < deadline { sched_yield() }
        }
        while !started.load(ordering: .acquiring) && MonotonicInstant.now() < deadline { sched_yield() }
        let holding = started.load(ordering: .acquiring)
        #expect(holding, "the loop did not run the holding task")
        let before = loop.wakeUps.load(ordering: .relaxed)
        let ran = Atomic(0)
        for _ in 0..<100 { loop.execute { ran.add(1, ordering: .relaxed) } }
        let wakeUps = loop.wakeUps.load(ordering: .relaxed) - before
        released.store(true, ordering: .releasing)
        _ = try await loop.submit { () }
        let ranCount = ran.load(ordering: .relaxed)
        #expect(wakeUps == 0)
        #expect(ranCount == 100)
    }

    /// Work deferred to the end of the turn (what a finished exchange's completion goes through) runs after
    /// the task that deferred it has returned, never inside it, in the order deferred.
    @Test func workDeferredToTheTurnsEndRunsAfterItsCallerInOrder() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let log = TurnLog()
        let entries = await withCheckedContinuation { (continuation: CheckedContinuation<[String], Never>) in
            loop.execute {
                let first = TurnWorkProbe(name: "a", loop: loop, log: log)
                let second = TurnWorkProbe(name: "b", loop: loop, log: log)
                second.whenDone = { continuation.resume(returning: log.entries.withLock { $0 }) }
                loop.runAfterThisTurn(first)
                loop.runAfterThisTurn(second)
                log.entries.withLock { $0.append("caller") }
            }
        }
        #expect(entries == ["caller", "a", "b"])
    }

    /// Work that defers more work runs it on the next turn, which must not wait in `epoll_wait` for an
    /// unrelated event: a chain of 200 on an otherwise idle loop would hang at its first link otherwise. A
    /// watchdog wakes the loop from outside after a generous deadline, and the test then fails.
    @Test func workDeferredFromDeferredWorkRunsOnTheNextTurnWithoutAWakeUp() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let log = TurnLog()
        let waiter = Mutex<CheckedContinuation<Bool, Never>?>(nil)
        let finish: @Sendable (Bool) -> Void = { finished in waiter.withLock { $0.take() }?.resume(returning: finished) }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(30))
            finish(false)
            loop.execute {}
        }
        let before = loop.wakeUps.load(ordering: .relaxed)
        let finished = await withCheckedContinuation { continuation in
            waiter.withLock { $0 = continuation }
            loop.execute {
                let chain = TurnWorkProbe(name: "link", loop: loop, log: log)
                chain.again = 199
                chain.whenDone = { finish(true) }
                loop.runAfterThisTurn(chain)
            }
        }
        watchdog.cancel()
        let links = log.entries.withLock { $0.count }
        #expect(finished, "the chain stopped after \(links) of 200 links")
        #expect(links == 200)
        // The first task's own wake-up at most; none for the links.
        #expect(loop.wakeUps.load(ordering: .relaxed) - before <= 1)
    }

    @Test func timersFireInDeadlineOrderAndCancelledOnesDoNot() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let fired = Mutex<[String]>([])
        let started = MonotonicInstant.now()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.execute {
                loop.scheduleTimer(after: .milliseconds(60)) { fired.withLock { $0.append("c") } }
                loop.scheduleTimer(after: .milliseconds(20)) { fired.withLock { $0.append("a") } }
                let cancelled = loop.scheduleTimer(after: .milliseconds(30)) { fired.withLock { $0.append("x") } }
                loop.scheduleTimer(after: .milliseconds(40)) { fired.withLock { $0.append("b") } }
                loop.scheduleTimer(after: .milliseconds(80)) { continuation.resume() }
                loop.cancelTimer(cancelled)
            }
        }
        #expect(fired.withLock { $0 } == ["a", "b", "c"])
        #expect(MonotonicInstant.now().nanoseconds(since: started) >= 80_000_000)
    }

    @Test func timerQueueOrdersEqualDeadlinesBySchedulingOrder() {
        var queue = TimerQueue()
        var fired: [Int] = []
        let deadline = MonotonicInstant(nanoseconds: 1_000)
        for index in 0..<10 { _ = queue.schedule(at: deadline) { fired.append(index) } }
        _ = queue.schedule(at: MonotonicInstant(nanoseconds: 500)) { fired.append(-1) }
        #expect(queue.takeExpired(now: MonotonicInstant(nanoseconds: 999)).count == 1)
        for callback in queue.takeExpired(now: deadline) { callback() }
        #expect(fired == Array(0..<10))
        #expect(queue.nextDeadline() == nil)
    }

    /// Slots are used again: an ID whose timer fired or was cancelled must not cancel the slot's next timer, and
    /// a stale heap entry must not fire it.
    @Test func staleTimerIDsLeaveTheSlotsNextTimerAlone() {
        var queue = TimerQueue()
        var fired: [String] = []
        let first = queue.schedule(at: MonotonicInstant(nanoseconds: 100)) { fired.append("first") }
        let cancelledFirst = queue.cancel(first)
        #expect(cancelledFirst)
        let second = queue.schedule(at: MonotonicInstant(nanoseconds: 200)) { fired.append("second") }
        #expect(second.slot == first.slot, "the freed slot is used again")
        let cancelledAgain = queue.cancel(first)
        #expect(!cancelledAgain, "a cancelled timer's ID cancels nothing")
        #expect(queue.count == 1)
        // The first timer's entry (deadline 100) is still in the heap: it must not fire the second's callback.
        for callback in queue.takeExpired(now: MonotonicInstant(nanoseconds: 150)) { callback() }
        #expect(fired.isEmpty)
        for callback in queue.takeExpired(now: MonotonicInstant(nanoseconds: 200)) { callback() }
        #expect(fired == ["second"])
        let third = queue.schedule(at: MonotonicInstant(nanoseconds: 300)) { fired.append("third") }
        let cancelledFired = queue.cancel(second)
        #expect(!cancelledFired, "a fired timer's ID cancels nothing")
        let next = queue.nextDeadline()
        #expect(next == MonotonicInstant(nanoseconds: 300))
        let cancelledThird = queue.cancel(third)
        #expect(cancelledThird)
        #expect(queue.count == 0)
        let none = queue.nextDeadline()
        #expect(none == nil)
    }

    @Test func cancelledTimersDoNotPileUpAndTheRestFireInOrder() {
        var queue = TimerQueue()
        var fired: [UInt64] = []
        func deadline(_ index: UInt64) -> UInt64 { 1_000_000 + (index * 7_919) % 100_000 }
        // Long timers cancelled right away (idle timeouts of requests that ended), a few kept alive.
        for index in UInt64(0)..<100_000 {
            let id = queue.schedule(at: MonotonicInstant(nanoseconds: deadline(index))) { fired.append(index) }
            if index % 1_000 != 0 { queue.cancel(id) }
        }
        #expect(queue.count == 100)
        #expect(queue.heldEntries <= 4 * queue.count + 64, "held \(queue.heldEntries) entries for \(queue.count) timers")
        for callback in queue.takeExpired(now: MonotonicInstant(nanoseconds: 2_000_000)) { callback() }
        let kept: [UInt64] = (UInt64(0)..<100_000).filter { $0 % 1_000 == 0 }
        let expected = kept.sorted { a, b in (deadline(a), a) < (deadline(b), b) }
        #expect(fired == expected)
        #expect(queue.nextDeadline() == nil)
    }

    @Test func registeredDescriptorReportsReadability() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let fds = try makeNonBlockingPipe()
        defer {
            try? fds.readEnd.close()
            try? fds.writeEnd.close()
        }
        let received: UInt8 = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                do {
                    var registration: FileDescriptorRegistration?
                    registration = try loop.register(fds.readEnd, interest: .readable) { events in
                        var byte: UInt8 = 0
                        guard events.contains(.readable), case .processed(1)? = try? syscall("read", .nonBlocking, { read(fds.readEnd.rawValue, &byte, 1) })
                        else { return }
                        loop.deregister(registration!)
                        continuation.resume(returning: byte)
                    }
                    _ = try blockingSyscall("write") { write(fds.writeEnd.rawValue, "z", 1) }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        #expect(received == UInt8(ascii: "z"))
    }
}

@Suite("Event loop group")
struct EventLoopGroupTests {
    @Test func handsOutLoopsRoundRobinEachOnItsOwnThread() async throws {
        let group = try EventLoopGroup(numberOfThreads: 2)
        defer { group.shutdown() }
        let first = group.next()
        let second = group.next()
        #expect(first !== second)
        #expect(group.next() === first)
        let firstOnOwnThread = try await first.submit { first.inEventLoop && !second.inEventLoop }
        #expect(firstOnOwnThread)
    }
}

@Suite("Event loop shutdown")
struct EventLoopShutdownTests {
    @Test func tasksQueuedBeforeShutdownRunAndLaterOnesAreDropped() throws {
        let loop = try EventLoop()
        let ran = Mutex<[String]>([])
        for _ in 0..<3 { loop.execute { ran.withLock { $0.append("before") } } }
        loop.shutdown()
        loop.execute { ran.withLock { $0.append("after") } }
        #expect(ran.withLock { $0 } == ["before", "before", "before"])
    }

    /// Once its thread has exited, no thread counts as the loop's: the system hands an exited thread's
    /// `pthread_t` to the next thread it creates (glibc reuses the descriptor), and such a thread — the one
    /// joining the loop in a second `shutdown()`, say — was taken for the loop thread and stopped by
    /// `shutdown()`'s precondition. Threads are created one after another, as in that case.
    @Test func noThreadCountsAsTheLoopsAfterItsThreadExited() throws {
        let loop = try EventLoop()
        loop.shutdown()
        var tookForTheLoop = 0
        for _ in 0..<20 {
            var thread = pthread_t()
            let box = Unmanaged.passRetained(loop)
            #expect(pthread_create(&thread, nil, { raw in
                let loop = Unmanaged<EventLoop>.fromOpaque(raw!).takeRetainedValue()
                return UnsafeMutableRawPointer(bitPattern: loop.inEventLoop ? 1 : 2)
            }, box.toOpaque()) == 0)
            var answer: UnsafeMutableRawPointer?
            pthread_join(thread, &answer)
            if answer == UnsafeMutableRawPointer(bitPattern: 1) { tookForTheLoop += 1 }
        }
        #expect(tookForTheLoop == 0)
        loop.shutdown()  // a second shutdown from another thread than the first returns at once
    }
}

/// What ``TurnWorkProbe``s ran, in order.
private final class TurnLog: Sendable {
    let entries = Mutex<[String]>([])
}

/// Work deferred to the end of a loop turn that notes each run, defers itself `again` more times, then calls
/// `whenDone`.
private final class TurnWorkProbe: LoopTurnWork, @unchecked Sendable {
    // @unchecked Sendable: made on the loop thread and touched only there.
    let name: String
    let loop: EventLoop
    let log: TurnLog
    var again = 0
    var whenDone: (() -> Void)?

    init(name: String, loop: EventLoop, log: TurnLog) {
        self.name = name
        self.loop = loop
        self.log = log
    }

    func runAfterTurn() {
        log.entries.withLock { $0.append(name) }
        if again > 0 {
            again -= 1
            loop.runAfterThisTurn(self)
        } else {
            whenDone?()
        }
    }
}
