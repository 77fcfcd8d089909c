/// A loop runs Swift tasks that prefer it (`withTaskExecutorPreference(loop) { ... }`, SE-0417) on its
/// thread, between its descriptors' events: a task that awaits something the loop itself resumes (a
/// continuation resumed from a handler) continues there at the end of the loop's turn, with no wake-up of
/// another thread. Such a task must only await: whatever it computes delays every connection of the loop.
extension EventLoop: TaskExecutor {
    /// Queues `job` to run on the loop thread after the current turn's events (with no wake-up when queued
    /// from the loop itself). Once the loop is shutting down, the job runs on Swift's global concurrent
    /// executor instead: a task that prefers a stopped loop goes on, it is never dropped.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        if !executeUnlessShuttingDown({ job.runSynchronously(on: executor) }) {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }
}
