import CHaulSystem
import Glibc
import Synchronization
import SystemPackage

/// A file descriptor registered with an ``EventLoop``; pass it back to change interest or deregister.
public struct FileDescriptorRegistration: Sendable, Hashable {
    /// Never reused, so an event that arrives for a registration removed earlier in the same batch is dropped
    /// instead of reaching whoever registered the recycled descriptor number.
    let token: UInt64
    /// The registered descriptor (owned by whoever registered it, not by the registration).
    public let fileDescriptor: FileDescriptor
}

/// An epoll loop running on one dedicated OS thread.
///
/// Everything that touches a connection runs on this thread: descriptor handlers, timers and tasks submitted with
/// ``execute(_:)``. Other threads (and Swift concurrency) only enqueue tasks; the loop is woken through an
/// `eventfd`. Async callers bridge in with ``submit(_:)`` or continuations resumed from loop callbacks, so a
/// cooperative thread never blocks.
///
/// Descriptors are **level-triggered**: a handler may stop reading before the socket is drained (to bound the work
/// per wake-up or apply back-pressure) without losing the wake-up. The price is one `epoll_ctl` whenever a
/// connection starts or stops wanting `EPOLLOUT`, which happens only when the send buffer is full.
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: `pending` is behind a Mutex and the descriptors' owners are immutable; every other stored
    // property is loop-confined, touched only on the loop thread (checked with preconditions on the entry points).

    /// A task queued by ``execute(_:)``. Wrapped: an array of bare closures holds each behind a reabstraction
    /// thunk, made (allocated) for every task queued.
    private struct QueuedTask {
        let run: @Sendable () -> Void
    }

    private struct PendingWork {
        var tasks: [QueuedTask] = []
        var shuttingDown = false
        var finished = false
        /// Set by the loop thread, with no task queued, just before it waits in `epoll_wait`; cleared when the
        /// wait returns. Only a waiting loop needs the `eventfd` written: a running one takes the queue at the
        /// end of its turn and does not wait while tasks are queued (`waitTimeoutMilliseconds()`).
        var loopWaits = false
    }

    private static let wakeToken: UInt64 = 0
    private static let maximumEventsPerWait: Int32 = 256

    /// The epoll set and the eventfd that wakes the loop, closed when the loop goes away.
    private let epollSet: OwnedFileDescriptor
    private let wakeCounter: OwnedFileDescriptor
    private let pending = Mutex(PendingWork())
    private let loopThreadID = Atomic<UInt>(0)
    /// How many times the `eventfd` was written (for tests).
    let wakeUps = Atomic<Int>(0)
    private var thread: pthread_t?
    /// Whether the loop thread has been joined. Held while joining, so that every caller of `shutdown`, not
    /// just the first, returns only once the thread is gone.
    private let joined = Mutex(false)

    private var handlers: [UInt64: (IOEvents) -> Void] = [:]
    private var nextToken: UInt64 = 1
    private var timers = TimerQueue()
    /// Loop-thread arrays the turn's due timers and queued tasks are moved into, kept with their capacity: a turn
    /// that made a new array for each (a copy of the queue, emptied in place while shared) allocated twice for
    /// every small download.
    private var dueTimers: [TimerQueue.DueTimer] = []
    private var runningTasks: [QueuedTask] = []
    /// Work deferred to the end of the current turn (``runAfterThisTurn(_:)``), and the array it is moved into
    /// while it runs (kept with its capacity, as the two above are).
    private var afterTurn: [any LoopTurnWork] = []
    private var runningAfterTurn: [any LoopTurnWork] = []
    private var receiveBuffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    /// Set while a read handler looks at the receive buffer; another read must wait for it to return.
    private(set) var isLendingReceiveBuffer = false
    /// While the events of one `epoll_wait` are dispatched: its tokens, and how many have been dispatched.
    private var batchTokens: UnsafeMutablePointer<UInt64>?
    private var batchCount = 0
    private var batchDispatched = 0
    /// How many `epoll_wait` calls have returned (loop thread only): a connection that notes it when its latest
    /// read drained the socket knows, when the count has moved on since, that a wait has looked at the socket
    /// after that read (``Connection/isReusableOnLoop()``).
    private(set) var completedWaits: UInt64 = 0

    /// Starts a loop on a new thread named `name`.
    public init(name: String = "haul-loop") throws(SystemError) {
        // Each descriptor has one owner at every step: a local until `self` is initialized (a failure closes
        // what was opened so far), then the stored property, destroyed with `self` (also when a later throw
        // abandons the half-made loop).
        epollSet = try FileDescriptor.creatingEpollSet()
        wakeCounter = try FileDescriptor.creatingEventCounter()
        try epollSet.descriptor.epollControl(haul_EPOLL_CTL_ADD, wakeCounter.descriptor, events: haul_EPOLLIN, token: EventLoop.wakeToken)
        thread = try PosixThread.spawn(name: name) { [self] in run() }
    }

    /// Frees the receive buffer; the descriptors' owners close them.
    deinit {
        receiveBuffer.deallocate()
    }

    /// Whether the caller is running on this loop's thread.
    public var inEventLoop: Bool {
        pthread_equal(pthread_self(), pthread_t(loopThreadID.load(ordering: .acquiring))) != 0
    }

    /// Runs `task` on the loop thread, soon. Callable from any thread, including the loop itself (then the task
    /// runs after the current batch of events, never re-entrantly).
    ///
    /// Tasks submitted after the loop has stopped are dropped: a late callback (say, a slow DNS answer) must not
    /// crash the process, and there is no thread left to run it on. Finish async work before ``shutdown()``.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let mustWake = pending.withLock { work -> Bool in
            if work.finished { return false }
            work.tasks.append(QueuedTask(run: task))
            // A wake-up only for a loop that waits, and one per wait: the loop thread itself (it never waits
            // while running a task) and submitters while the loop runs (a burst of downloads started from a
            // task group on a busy loop) write nothing; the loop takes their tasks at the end of its turn.
            guard work.loopWaits else { return false }
            work.loopWaits = false
            return true
        }
        if mustWake { wake() }
    }

    /// Runs `task` on the loop thread as ``execute(_:)`` does, or returns `false` without queueing it once
    /// ``shutdown()`` has been called: for work that must never be dropped and can run elsewhere (the job of a
    /// Swift task that prefers this loop as its executor), which the caller then runs elsewhere. A task
    /// accepted here always runs (the loop stops only with its queue empty), and such work never holds up a
    /// shutdown: a Swift task that keeps yielding would otherwise keep the loop turning for good.
    public func executeUnlessShuttingDown(_ task: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, mustWake) = pending.withLock { work -> (Bool, Bool) in
            if work.shuttingDown || work.finished { return (false, false) }
            work.tasks.append(QueuedTask(run: task))
            // The wake-up rule of `execute(_:)`.
            guard work.loopWaits else { return (true, false) }
            work.loopWaits = false
            return (true, true)
        }
        if mustWake { wake() }
        return accepted
    }

    /// Runs `body` on the loop thread and returns its result to the awaiting task.
    public func submit<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            execute { continuation.resume(with: Result<Value, any Error> { try body() }) }
        }
    }

    /// Stops the loop after the tasks already submitted have run, and waits for its thread to finish.
    /// Must not be called on the loop thread. Registered descriptors are not closed; their owners close them.
    ///
    /// When this returns, from any number of callers, the loop thread has exited: nothing of this loop runs
    /// any more (say, inside OpenSSL while the process is calling its exit handlers).
    public func shutdown() {
        precondition(!inEventLoop, "EventLoop.shutdown() would wait for its own thread")
        pending.withLock { $0.shuttingDown = true }
        wake()
        joined.withLock { joined in
            guard !joined, let thread else { return }
            do {
                try checkErrorNumber("pthread_join", pthread_join(thread, nil))
            } catch {
                preconditionFailure("cannot join the event loop thread: \(error)")
            }
            joined = true
        }
    }

    // MARK: Descriptors (loop thread only)

    /// Starts watching `fileDescriptor` for `interest`; `handler` runs on the loop thread with the events that
    /// occurred. `.error` and `.hangup` are always delivered.
    public func register(
        _ fileDescriptor: FileDescriptor,
        interest: IOEvents,
        handler: @escaping (IOEvents) -> Void
    ) throws(SystemError) -> FileDescriptorRegistration {
        precondition(inEventLoop, "EventLoop.register must be called on the loop thread")
        let token = nextToken
        nextToken += 1
        try epollSet.descriptor.epollControl(haul_EPOLL_CTL_ADD, fileDescriptor, events: interest.rawValue, token: token)
        handlers[token] = handler
        return FileDescriptorRegistration(token: token, fileDescriptor: fileDescriptor)
    }

    /// Replaces the set of events watched for a registered descriptor.
    public func setInterest(_ interest: IOEvents, for registration: FileDescriptorRegistration) throws(SystemError) {
        precondition(inEventLoop, "EventLoop.setInterest must be called on the loop thread")
        try epollSet.descriptor.epollControl(haul_EPOLL_CTL_MOD, registration.fileDescriptor, events: interest.rawValue,
                                             token: registration.token)
    }

    /// Stops watching a descriptor. Call before closing it: epoll tracks the open file, not the number, so a
    /// duplicated descriptor would otherwise keep delivering events.
    public func deregister(_ registration: FileDescriptorRegistration) {
        precondition(inEventLoop, "EventLoop.deregister must be called on the loop thread")
        guard handlers.removeValue(forKey: registration.token) != nil else { return }
        // Failure means the descriptor is already closed, which removed it from the epoll set anyway.
        try? epollSet.descriptor.epollControl(haul_EPOLL_CTL_DEL, registration.fileDescriptor, events: 0, token: 0)
    }

    /// Whether the latest `epoll_wait` reported an event for `registration` that has not been dispatched yet
    /// (asked from inside another descriptor's handler of the same batch).
    func hasUndispatchedEvent(for registration: FileDescriptorRegistration) -> Bool {
        precondition(inEventLoop, "EventLoop.hasUndispatchedEvent must be called on the loop thread")
        guard let batchTokens else { return false }
        var index = batchDispatched
        while index < batchCount {
            if batchTokens[index] == registration.token { return true }
            index &+= 1
        }
        return false
    }

    // MARK: Timers (loop thread only)

    /// Calls `callback` on the loop thread once `delay` has elapsed on the monotonic clock.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ callback: @escaping () -> Void) -> TimerID {
        scheduleTimer(at: MonotonicInstant.now().advanced(by: delay), callback)
    }

    /// Calls `callback` on the loop thread at `deadline`.
    @discardableResult
    public func scheduleTimer(at deadline: MonotonicInstant, _ callback: @escaping () -> Void) -> TimerID {
        precondition(inEventLoop, "EventLoop.scheduleTimer must be called on the loop thread")
        return timers.schedule(at: deadline, callback)
    }

    /// Cancels a timer that has not fired yet; cancelling a fired or cancelled timer does nothing.
    public func cancelTimer(_ timer: TimerID) {
        precondition(inEventLoop, "EventLoop.cancelTimer must be called on the loop thread")
        timers.cancel(timer)
    }

    // MARK: Work after this turn (loop thread only)

    /// Runs `work` (``LoopTurnWork/runAfterTurn()``) on this thread once the handler, timer or task running now
    /// has returned: after the current batch of events, before the due timers; work deferred while due timers
    /// or tasks run (or while deferred work runs) goes on the next turn, which then does not wait in
    /// `epoll_wait`. What a zero-delay timer did for a handler that must not call back into its caller
    /// re-entrantly, without reading the clock, a heap entry, a slot or a closure: one array append of an object
    /// that is already there. Work still deferred when the loop stops is dropped, as its timers are.
    func runAfterThisTurn(_ work: any LoopTurnWork) {
        precondition(inEventLoop, "EventLoop.runAfterThisTurn must be called on the loop thread")
        afterTurn.append(work)
    }

    /// Runs the work deferred so far; work deferred meanwhile waits for the next turn.
    private func runDeferredWork() {
        guard !afterTurn.isEmpty else { return }
        var work = runningAfterTurn
        runningAfterTurn = []
        swap(&work, &afterTurn)
        for item in work { item.runAfterTurn() }
        work.removeAll(keepingCapacity: true)
        runningAfterTurn = work
    }

    // MARK: The receive buffer (loop thread only)

    /// Lends the loop's receive buffer (at least `size` bytes) to `body`, which reads into it and hands the bytes
    /// to a handler that must not keep them past its return.
    ///
    /// One buffer per loop, not one per connection: the thread runs one read at a time and every byte read is
    /// parsed and written out before the next read, so per-connection buffers only multiplied memory (256 KiB
    /// each, 4 MiB at 16 connections) and touched new pages as a download went on. Callers check
    /// ``isLendingReceiveBuffer`` first: a handler that starts another connection's read must defer it.
    func withReceiveBuffer<Result, Failure: Error>(
        size: Int,
        _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        precondition(inEventLoop, "EventLoop.withReceiveBuffer must be called on the loop thread")
        precondition(!isLendingReceiveBuffer, "the loop's receive buffer is already lent")
        if receiveBuffer.count < size {
            receiveBuffer.deallocate()
            receiveBuffer = .allocate(byteCount: size, alignment: 64)
        }
        isLendingReceiveBuffer = true
        defer { isLendingReceiveBuffer = false }
        return try body(UnsafeMutableRawBufferPointer(rebasing: receiveBuffer[..<size]))
    }

    // MARK: The loop

    private func wake() {
        wakeUps.add(1, ordering: .relaxed)
        wakeCounter.descriptor.signalEventCounter()
    }

    private func run() {
        loopThreadID.store(UInt(pthread_self()), ordering: .releasing)
        blockBrokenPipeSignal()
        let epollSet = epollSet.descriptor
        let wakeCounter = wakeCounter.descriptor
        let capacity = Int(EventLoop.maximumEventsPerWait)
        let eventMasks = UnsafeMutablePointer<UInt32>.allocate(capacity: capacity)
        let tokens = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
        defer {
            eventMasks.deallocate()
            tokens.deallocate()
            // The thread is about to exit, and the system may give its `pthread_t` to the next thread it
            // creates: that one (say, the thread joining this loop in a second `shutdown()`) must not count
            // as the loop's.
            loopThreadID.store(0, ordering: .releasing)
        }

        while true {
            let count: Int32
            do {
                count = try epollSet.epollWait(masks: eventMasks, tokens: tokens, capacity: EventLoop.maximumEventsPerWait,
                                               timeoutMilliseconds: waitTimeoutMilliseconds())
            } catch {
                fatalError("event loop cannot continue: \(error)")
            }
            pending.withLock { $0.loopWaits = false }
            completedWaits &+= 1
            batchTokens = tokens
            batchCount = Int(count)
            for index in 0..<Int(count) {
                let token = tokens[index]
                batchDispatched = index &+ 1
                if token == EventLoop.wakeToken {
                    wakeCounter.drainEventCounter()
                } else if let handler = handlers[token] {
                    handler(IOEvents(rawValue: eventMasks[index]))
                }
            }
            batchTokens = nil
            batchCount = 0
            runDeferredWork()
            // Each array is taken out of its property while its callbacks run (they may schedule more), then
            // emptied, keeping its buffer, and put back.
            var due = dueTimers
            dueTimers = []
            timers.takeExpired(now: .now(), into: &due)
            for timer in due { timer.callback() }
            due.removeAll(keepingCapacity: true)
            dueTimers = due
            var tasks = runningTasks
            runningTasks = []
            let stopping = pending.withLock { work in
                swap(&tasks, &work.tasks)
                return work.shuttingDown
            }
            for task in tasks { task.run() }
            tasks.removeAll(keepingCapacity: true)
            runningTasks = tasks
            if stopping && pending.withLock({ work in
                if work.tasks.isEmpty { work.finished = true }
                return work.finished
            }) { break }
        }
        handlers.removeAll()
        timers = TimerQueue()
        afterTurn.removeAll()
    }

    /// OpenSSL writes to sockets with plain `write`, which raises SIGPIPE (killing the process) when the peer has
    /// reset the connection. All socket I/O happens on this thread, so blocking the signal here turns it into an
    /// `EPIPE` error without changing the process-wide disposition the application may rely on.
    private func blockBrokenPipeSignal() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGPIPE)
        do {
            try checkErrorNumber("pthread_sigmask", pthread_sigmask(SIG_BLOCK, &signals, nil))
        } catch {
            preconditionFailure("cannot block SIGPIPE on the event loop thread: \(error)")
        }
    }

    /// Milliseconds until the next timer (rounded up so it has expired on wake-up), 0 if tasks are queued or work
    /// deferred (``runAfterThisTurn(_:)``), -1 (forever) if nothing is scheduled. Otherwise the loop is about to wait: from here on, a task submitted
    /// writes the `eventfd` (`execute(_:)`).
    private func waitTimeoutMilliseconds() -> Int32 {
        // Deferred work runs on the next turn, at once: no wait, and no wake-up asked of other threads.
        if !afterTurn.isEmpty { return 0 }
        let queued = pending.withLock { work -> Bool in
            if !work.tasks.isEmpty || work.shuttingDown { return true }
            work.loopWaits = true
            return false
        }
        if queued { return 0 }
        guard let deadline = timers.nextDeadline() else { return -1 }
        let remaining = deadline.nanoseconds(since: .now())
        return Int32(min((remaining + 999_999) / 1_000_000, UInt64(Int32.max)))
    }
}

/// An object with work for its loop to run after the current turn (``EventLoop/runAfterThisTurn(_:)``): the
/// object itself is queued, so deferring allocates nothing.
protocol LoopTurnWork: AnyObject {
    /// Runs on the loop thread, once per ``EventLoop/runAfterThisTurn(_:)``.
    func runAfterTurn()
}
