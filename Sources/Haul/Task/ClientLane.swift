import HaulIO
import Synchronization

/// One of a ``HaulClient``'s event loops, with what the downloads that run on it use there: a keep-alive
/// pool and TLS context of its own (``HTTPClient``, loop-confined) and a group commit that hands its outcomes
/// back to this loop. A download stays on the lane it started on (``LaneChoice``) for its whole life, so
/// everything loop-confined stays on one thread; what lanes share (the client-wide ``ConnectionBudget``, the
/// name claims) is thread-safe.
final class ClientLane: Sendable {
    /// The lane's place in ``HaulClient/lanes`` (its loop thread is `haul-loop` for lane 0, `haul-loop-N` after).
    let index: Int
    let loop: EventLoop
    /// The HTTP client of this lane's downloads (its pool counts connections, for tests and statistics).
    let httpClient: HTTPClient
    /// Makes finished files durable in batches shared by every lane of the client (one ``GroupCommit``, so one
    /// run of batches, not one per lane): a file finishing on this loop asks for its batch's start at the end
    /// of the loop's turn, and a batch's outcomes for this lane's downloads come back to the loop as one task.
    let commits: GroupCommit.Lane
    /// Downloads (and single exchanges) started on this lane and not yet ended: what ``LaneChoice`` weighs.
    private let runningCount = Atomic<Int>(0)
    /// How many were ever started on this lane (for tests and statistics).
    private let startedCount = Atomic<Int>(0)
    /// Downloads running on every lane sharing ``commits``: how many may still hand it a file.
    private let clientRunning: RunningCount

    /// `sharing`: the lane whose group commit this one joins (the client's first); nil: a commit of its own.
    init(index: Int, options: DownloadOptions, sharing: ClientLane? = nil) throws(HaulError) {
        self.index = index
        let loop: EventLoop
        do {
            loop = try EventLoop(name: index == 0 ? "haul-loop" : "haul-loop-\(index)")
        } catch {
            throw HaulError.unexpected("cannot start the event loop: \(error)")
        }
        self.loop = loop
        let clientRunning = sharing?.clientRunning ?? RunningCount()
        self.clientRunning = clientRunning
        var connectionOptions = ConnectionOptions()
        connectionOptions.timeouts = options.timeouts
        connectionOptions.network = options.network
        // As many idle connections per origin as may be open at once: a list run 32 at a time keeps its 32
        // (TLS) connections between files instead of closing the ones past 16 and handshaking again.
        httpClient = HTTPClient(loop: loop, tls: options.tls, connectionOptions: connectionOptions,
                                maxIdlePerOrigin: max(16, options.maximumConnections), proxy: options.proxy)
        // A file handed in on the loop waits for the end of the loop's turn (the other files finishing in it
        // join its batch); one handed in elsewhere (after hashing, on a blocking thread) goes at once.
        let route = GroupCommit.Route(gather: { start in if loop.inEventLoop { loop.execute(start) } else { start() } },
                                      deliver: { loop.execute($0) })
        commits = (sharing?.commits.commit ?? GroupCommit(downloadsRunning: { clientRunning.value.load(ordering: .relaxed) })).lane(route)
    }

    /// Downloads running on this lane now.
    var running: Int { runningCount.load(ordering: .relaxed) }
    /// Downloads ever started on this lane.
    var started: Int { startedCount.load(ordering: .relaxed) }

    /// A download starts on this lane.
    func enter() {
        runningCount.add(1, ordering: .relaxed)
        startedCount.add(1, ordering: .relaxed)
        clientRunning.value.add(1, ordering: .relaxed)
    }

    /// A download that ``enter()``ed ended.
    func leave() {
        runningCount.subtract(1, ordering: .relaxed)
        clientRunning.value.subtract(1, ordering: .relaxed)
    }
}

/// A count shared by the lanes of one client: its downloads running on any of them.
final class RunningCount: Sendable {
    let value = Atomic<Int>(0)
}
