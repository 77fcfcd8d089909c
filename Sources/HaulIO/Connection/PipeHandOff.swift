import Glibc
import SystemPackage

// The pipe → file half of a splice on another thread: the loop thread splices socket → pipe (cheap), a
// blocking-work thread moves the pipe's bytes into the file (the page-cache copy, two thirds of a big
// download's CPU: docs/benchmarks.md, "One big file: the floor, and Haul's distance from it"), and the loop
// learns the result in a completion. The pipe belongs to the writer until then; the connection's reader is
// stopped meanwhile, so at most one pipe's worth per connection is ever in flight (the backpressure: the
// socket is not read while its pipe is full).

/// Writes handed to a writer and not yet returned, run one at a time in the order given, and counted so
/// that a thread can wait until none is — before anything that must not overlap them (truncating the file,
/// a write of the same bytes from the receive buffer, the end of the download).
///
/// One writer at a time per queue (per download): writers of one file in parallel would only queue on the
/// file's lock in the kernel, and each extra one costs wake-ups (measured: 8 pool threads for 8 connections
/// took 40% more CPU per GiB than one). The writer is a blocking-work thread that drains the queue and
/// returns to the pool once it is empty; the next write starts another.
package final class WritesInFlight: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let returned = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Writes submitted and not yet returned (waiting or running).
    private var count = 0
    private var waiting: [@Sendable () -> Void] = []
    private var draining = false

    package init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(returned, nil)
    }

    deinit {
        pthread_cond_destroy(returned)
        pthread_mutex_destroy(mutex)
        returned.deallocate()
        mutex.deallocate()
    }

    /// Queues `write`, which must call ``end()`` once its bytes are written (or failed) and its report is
    /// on its way.
    package func submit(_ write: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        count += 1
        waiting.append(write)
        let starts = !draining
        draining = true
        pthread_mutex_unlock(mutex)
        if starts { BlockingWork.start { [self] in drain() } }
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
            for write in writes { write() }
        }
    }

    /// Counts one write as returned (from the thread that ran it).
    package func end() {
        pthread_mutex_lock(mutex)
        count -= 1
        let none = count == 0
        pthread_mutex_unlock(mutex)
        if none { pthread_cond_broadcast(returned) }
    }

    /// Whether any write is under way right now.
    package var isEmpty: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return count == 0
    }

    /// Blocks until every write begun has returned. A write does not need the caller's thread to return
    /// (it runs on a blocking-work thread), so this ends when the writes do: at once on a working disk,
    /// never while one hangs inside the kernel (as a write on the loop thread would hang there).
    package func waitUntilNone() {
        pthread_mutex_lock(mutex)
        while count > 0 { pthread_cond_wait(returned, mutex) }
        pthread_mutex_unlock(mutex)
    }
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
            // Queued before the write counts as returned: whoever waits for the writes
            // (``WritesInFlight/waitUntilNone()``) and then queues a task on the loop has it run after this.
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
