import Glibc
import SystemPackage

// The pipe → file half of a splice on another thread: the loop thread splices socket → pipe (cheap), a
// writer thread moves the pipe's bytes into the file (the page-cache copy, two thirds of a big
// download's CPU: docs/benchmarks.md, "One big file: the floor, and Haul's distance from it"), and the loop
// learns the result in a completion. The pipe belongs to the writer until then; the connection's reader is
// stopped meanwhile, so at most one pipe's worth per connection is ever in flight (the backpressure: the
// socket is not read while its pipe is full).

/// Writes handed to a writer and not yet returned, run one at a time in the order given, and counted so
/// that what must not overlap them — emptying the file, sizing it, the end of the download — can be put
/// off until they have returned (``whenAllReturned(on:_:)``) without the loop thread ever waiting for one:
/// a write hung in the kernel (a dying disk, a stuck network file system) then stalls its own download,
/// not every connection and timer of the loop.
///
/// One writer at a time per queue (per download): writers of one file in parallel would only queue on the
/// file's lock in the kernel, and each extra one costs wake-ups (measured: 8 pool threads for 8 connections
/// took 40% more CPU per GiB than one). The writer is a thread of a pool kept for these writes alone
/// (`BlockingThreadPool.writers`), which drains the queue and returns to the pool once it is empty; the next
/// write starts another. No other blocking work runs on those threads, so none can keep a write from starting.
package final class WritesInFlight: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Writes submitted, and writes returned: they return in the order submitted (one writer, a FIFO), so
    /// the writes submitted before a point have all returned once `returned` reaches `submitted` as it was then.
    private var submitted = 0
    private var returned = 0
    private var waiting: [@Sendable () -> Void] = []
    private var draining = false
    /// What waits for the writes submitted before it (``whenAllReturned(on:_:)``), oldest first.
    private var followers: [(after: Int, action: LoopAction)] = []
    /// Runs on the writer thread before each write (tests hold a write with it).
    private let beforeEachWrite: (@Sendable () -> Void)?

    package init(beforeEachWrite: (@Sendable () -> Void)? = nil) {
        self.beforeEachWrite = beforeEachWrite
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Queues `write`, which must call ``end()`` once its bytes are written (or failed) and its report is
    /// on its way.
    package func submit(_ write: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        submitted += 1
        waiting.append(write)
        let starts = !draining
        draining = true
        pthread_mutex_unlock(mutex)
        if starts { BlockingThreadPool.writers.submit { [self] in drain() } }
    }

    /// Runs the queued writes in order until none is left.
    private func drain() {
        while true {
            pthread_mutex_lock(mutex)
            guard !waiting.isEmpty else {
                draining = false
                pthread_mutex_unlock(mutex)
                return
            }
            let writes = waiting
            waiting.removeAll(keepingCapacity: true)
            pthread_mutex_unlock(mutex)
            for write in writes {
                beforeEachWrite?()
                write()
            }
        }
    }

    /// Counts one write as returned (from the thread that ran it), and queues on their loops what waited
    /// for it.
    package func end() {
        pthread_mutex_lock(mutex)
        returned += 1
        let due = followers.prefix { $0.after <= returned }.count
        let ready = followers[..<due].map(\.action)
        if due > 0 { followers.removeFirst(due) }
        pthread_mutex_unlock(mutex)
        for follower in ready { follower.queue() }
    }

    /// Whether any write is under way right now.
    package var isEmpty: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return returned == submitted
    }

    /// Runs `action` on `loop` once every write submitted before this call has returned — at once, here,
    /// when none is under way; otherwise on a later turn of the loop, after the last of those writes'
    /// completions (queued before the write counts as returned). Never waits. Writes submitted after this
    /// call do not hold `action` up. Loop thread only.
    ///
    /// If `loop` has stopped by then, `action` does not run (as no task queued on a stopped loop does).
    package func whenAllReturned(on loop: EventLoop, _ action: @escaping () -> Void) {
        precondition(loop.inEventLoop, "WritesInFlight.whenAllReturned(on:_:) off its loop")
        pthread_mutex_lock(mutex)
        guard returned < submitted else {
            pthread_mutex_unlock(mutex)
            return action()
        }
        followers.append((after: submitted, action: LoopAction(loop: loop, action: action)))
        pthread_mutex_unlock(mutex)
    }
}

