import HaulIO
import Logging
import Synchronization
import SystemPackage

/// Downloads files over HTTP/1.1: each over up to N parallel ranged connections, many at once under one
/// connection cap, resuming by themselves after an interruption.
///
/// ```swift
/// let client = try HaulClient(options: DownloadOptions(connections: 8), logger: Logger(label: "downloads"))
/// let task = client.start(DownloadRequest(url: "https://example.org/big.iso", destination: .directory("downloads")))
/// for await progress in task.progress {
///     print(progress.bytesDone, progress.total ?? -1, progress.bytesPerSecond)
/// }
/// let result = try await task.value
/// ```
///
/// A client owns an event-loop thread (or ``DownloadOptions/eventLoops`` of them) and a keep-alive pool per
/// origin on each, so downloads from the same server reuse connections. Create one and keep it; dropping the
/// last reference stops its threads.
///
/// Give it a `Logger` (apple/swift-log) to see what its downloads do, as AsyncHTTPClient logs its requests:
/// at `debug`, each download's start, requests (`Range`), response heads, redirects, retries (with their
/// reason and delay), resume decisions and end; at `trace`, ranges moving between connections; at `notice`,
/// only a dropped mirror, a file that changed on the server and starts over, or an expired URL refreshed
/// (``URLRefresher``). Records carry
/// `haul.download.id`, `haul.url`, `haul.range`, `haul.connection`, `haul.attempt`. Without one nothing is
/// logged, at the cost of a level check per request.
public final class HaulClient: Sendable {
    /// The settings every download of this client uses.
    public let options: DownloadOptions
    /// The event loops downloads run on, each with its own pool and group commit (``DownloadOptions/eventLoops``
    /// of them). A download runs on one lane from start to end (``LaneChoice``).
    let lanes: [ClientLane]
    /// The cap on open connections, one for all lanes.
    let budget: ConnectionBudget
    /// Where downloads started without a logger of their own log (a logger that drops everything by default).
    public let logger: Logger
    /// Runs Swift tasks on the client's event-loop threads, so that a task awaiting downloads continues where
    /// they end, with no thread woken for it: for task groups that only await downloads (see
    /// ``HaulTaskExecutor`` for what else they must not do there).
    public let taskExecutor: HaulTaskExecutor
    /// Numbers the downloads for their log records (`haul.download.id`).
    private let downloadCount = Atomic<Int>(0)

    /// Starts the client's event-loop threads; fails only when the system refuses a thread or an epoll instance.
    ///
    /// `logger` receives the log records of every download that is not given a logger of its own
    /// (``start(_:logger:)``); without one, Haul logs nothing.
    public init(options: DownloadOptions = DownloadOptions(), logger: Logger? = nil) throws(HaulError) {
        self.options = options
        self.logger = logger ?? .haulDisabled
        var lanes: [ClientLane] = []
        do {
            for index in 0..<max(1, options.eventLoops) {
                lanes.append(try ClientLane(index: index, options: options))
            }
        } catch {
            for lane in lanes { lane.loop.shutdown() }
            throw error
        }
        self.lanes = lanes
        taskExecutor = HaulTaskExecutor(lanes: lanes)
        budget = ConnectionBudget(limit: options.maximumConnections)
    }

    deinit {
        // The last reference can go away on one of the loop threads itself (a closure that ran there), which
        // cannot wait for its own end, nor should stall there waiting for the others: then a blocking-work
        // thread does the waiting.
        let loops = lanes.map(\.loop)
        if loops.contains(where: \.inEventLoop) {
            BlockingWork.start { for loop in loops { loop.shutdown() } }
        } else {
            for loop in loops { loop.shutdown() }
        }
    }

