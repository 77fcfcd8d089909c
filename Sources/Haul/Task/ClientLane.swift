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
    /// Makes finished files durable in batches shared by this lane's downloads: the files that finish on one
    /// turn of the loop start one batch, and a batch's outcomes come back to the loop as one task.
    let commits: GroupCommit
    /// Downloads (and single exchanges) started on this lane and not yet ended: what ``LaneChoice`` weighs,
    /// and what tells the lane's commit whether a file may still come to join a batch (``BatchGathering``).
    private let runningCount: RunningCount
    /// How many were ever started on this lane (for tests and statistics).
    private let startedCount = Atomic<Int>(0)
    /// The downloads prepared on this lane and not yet ended, running or paused. Loop-confined: added and
    /// removed on the loop; read by ``endDownloadsAfterShutdown()`` only once the loop's thread has exited.
    nonisolated(unsafe) var downloads: [ObjectIdentifier: DownloadTask] = [:]
    /// The single exchanges (``HaulClient/download(_:range:logger:)``, ``HaulClient/responseHeads(_:logger:)``)
    /// started on this lane and not yet ended; confined as ``downloads`` is.
    nonisolated(unsafe) var exchanges: [ObjectIdentifier: SingleExchange] = [:]
    /// Whether ``endDownloadsAfterShutdown()`` has run (two shutdowns at once sweep once).
    private let swept = Atomic<Bool>(false)
    /// How often running downloads publish a progress snapshot (``DownloadOptions/progressInterval``).
    private let progressInterval: Duration
    /// The lane's progress tick, pending while downloads run here (``startProgressTicks()``); loop-confined as
    /// ``downloads`` is. One timer for the lane rather than one per download: a small file ends long before
    /// its first tick, and scheduling and cancelling a timer for each cost a clock read, a heap entry, a
    /// closure and a cancellation per file.
    nonisolated(unsafe) private var progressTicker: TimerID?
    /// The lane's once-a-second speed check (``startSpeedChecks()``), pending while downloads here check their
    /// connections' speeds; loop-confined, one timer for the lane as ``progressTicker`` is.
    nonisolated(unsafe) private var speedTicker: TimerID?

    init(index: Int, options: DownloadOptions) throws(HaulError) {
        self.index = index
        progressInterval = options.progressInterval
        let loop: EventLoop
        do {
            loop = try EventLoop(name: index == 0 ? "haul-loop" : "haul-loop-\(index)")
        } catch {
            throw HaulError.unexpected("cannot start the event loop: \(error)")
        }
        self.loop = loop
        let runningCount = RunningCount()
        self.runningCount = runningCount
        var connectionOptions = ConnectionOptions()
        connectionOptions.timeouts = options.timeouts
        connectionOptions.network = options.network
        // As many idle connections per origin as may be open at once: a list run 32 at a time keeps its 32
        // (TLS) connections between files instead of closing the ones past 16 and handshaking again.
        httpClient = HTTPClient(loop: loop, tls: options.tls, connectionOptions: connectionOptions,
                                maxIdlePerOrigin: max(16, options.maximumConnections), proxy: options.proxy)
        // A file handed in on the loop waits for the end of the loop's turn (the other files finishing in it
        // join its batch); one handed in elsewhere (after hashing, on a blocking thread) goes at once.
        // A download ends only after its outcome is delivered, in the same turn of the loop (the commit's
        // count of files handed in and not yet delivered is then exact against this one).
        commits = GroupCommit(downloadsRunning: { runningCount.value.load(ordering: .relaxed) },
                              gather: { start in if loop.inEventLoop { loop.execute(start) } else { start() } },
                              deliver: { loop.execute($0) })
    }

    /// Downloads running on this lane now.
    var running: Int { runningCount.value.load(ordering: .relaxed) }
    /// Downloads ever started on this lane.
    var started: Int { startedCount.load(ordering: .relaxed) }

    /// A download starts on this lane.
    func enter() {
        runningCount.value.add(1, ordering: .relaxed)
        startedCount.add(1, ordering: .relaxed)
    }

    /// A download that ``enter()``ed ended.
    func leave() {
        runningCount.value.subtract(1, ordering: .relaxed)
    }

    /// A download started running here: the lane's progress tick runs until no download here runs. Its
    /// first tick comes within one interval of the call, not exactly one interval after it. Loop thread only.
    func startProgressTicks() {
        guard progressTicker == nil else { return }
        progressTicker = loop.scheduleTimer(after: progressInterval) { [self] in
            progressTicker = nil
            // A copy of the table: a snapshot's subscriber may end a download, which leaves the table.
            var running = false
            for download in downloads.values {
                if download.progressTick() { running = true }
            }
            if running { startProgressTicks() }
        }
    }

    /// A download here started its speed checks (``SegmentedDownload/checkSpeeds()``): they run once a second
    /// until no download here wants them. A download's first check comes within a second of the call (its
    /// first sample, which the checks measure the next ones from). Loop thread only.
    func startSpeedChecks() {
        guard speedTicker == nil else { return }
        speedTicker = loop.scheduleTimer(after: .seconds(1)) { [self] in
            speedTicker = nil
            var checking = false
            for download in downloads.values {
                if download.speedCheckTick() { checking = true }
            }
            if checking { startSpeedChecks() }
        }
    }

    /// Ends every download still running or paused here, and every single exchange still waiting for its
    /// answer, with ``HaulError/Reason/clientShutDown``, so that nothing awaiting one waits for good. Only
    /// after the loop's thread has exited (``EventLoop/shutdown()`` returned): what it confined is the
    /// caller's then.
    func endDownloadsAfterShutdown() {
        guard !swept.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let left = downloads
        downloads = [:]
        for download in left.values { download.endAfterShutdown() }
        let exchangesLeft = exchanges
        exchanges = [:]
        for exchange in exchangesLeft.values { exchange.endAfterShutdown() }
    }
}

/// A count of a lane's running downloads, shared with the closure its ``GroupCommit`` reads it through.
final class RunningCount: Sendable {
    let value = Atomic<Int>(0)
}
