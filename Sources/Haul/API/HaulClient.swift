import HaulIO

/// Downloads files over HTTP/1.1: each over up to N parallel ranged connections, many at once under one
/// connection cap, resuming by themselves after an interruption.
///
/// ```swift
/// let client = try HaulClient(options: DownloadOptions(connections: 8))
/// let task = client.start(DownloadRequest(url: "https://example.org/big.iso", destination: .directory("downloads")))
/// for await progress in task.progress {
///     print(progress.bytesDone, progress.total ?? -1, progress.bytesPerSecond)
/// }
/// let result = try await task.value
/// ```
///
/// A client owns one event-loop thread and a keep-alive pool per origin, so downloads from the same server
/// reuse connections. Create one and keep it; dropping the last reference stops its thread.
public final class HaulClient: Sendable {
    /// The settings every download of this client uses.
    public let options: DownloadOptions
    /// The HTTP client (its pool counts connections, for tests and statistics).
    package let httpClient: HTTPClient
    let loop: EventLoop
    let budget: ConnectionBudget
    /// Makes finished files durable in batches shared by all of this client's downloads.
    let commits = GroupCommit()

    /// Starts the client's event-loop thread; fails only when the system refuses a thread or an epoll instance.
    public init(options: DownloadOptions = DownloadOptions()) throws(HaulError) {
        self.options = options
        do {
            loop = try EventLoop(name: "haul-loop")
        } catch {
            throw HaulError.unexpected("cannot start the event loop: \(error)")
        }
        var connectionOptions = ConnectionOptions()
        connectionOptions.timeouts = options.timeouts
        httpClient = HTTPClient(loop: loop, tls: options.tls, connectionOptions: connectionOptions, proxy: options.proxy)
        budget = ConnectionBudget(limit: options.maximumConnections)
    }

    deinit {
        // The last reference can go away on the loop thread itself (a closure that ran there), which
        // cannot wait for its own end: then another thread does the waiting.
        let loop = self.loop
        if loop.inEventLoop {
            BlockingWork.start { loop.shutdown() }
        } else {
            loop.shutdown()
        }
    }

    /// Stops the client's event-loop thread and returns once it has exited, so that no thread of Haul's is
    /// inside OpenSSL or a system call any more — call it before `exit()` (whose handlers tear OpenSSL
    /// down). Downloads still running are abandoned where they stand: pause them first. The client cannot
    /// be used afterwards.
    public func shutdown() async {
        let loop = self.loop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // Joining a thread blocks: never on the cooperative pool.
            BlockingWork.start {
                loop.shutdown()
                continuation.resume()
            }
        }
    }

    /// Starts a download and returns its handle at once; progress, pause, resume, cancel and the result
    /// are on the handle. Invalid URLs and headers are reported through the handle's result.
    ///
    /// An interrupted download of the same URL into the same destination resumes by itself from its journal
    /// (`NAME.part.haul`), unless the request discards it.
    public func start(_ request: DownloadRequest) -> DownloadTask {
        let task = DownloadTask(request: request, client: self)
        task.begin()
        return task
    }

    /// Downloads and waits for the result.
    ///
    /// Cancelling the calling Swift task stops the download the way a pause does (the partial file and its
    /// journal stay, so running it again resumes) and throws ``HaulError/cancelled``.
    public func download(_ request: DownloadRequest) async throws(HaulError) -> DownloadResult {
        let task = start(request)
        return try await withTaskCancellationHandler {
            await task.outcome()
        } onCancel: {
            task.stop()
        }.get()
    }

    /// Downloads `url` (and the same resource at `mirrors`) into the file `path`, replacing an existing file;
    /// see ``download(_:)``.
    public func download(_ url: String, mirrors: [String] = [], to path: String, restart: Bool = false) async throws(HaulError) -> DownloadResult {
        try await download(DownloadRequest(url: url, mirrors: mirrors, destination: .file(path), replacesExisting: true,
                                           discardsPartialDownload: restart))
    }
}
