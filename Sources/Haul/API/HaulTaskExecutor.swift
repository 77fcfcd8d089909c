import HaulIO

/// Runs Swift tasks on a ``HaulClient``'s event-loop threads, where their downloads run and end: the client's
/// ``HaulClient/taskExecutor``.
///
/// A task that awaits a download is resumed by the loop that ran it. Without a preference, that resumption
/// goes to Swift's cooperative pool, which wakes a thread for it; so does the end of each child task for the
/// group that awaits it, and the next child it adds. Awaiting downloads from tasks that prefer this executor
/// keeps all of that on the loop thread, with no thread woken:
///
/// ```swift
/// await withTaskExecutorPreference(client.taskExecutor) {
///     await withTaskGroup(of: Void.self) { group in
///         for request in requests {
///             group.addTask { _ = try? await client.download(request) }
///         }
///     }
/// }
/// ```
///
/// Only for code that **awaits downloads and does little else**: the tasks' own code runs on the loop thread,
/// between the events of every connection of the loop, and whatever it computes (hashing a file, parsing a
/// document) or blocks on (a lock held long, a blocking system call) delays all of them. Hand such work to
/// another executor, or await it outside the preference.
///
/// With several loops (``DownloadOptions/eventLoops``), a job queued from one of them runs on that loop; one
/// queued from elsewhere (the first job of a task) runs on the loop with the fewest downloads. A download
/// still stays on the lane it starts on.
///
/// Once the client shuts down (``HaulClient/shutdown()``, or its last reference dropped), jobs queued here
/// run on Swift's global concurrent executor instead: a task that prefers a stopped client goes on, it is
/// never dropped, and it does not hold up the shutdown.
public final class HaulTaskExecutor: TaskExecutor {
    private let lanes: [ClientLane]

    init(lanes: [ClientLane]) {
        self.lanes = lanes
    }

    /// Queues `job` on one of the client's loops (where it runs after the loop's current turn of events), or
    /// on the global concurrent executor once the client is shutting down.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // The job runs with this executor as its current one: the task, whose preference this is, then
        // continues on it without a hop at each switch.
        let executor = asUnownedTaskExecutor()
        if !loopForNextJob().executeUnlessShuttingDown({ job.runSynchronously(on: executor) }) {
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// The loop the caller runs on, if it is one of the client's (queued there, the job needs no wake-up);
    /// otherwise the one a download starting now would run on.
    private func loopForNextJob() -> EventLoop {
        if lanes.count == 1 { return lanes[0].loop }
        for lane in lanes where lane.loop.inEventLoop { return lane.loop }
        return lanes[LaneChoice.lane(running: lanes.lazy.map(\.running))].loop
    }
}
