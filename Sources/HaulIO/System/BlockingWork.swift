import Glibc

/// Runs blocking work (hashing a large file, `fdatasync`, opening and renaming files) on threads of its own,
/// so that it stalls neither the event loop nor Swift concurrency's cooperative pool.
///
/// The threads are kept and reused: starting a thread costs tens of microseconds, which adds up when many
/// small downloads each prepare and finish off the loop. A new thread starts only when every kept one is
/// busy (up to ``BlockingThreadPool/maximumThreads``), so a slow `fdatasync` does not hold up other work.
public enum BlockingWork {
    /// Runs `body` on a blocking-work thread and returns at once (the caller hears back however `body`
    /// reports, for example through ``EventLoop/execute(_:)``).
    public static func start(_ body: @escaping @Sendable () -> Void) {
        BlockingThreadPool.shared.submit(body)
    }

    /// Runs `body` on a blocking-work thread and returns its result.
    public static func run<Value: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result: Result<Value, Failure> = await withCheckedContinuation { continuation in
            BlockingThreadPool.shared.submit {
                continuation.resume(returning: Result { () throws(Failure) in try body() })
            }
        }
        return try result.get()
    }
}

/// The threads behind ``BlockingWork``: a FIFO of jobs, threads that wait for them, more threads when all
/// are busy.
final class BlockingThreadPool: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is guarded by `mutex`.

    static let shared = BlockingThreadPool(threadName: "haul-blocking")
    /// The threads that move handed-off spliced bytes into their files (``WritesInFlight``), and nothing
    /// else: no other blocking work (a hook's wait, a loop's shutdown, an `fdatasync`) can hold up a write's
    /// start.
    static let writers = BlockingThreadPool(threadName: "haul-writer")
    static let maximumThreads = 16

    private let threadName: String

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wakeUp = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [@Sendable () -> Void] = []
    private var nextJob = 0
    private var threads = 0
    private var idle = 0

    private init(threadName: String) {
        self.threadName = threadName
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wakeUp, nil)
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        let needsThread = idle == 0 && threads < Self.maximumThreads
        if needsThread { threads += 1 }
        let wakes = idle > 0
        pthread_mutex_unlock(mutex)
        // Signalled after the unlock: a thread woken while the mutex is still held would only block on it
        // again (a `futex` wait, and a wake at the unlock). A thread that is not waiting yet checks the queue
        // under the mutex before it waits, so it cannot miss the job.
        if wakes { pthread_cond_signal(wakeUp) }
        guard needsThread else { return }
        do {
            try PosixThread.spawnDetached(name: threadName) { [self] in work() }
        } catch {
            pthread_mutex_lock(mutex)
            threads -= 1
            let stranded = threads == 0
            pthread_mutex_unlock(mutex)
            // No thread at all could be started: run the work here rather than never.
            if stranded { drain() }
        }
    }

    private func work() {
        pthread_mutex_lock(mutex)
        while true {
            while nextJob == jobs.count {
                idle += 1
                pthread_cond_wait(wakeUp, mutex)
                idle -= 1
            }
            let job = takeJob()
            pthread_mutex_unlock(mutex)
            job()
            pthread_mutex_lock(mutex)
        }
    }

    /// Runs every queued job on the calling thread (only when no pool thread exists).
    private func drain() {
        while true {
            pthread_mutex_lock(mutex)
            guard nextJob < jobs.count else {
                pthread_mutex_unlock(mutex)
                return
            }
            let job = takeJob()
            pthread_mutex_unlock(mutex)
            job()
        }
    }

    /// Must hold `mutex`. Compacts the queue now and then instead of shifting it on every job.
    private func takeJob() -> @Sendable () -> Void {
        let job = jobs[nextJob]
        nextJob += 1
        if nextJob >= 64 && nextJob * 2 >= jobs.count {
            jobs.removeFirst(nextJob)
            nextJob = 0
        }
        return job
    }
}