    /// Stops the client's event-loop threads and returns once they have exited, so that no thread of Haul's is
    /// inside OpenSSL or a system call any more — call it before `exit()` (whose handlers tear OpenSSL
    /// down). Downloads still running or paused end with ``HaulError/Reason/clientShutDown`` where they
    /// stand, their files kept as they were (pause them first to have their journals brought up to date);
    /// so do downloads started, and the pauses, resumes and cancels asked for, afterwards. A single request
    /// still waiting (``download(_:range:logger:)``, ``responseHeads(_:logger:)``) ends with it too, a range's
    /// `.part` removed as after any failure of one, and so does one asked for afterwards. The client
    /// cannot be used afterwards.
    public func shutdown() async {
        let lanes = self.lanes
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Joining a thread blocks: never on the cooperative pool.
            BlockingWork.start {
                for lane in lanes { lane.loop.shutdown() }
                // The loops' threads have exited: nothing awaiting a download they ran may wait for good.
                for lane in lanes { lane.endDownloadsAfterShutdown() }
                continuation.resume()
            }
        }
    }

    /// The lane a download starting now runs on (``LaneChoice``), counted as running there until it
    /// ``ClientLane/leave()``s.
    func enterLane() -> ClientLane {
        let lane = lanes.count == 1 ? lanes[0] : lanes[LaneChoice.lane(running: lanes.lazy.map(\.running))]
        lane.enter()
        return lane
    }

    /// Starts a download and returns its handle at once; progress, pause, resume, cancel and the result
    /// are on the handle. Invalid URLs and headers are reported through the handle's result.
    ///
    /// An interrupted download of the same URL into the same destination resumes by itself from its journal
    /// (`NAME.part.haul`), unless the request discards it.
    ///
    /// `logger` receives this download's log records instead of the client's ``logger``: one carrying the
    /// metadata of the work it is done for (a request id, say), as with AsyncHTTPClient's `execute(logger:)`.
    public func start(_ request: DownloadRequest, logger: Logger? = nil) -> DownloadTask {
        begin(request, logger: logger, refresher: nil)
    }

    /// Starts a download as ``start(_:logger:)`` does, with `refreshingURL` to ask when its URL expires
    /// mid-download (a signed link; see ``URLRefresher``).
    public func start(_ request: DownloadRequest, logger: Logger? = nil, refreshingURL: @escaping URLRefresher) -> DownloadTask {
        begin(request, logger: logger, refresher: refreshingURL)
    }

    private func begin(_ request: DownloadRequest, logger: Logger?, refresher: URLRefresher?) -> DownloadTask {
        begin(request, logger: logger, refresher: refresher, lane: enterLane(), onLoopNow: false)
    }

    /// `lane`: entered for the download (``enterLane()``). `onLoopNow`: the caller may be running on the lane's
    /// loop (a job of a task that prefers it), where the download is prepared at once instead of queued.
    private func begin(_ request: DownloadRequest, logger: Logger?, refresher: URLRefresher?, lane: ClientLane,
                       onLoopNow: Bool) -> DownloadTask {
        var logger = logger ?? self.logger
        let number = downloadCount.add(1, ordering: .relaxed).newValue
        // Haul logs at `notice` at most: above that, no record is ever made and the id is not worth the copy
        // of the logger's storage (an allocation per download) that setting metadata makes.
        if logger.logLevel <= .notice { logger[metadataKey: LogKey.download] = "\(number)" }
        let task = DownloadTask(request: request, client: self, lane: lane, logger: logger, refresher: refresher)
        task.begin(onLoopNow: onLoopNow)
        return task
    }

    /// Downloads and waits for the result.
    ///
    /// Cancelling the calling Swift task stops the download the way a pause does (the partial file and its
    /// journal stay, so running it again resumes) and throws ``HaulError/cancelled``. To drop them as well,
    /// use ``start(_:logger:)`` and ``DownloadTask/cancel()``, which removes them even after such a stop.
    public func download(_ request: DownloadRequest, logger: Logger? = nil) async throws(HaulError) -> DownloadResult {
        try await startAndWait(request, logger: logger, refresher: nil)
    }

    /// Downloads as ``download(_:logger:)`` does, with `refreshingURL` to ask when the URL expires
    /// mid-download (a signed link; see ``URLRefresher``).
    public func download(_ request: DownloadRequest, logger: Logger? = nil,
                         refreshingURL: @escaping URLRefresher) async throws(HaulError) -> DownloadResult {
        try await startAndWait(request, logger: logger, refresher: refreshingURL)
    }

    /// Starts a download and waits for its end. From a task that prefers no executor of its own, the start
    /// and the wait run with the download's loop as the task's executor: the start is the one enqueue onto
    /// the loop the download needs anyway, and its end resumes the task there, with no thread woken for it;
    /// only the return to the caller's executor is a hop. Nothing of the caller's runs on the loop: the
    /// preference ends before this returns. The lane is chosen first, here, as ``start(_:logger:)`` does.
    private func startAndWait(_ request: DownloadRequest, logger: Logger?, refresher: URLRefresher?) async throws(HaulError) -> DownloadResult {
        let lane = enterLane()
        // A task that prefers an executor already (``taskExecutor``, say) keeps it: a preference for the loop
        // inside it would add two enqueues (onto the loop and back to its own executor) and save none.
        if withUnsafeCurrentTask(body: { $0?.unownedTaskExecutor != nil }) {
            return try await wait(for: begin(request, logger: logger, refresher: refresher, lane: lane, onLoopNow: false))
        }
        return try await withTaskExecutorPreference(lane.loop) { () async throws(HaulError) -> DownloadResult in
            try await wait(for: begin(request, logger: logger, refresher: refresher, lane: lane, onLoopNow: true))
        }
    }

    private func wait(for task: DownloadTask) async throws(HaulError) -> DownloadResult {
        try await withTaskCancellationHandler {
            await task.outcome()
        } onCancel: {
            task.stop()
        }.get()
    }

    /// Downloads `url` (and the same resource at `mirrors`) into the file `path`; see ``download(_:logger:)``.
    ///
    /// Like a ``DownloadRequest``, it refuses an existing file at `path` (``HaulError/destinationExists(path:)``,
    /// before anything is fetched) unless `replacingExisting` is true. Missing directories on the way to
    /// `path` are a ``HaulError/Reason/disk(path:_:)`` failure (`ENOENT`) unless `creatingDirectories` is true
    /// (``DownloadRequest/createsDirectories``). An interrupted download into `path` resumes from its journal,
    /// unless `restart` discards it.
    public func download(_ url: String, mirrors: [String] = [], to path: FilePath, replacingExisting: Bool = false,
                         creatingDirectories: Bool = false, restart: Bool = false) async throws(HaulError) -> DownloadResult {
        try await download(DownloadRequest(url: url, mirrors: mirrors, destination: .file(path), createsDirectories: creatingDirectories,
                                           replacesExisting: replacingExisting, discardsPartialDownload: restart))
    }

    /// Downloads `url` (and the same resource at `mirrors`) into memory and returns its bytes: for a small
    /// resource — a JSON document, a manifest — that needs no file. The same as ``download(_:logger:)`` with
    /// a ``DownloadRequest/Destination/memory(limit:)`` destination, returning ``DownloadResult/body``.
    ///
    /// `limit` (16 MiB unless given) bounds the memory the download takes: a resource whose announced length
    /// is larger is refused before any of its body is kept, one sent without a length is stopped as soon as
    /// it passes the limit, both with ``HaulError/Reason/responseTooLarge(url:limit:length:)``. A `checksum`
    /// is checked against the bytes. Cancelling the calling Swift task throws ``HaulError/cancelled`` and
    /// keeps nothing.
    public func bytes(from url: String, mirrors: [String] = [], limit: Int = 16 << 20,
                      checksum: Checksum? = nil) async throws(HaulError) -> [UInt8] {
        let result = try await download(DownloadRequest(url: url, mirrors: mirrors, destination: .memory(limit: limit), checksum: checksum))
        // A download into memory always carries its body.
        return result.body ?? []
    }

    /// Downloads `url` into the file `path`, given as a string; the same as the `FilePath` form above.
    public func download(_ url: String, mirrors: [String] = [], to path: String, replacingExisting: Bool = false,
                         creatingDirectories: Bool = false, restart: Bool = false) async throws(HaulError) -> DownloadResult {
        try await download(DownloadRequest(url: url, mirrors: mirrors, destination: .file(path), createsDirectories: creatingDirectories,
                                           replacesExisting: replacingExisting, discardsPartialDownload: restart))
    }
}