/// An action of a loop-confined owner, carried to a writer thread and queued back on its loop from there.
/// @unchecked Sendable: `action` runs on `loop` only.
private final class LoopAction: @unchecked Sendable {
    let loop: EventLoop
    let action: () -> Void

    init(loop: EventLoop, action: @escaping () -> Void) {
        self.loop = loop
        self.action = action
    }

    func queue() { loop.execute { [self] in action() } }
}

/// What became of a hand-off (``PipedBytes/handOff(_:into:keeping:at:tracking:completion:)``).
package struct PipedWriteResult: Sendable {
    /// Bytes moved into the file (all of them unless `error`).
    package let moved: Int
    /// The failure, if the bytes did not all reach the file.
    package let error: SystemError?
    /// The file refused `splice` and the bytes were copied through user space instead.
    let fileRefusedSplice: Bool
}

extension PipedBytes {
    /// ``move(_:into:at:)`` on a writer thread (`tracking`'s, one write at a time): returns at once, and `completion` runs on the
    /// connection's loop once the `count` bytes are in `file` at `offset` or the move failed. Loop thread only.
    ///
    /// The caller must stop the connection's reader (a ``ReadDecision/stop``) and start it again from
    /// `completion`: the pipe is the writer's until then, and the connection reads nothing meanwhile.
    /// `owner` keeps `file` open until the write has returned (a descriptor closed under a write could be
    /// reused by another file in the meantime). `tracking` queues the write and counts it from now until it returns.
    /// If the loop is shutting down when the write returns, `completion` does not run.
    package func handOff(_ count: Int, into file: FileDescriptor, keeping owner: AnyObject & Sendable, at offset: Int64,
                        tracking: WritesInFlight, completion: @escaping (PipedWriteResult) -> Void) {
        precondition(count > 0 && count <= pipe.pending, "handing off \(count) of \(pipe.pending) piped bytes")
        precondition(!pipe.isHandedOff, "a pipe handed off twice")
        pipe.isHandedOff = true
        let job = PipeWriteJob(pipe: pipe, loop: loop, completion: completion)
        let source = pipe.pipe.readEnd.descriptor
        tracking.submit {
            let result = PipedBytes.moveAll(count, from: source, into: file, at: offset)
            withExtendedLifetime(owner) {}
            // Queued before the write counts as returned: what waits for the writes
            // (``WritesInFlight/whenAllReturned(on:_:)``) is queued on the loop after this.
            _ = job.loop.executeUnlessShuttingDown { job.returned(result) }
            tracking.end()
        }
    }

    /// ``move(_:into:at:)``'s work, on the writer thread: the pipe's fields are the loop's, so the result
    /// says what to record in them.
    private static func moveAll(_ count: Int, from source: FileDescriptor, into file: FileDescriptor, at offset: Int64) -> PipedWriteResult {
        var done = 0
        do {
            try source.spliceAll(count, into: file, at: offset, moved: &done)
            return PipedWriteResult(moved: done, error: nil, fileRefusedSplice: false)
        } catch where error.errno == EINVAL {
            do {
                try copyOut(count - done, from: source, into: file, at: offset + Int64(done))
                return PipedWriteResult(moved: count, error: nil, fileRefusedSplice: true)
            } catch {
                return PipedWriteResult(moved: done, error: error, fileRefusedSplice: true)
            }
        } catch {
            return PipedWriteResult(moved: done, error: error, fileRefusedSplice: false)
        }
    }
}

/// A hand-off's loop-side half, carried to the writer thread and back. @unchecked Sendable: the pipe's
/// fields and the completion are touched only on the loop thread (`returned` runs there); the writer
/// thread uses the pipe's descriptors alone.
private final class PipeWriteJob: @unchecked Sendable {
    let pipe: BodyPipe
    let loop: EventLoop
    let completion: (PipedWriteResult) -> Void

    init(pipe: BodyPipe, loop: EventLoop, completion: @escaping (PipedWriteResult) -> Void) {
        self.pipe = pipe
        self.loop = loop
        self.completion = completion
    }

    func returned(_ result: PipedWriteResult) {
        pipe.isHandedOff = false
        pipe.pending -= result.moved
        if result.fileRefusedSplice { pipe.fileRefusesSplice = true }
        completion(result)
    }
}
