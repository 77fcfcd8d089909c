import HaulHTTP
import HaulIO
import Logging
import Synchronization

/// A running (or paused, or finished) download, as ``HaulClient/start(_:logger:)`` returns it.
///
/// - ``value`` waits for the end: the ``DownloadResult``, or the ``HaulError`` that stopped it.
/// - ``progress`` delivers ``DownloadProgress`` snapshots until the end.
/// - ``pause()`` stops every connection after making the journal durable and returns then; ``resume()``
///   continues and returns once the download runs again. Both are `async` and return when their change has
///   taken effect. A paused download also continues in another process — even after a crash — by starting
///   the same request again.
/// - ``cancel()`` stops and deletes the partial file and its journal.
///
/// Every method is safe to call from any thread or task, in any state; calls that make no sense in the
/// current state (pausing a finished download) do nothing, except that resuming a download that failed or
/// was cancelled throws what ended it.
public final class DownloadTask: @unchecked Sendable {
    // @unchecked Sendable: `progressBroadcast` and `transfer` are thread-safe; everything under
    // "Loop-confined" is touched on the loop of the download's lane only.

    /// What the download was asked to do.
    public let request: DownloadRequest
    private let client: HaulClient
    /// The client's event loop this download runs on from start to end, with its pool and group commit.
    private let lane: ClientLane
    /// Where this download logs (the client's logger unless it was started with its own).
    let logger: Logger
    /// Asked for a fresh URL when the URL expires mid-download (``URLRefresher``).
    private let refresher: URLRefresher?
    private let progressBroadcast = ProgressBroadcaster<DownloadProgress, Result<DownloadResult, HaulError>>(
        DownloadProgress(phase: .connecting, bytesDone: 0, total: nil, bytesPerSecond: 0, estimatedTimeRemaining: nil,
                         activeConnections: 0, completedRanges: [], segments: [], elapsed: .zero, partialPath: ""))

    /// Who this download is in ``DestinationClaims``: it holds its final name from before it opens anything
    /// until its end (after the final rename), and gives it up while paused, as it does its `.part` lock.
    private let nameOwner = DestinationClaims.newOwner()

    /// Set once every byte is in (the finish remains) or the download ended, with who waits for that.
    private let transfer = Mutex<(ended: Bool, waiters: [@Sendable () -> Void])>((false, []))

    // MARK: Loop-confined

    private var lifecycle = DownloadLifecycle<SegmentedDownload>()
    private var pauseWaiters: [CheckedContinuation<Result<Void, HaulError>, Never>] = []
    private var resumeWaiters: [CheckedContinuation<Result<Void, HaulError>, Never>] = []
    private var cancelWaiters: [CheckedContinuation<Void, Never>] = []
    private var meter = ProgressMeter()
    /// The runs before the current one (a download paused and resumed in this process has several).
    private var earlierRuns = DownloadTotals()
    /// Whether the download ran before: then its caller's listing of the directory
    /// (``DownloadRequest/listedAbsentPath``) is older than the download's own files (a resume looks for its
    /// own `.part`), and is not used.
    private var ranBefore = false
    /// Whether the download has left its lane's count of running downloads (at its end, once).
    private var leftLane = false

    /// `lane`: where it runs, entered for it (``HaulClient/enterLane()``); it leaves the lane when it ends.
    init(request: DownloadRequest, client: HaulClient, lane: ClientLane, logger: Logger = .haulDisabled, refresher: URLRefresher? = nil) {
        self.request = request
        self.refresher = refresher
        self.client = client
        self.lane = lane
        self.logger = logger
    }

    deinit {
        // A download abandoned unfinished (its client shut down) names nothing any more.
        DestinationClaims.release(owner: nameOwner)
    }

    // MARK: Public

    /// The result, once the download has ended (a pause is not an end: this keeps waiting).
    ///
    /// Throws ``HaulError/cancelled`` after ``cancel()``. Cancelling the Swift task that awaits it stops
    /// the download the way ``HaulClient/download(_:logger:)`` does — like a pause, keeping the partial file and
    /// its journal for a later resume — and throws ``HaulError/cancelled``. Unlike URLSession's async
    /// methods, which drop what they fetched: a large file interrupted is worth resuming. ``cancel()``
    /// afterwards removes the files.
    public var value: DownloadResult {
        get async throws(HaulError) {
            try await withTaskCancellationHandler {
                await outcome()
            } onCancel: {
                stop()
            }.get()
        }
    }

    /// Returns once the download needs no connection any more: every byte is in and only its finish
    /// remains (checksum, the durable commit, the rename), or it has ended. A pause is not an end.
    ///
    /// For callers that limit how many downloads transfer at once: the next one can start here, while this
    /// one waits for the disk (durable commits are grouped, so many finishing files share one wait).
    public func transferEnded() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenTransferEnds { continuation.resume() }
        }
    }

    /// Calls `body` once the download needs no connection any more (see ``transferEnded()``): at once, on this
    /// thread, when that is so already, else on the thread that gets there (the event loop, or the thread of a
    /// durable commit). For a caller that runs many downloads without a Swift task (and a thread hop) each:
    /// `body` must be quick and must not block. When the download has ended by then, ``endResult`` is set.
    package func whenTransferEnds(_ body: @escaping @Sendable () -> Void) {
        let ended = transfer.withLock { transfer in
            if transfer.ended { return true }
            transfer.waiters.append(body)
            return false
        }
        if ended { body() }
    }

    /// Calls `body` with the outcome once the download has ended: at once, on this thread, when it has,
    /// else on the thread that ends it. The same rules as ``whenTransferEnds(_:)``.
    package func whenEnded(_ body: @escaping @Sendable (Result<DownloadResult, HaulError>) -> Void) {
        progressBroadcast.whenEnded(body)
    }

    /// The outcome, once the download has ended (nil before).
    package var endResult: Result<DownloadResult, HaulError>? {
        progressBroadcast.outcome
    }

    /// The latest snapshot.
    public var currentProgress: DownloadProgress {
        progressBroadcast.latest
    }

    /// Snapshots from now until the download ends (the last one has phase `.completed`, `.failed` or
    /// `.cancelled`); a consumer that falls behind gets the newest one. Each call is its own subscription.
    public var progress: AsyncStream<DownloadProgress> {
        progressBroadcast.stream
    }

    /// Stops every connection once the journal records every byte written, and returns then.
    ///
    /// The partial file and its journal stay; ``resume()`` continues in this process, and starting the same
    /// request continues in another. Paused before its first body byte, a download has nothing to resume:
    /// what it created (the `.part`, a journal, directories) is removed, and a resume starts as it did. Returns at once when there is nothing to pause (paused already,
    /// finishing, ended). Throws ``HaulError/checkpointFailed(_:)`` when that last checkpoint could not be
    /// written (a later resume then re-fetches what the previous checkpoint did not list).
    public func pause() async throws(HaulError) {
        let result = await withCheckedContinuation { continuation in
            // After the client's shutdown nothing runs to pause (it ended with `clientShutDown`).
            if !lane.loop.executeUnlessShuttingDown({ [self] in pauseOnLoop(continuation) }) { continuation.resume(returning: .success(())) }
        }
        try result.get()
    }

    /// Continues a paused download from its journal, and returns once it runs again (its connections are
    /// being opened): only the bytes the journal does not list are fetched, each request carrying
    /// `If-Range` so that a change on the server is noticed.
    ///
    /// - Returns at once when the download is running or finishing already; while it is still being
    ///   prepared (a pause asked for meanwhile is withdrawn), once it runs.
    /// - Returns, without resuming, when a ``pause()`` asked for after this call takes effect first.
    /// - Throws the error that ended the download when it cannot continue: preparing it again failed (say,
    ///   the partial file is gone or the destination now exists), it had failed, or ``HaulError/cancelled``
    ///   after ``cancel()``. Resuming a download that completed returns at once.
    public func resume() async throws(HaulError) {
        let result = await withCheckedContinuation { continuation in
            if !lane.loop.executeUnlessShuttingDown({ [self] in resumeOnLoop(continuation) }) {
                continuation.resume(returning: .failure(HaulError(.clientShutDown)))
            }
        }
        try result.get()
    }

    /// Stops the download and deletes its partial file and journal; ``value`` then throws
    /// ``HaulError/cancelled``. Returns once the files are gone. Does nothing to a finished download, nor to
    /// one that failed; a download stopped by cancelling the Swift task awaiting it kept its files, and this
    /// removes them then — unless another download has taken its destination meanwhile, whose files they are.
    public func cancel() async {
        await withCheckedContinuation { continuation in
            // After the client's shutdown the files stay: removing them is loop work, and none runs any more.
            if !lane.loop.executeUnlessShuttingDown({ [self] in cancelOnLoop(continuation) }) { continuation.resume() }
        }
    }

    // MARK: For the client and the session daemon

    /// Waits for the end without throwing (for callers that map the error themselves).
    func outcome() async -> Result<DownloadResult, HaulError> {
        await progressBroadcast.outcome()
    }

    /// Asks for a resume without waiting for it: for a caller that orders its requests on the loop (the
    /// session daemon pauses and resumes from one thread, and a pause sent after this one must come after it).
    package func requestResume() {
        lane.loop.execute { [self] in resumeOnLoop(nil) }
    }

    /// Starts the download: prepares it on the loop, then runs it. `onLoopNow`: the caller may be on the lane's
    /// loop (a job of a task that prefers it, ``HaulClient/download(_:logger:)``), where it prepares at once.
    func begin(onLoopNow: Bool = false) {
        if onLoopNow, lane.loop.inEventLoop { return prepareOnLoop() }
        // A download begun after the client's shutdown never reaches a loop: it ends here, at once.
        if !lane.loop.executeUnlessShuttingDown({ [self] in prepareOnLoop() }) { endAfterShutdown() }
    }

    /// Ends the download with ``HaulError/Reason/clientShutDown`` on a thread that is not its loop's, when
    /// that loop runs nothing of it any more: begun after ``HaulClient/shutdown()``, or still running or
    /// paused when the loop's thread exited. Its loop-confined state is the caller's then; its files stay
    /// as they stood (a new client resumes them from the journal).
    func endAfterShutdown() {
        end(.failure(HaulError(.clientShutDown)))
    }

    /// Stops like a pause (files kept for a later resume), then ends with ``HaulError/cancelled``.
    func stop() {
        lane.loop.execute { [self] in
            switch lifecycle.stop() {
            case .nothing: break
            case .pauseRun(let download): download.pauseOnLoop()
            case .endNow: end(.failure(.cancelled))
            }
        }
    }

    // MARK: Driving the download (on the loop)

    /// Checks the request and starts it. Preparing touches the file system with metadata calls and reads a
    /// journal of a few KiB (see ``DownloadPreparation``): done here, on the loop.
    private func prepareOnLoop() {
        lane.downloads[ObjectIdentifier(self)] = self
        publish(phase: .connecting)
        let options = client.options
        var request = DownloadPreparation.namedBeforeAsking(self.request), owner = nameOwner
        if ranBefore { request.listedAbsentPath = nil }
        launch(Result { () throws(HaulError) in
            // The name first: nothing is created or opened under a name another download holds.
            if case .file(let path) = request.destination { try DestinationClaims.claim(path, owner: owner) }
            return try DownloadPreparation.prepare(request, options: options)
        })
    }

    private func pauseOnLoop(_ continuation: CheckedContinuation<Result<Void, HaulError>, Never>) {
        switch lifecycle.pause() {
        case .wait(let download):
            pauseWaiters.append(continuation)
            download?.pauseOnLoop()
        case .nothing:
            continuation.resume(returning: .success(()))
        }
    }

    private func resumeOnLoop(_ continuation: CheckedContinuation<Result<Void, HaulError>, Never>?) {
        switch lifecycle.resume() {
        case .prepareAgain:
            if let continuation { resumeWaiters.append(continuation) }
            prepareOnLoop()
        case .waitForLaunch:
            if let continuation { resumeWaiters.append(continuation) }
        case .alreadyRunning:
            continuation?.resume(returning: .success(()))
        case .ended:
            continuation?.resume(returning: progressBroadcast.outcome.map { $0.map { _ in () } } ?? .success(()))
        }
    }

    private func cancelOnLoop(_ continuation: CheckedContinuation<Void, Never>) {
        switch lifecycle.cancel() {
        case .wait(let download):
            cancelWaiters.append(continuation)
            download?.cancelOnLoop()
        case .removeFiles:
            cancelWaiters.append(continuation)
            removeFilesAndEnd(run: nil)
        case .removeKeptFiles:
            removeKeptFiles(then: continuation)
        case .nothing:
            continuation.resume()
        }
    }

    /// Removes the partial file and journal that a stop (the awaiting Swift task cancelled) kept, for a
    /// ``cancel()`` after it. The download has ended, so its name is free: another download may hold it by now,
    /// in this process or another. The files go only under this task's claim on the name and the `.part`'s
    /// lock; a name or `.part` someone else holds is theirs and stays.
    private func removeKeptFiles(then continuation: CheckedContinuation<Void, Never>) {
        let paths = workingFiles(run: nil)
        guard let partPath = paths.last else { return continuation.resume() }
        let destination = WorkingFileNames.destination(ofPartial: partPath) ?? partPath
        guard (try? DestinationClaims.claim(destination, owner: nameOwner)) != nil else { return continuation.resume() }
        BlockingWork.start { [self] in
            if let locked = try? DownloadPreparation.lockedPartialFile(partPath) {
                for path in paths { try? OutputFile.remove(path) }
                withExtendedLifetime(locked.0) {}
            }
            DestinationClaims.release(owner: nameOwner)
            continuation.resume()
        }
    }

    /// `consuming`: the prepared download is taken apart into the running one, not copied out of `outcome`.
    private func launch(_ outcome: consuming Result<DownloadPreparation.Prepared, HaulError>) {
        let succeeded = if case .success = outcome { true } else { false }
        switch lifecycle.prepared(succeeded: succeeded) {
        case .fail:
            if case .failure(let error) = outcome { end(.failure(error)) }
        case .removeFiles:
            removeFilesAndEnd(run: nil)
        case .endCancelled:
            removeWhatPreparingCreated(outcome)
            end(.failure(.cancelled))
        case .paused:
            removeWhatPreparingCreated(outcome)
            DestinationClaims.release(owner: nameOwner)
            publish(phase: .paused)
            resolve(&pauseWaiters, .success(()))
            resolve(&resumeWaiters, .success(()))
        case .run:
            guard case .success(let prepared) = consume outcome else { return }
            // The request is read where it is; only a directory download's name resolver keeps a copy of it.
            let listingIsStale = ranBefore
            ranBefore = true
            let download = SegmentedDownload(
                loop: lane.loop, client: lane.httpClient, options: client.options, budget: client.budget,
                mirrors: prepared.mirrors, destination: prepared.destination,
                resolveName: prepared.directory.map {
                    var request = self.request
                    if listingIsStale { request.listedAbsentPath = nil }
                    return DownloadPreparation.nameResolver(directory: $0, request: request, primary: prepared.mirrors.primary.given,
                                                            claimant: nameOwner, writesUnnamedFiles: client.options.writesUnnamedFiles)
                },
                checksum: request.checksum, ifChangedOnServer: request.ifChangedOnServer, resume: prepared.resume,
                notices: prepared.notices, file: prepared.file, stream: prepared.stream.map(OrderedStream.init(descriptor:)),
                memoryLimit: prepared.memoryLimit, created: prepared.created, conditional: prepared.conditional,
                pieceHashes: request.pieceHashes, expectedSize: request.expectedSize,
                followsMetalink: request.followsMetalink && prepared.stream == nil, refresher: refresher,
                finalNameIsNew: prepared.finalNameIsNew, logger: logger, armSpeedChecks: { [lane] in lane.startSpeedChecks() })
            lifecycle.started(download)
            meter.restart()
            publish(phase: .connecting)
            lane.startProgressTicks()
            download.startOnLoop { [self] outcome in downloadEnded(outcome) }
            resolve(&resumeWaiters, .success(()))
        }
    }

    /// Stopped between preparing and running: no byte was fetched, so what preparing created goes again
    /// (``EarlyStopCleanup``) — before the prepared `.part` is closed, which releases its lock.
    private func removeWhatPreparingCreated(_ outcome: Result<DownloadPreparation.Prepared, HaulError>) {
        guard case .success(let prepared) = outcome, prepared.stream == nil, prepared.memoryLimit == nil else { return }
        let path = prepared.destination
        EarlyStopCleanup.decide(.init(
            created: prepared.created, resumed: prepared.resume != nil, bytesWritten: 0,
            partPath: path.map(WorkingFileNames.partial(of:)) ?? "", journalPath: path.map(WorkingFileNames.journal(of:)) ?? "")
        ).perform()
        withExtendedLifetime(prepared.file) {}
    }

    private func downloadEnded(_ outcome: SegmentedDownload.Outcome) {
        guard let download = lifecycle.run else { return }
        let snapshot = download.snapshot()
        switch outcome {
        case .finished(let run):
            let finished = Self.held(run)
            lifecycle.finishing()
            publish(snapshot, phase: .finishing)
            let destination = download.destination
            let started = meter.runStarted
            let earlierRuns = self.earlierRuns
            let loop = lane.loop
            let report: @Sendable (Result<[UInt8]?, HaulError>) -> Void = { [self] outcome in
                let result = outcome.map { body in
                    earlierRuns.including(DownloadResult(
                        path: destination, bytes: finished.bytes,
                        duration: .nanoseconds(Int64(MonotonicInstant.now().nanoseconds(since: started))),
                        finalURL: finished.finalURL, entityTag: finished.entityTag, lastModified: finished.lastModified,
                        redirects: finished.redirects, connections: finished.connections,
                        bytesRequested: finished.bytesRequested, retries: finished.retries, body: body,
                        response: finished.response))
                }
                if loop.inEventLoop { end(result) } else { loop.execute { [self] in end(result) } }
            }
            // The transfer's end is told after the loop's current batch of events, with the ends of the other
            // downloads finishing in it: a waiter that starts the next download (the CLI's list runner) is
            // then woken once for all of them, not once per file.
            DownloadFinishing.start(finished, destination: destination, checksum: request.checksum, setsRemoteTime: request.setsRemoteTime,
                                    synchronizes: client.options.synchronizesToDisk, commits: lane.commits,
                                    transferEnded: { [self] in loop.execute { [self] in endTransfer() } }, report: report)
        case .failed(let error):
            publish(snapshot, phase: .failed)
            // Over the size limit: what was written of a body without a length is no file anybody asked for,
            // and a run again would refuse it again. Nothing is kept.
            if case .responseTooLarge = error.reason { return removeFilesAndEnd(run: download, ending: error) }
            end(.failure(error))
        case .paused(let failure, let resumable):
            let counters = download.runCounters
            earlierRuns.add(duration: .nanoseconds(Int64(MonotonicInstant.now().nanoseconds(since: meter.runStarted))),
                            bytesRequested: counters.bytesRequested, retries: counters.retries, connections: counters.connections)
            switch lifecycle.runPaused() {
            case .endCancelled:
                end(.failure(.cancelled))
            case .removeFiles:
                removeFilesAndEnd(run: download)
            case .paused:
                DestinationClaims.release(owner: nameOwner)
                var paused = snapshot
                paused.checkpointFailure = failure
                publish(paused, phase: .paused, canResume: resumable)
                resolve(&pauseWaiters, failure.map { .failure(.checkpointFailed($0)) } ?? .success(()))
            }
        case .cancelled:
            lifecycle.finishing()
            removeFilesAndEnd(run: download)
        case .upToDate:
            lifecycle.finishing()
            publish(snapshot, phase: .finishing)
            let destination = download.destination
            let duration = Duration.nanoseconds(Int64(MonotonicInstant.now().nanoseconds(since: meter.runStarted)))
            let url = (try? HTTPURL(request.url))
            guard let url else { return end(.failure(.unexpected("an up-to-date download without its URL"))) }
            var result = DownloadResult(path: destination, bytes: PathStatus.of(destination)?.size ?? 0, duration: duration,
                                        finalURL: url, entityTag: nil, lastModified: nil, redirects: 0, connections: 1,
                                        bytesRequested: 0, retries: 0, status: 304)
            result.upToDate = true
            end(.success(earlierRuns.including(result)))
        case .metalinkDocument(let url):
            lifecycle.finishing()
            publish(snapshot, phase: .finishing)
            let request = self.request, client = self.client
            Task {
                let read = await MetalinkFollowing.read(request, documentURL: url, client: client)
                lane.loop.execute { [self] in
                    switch read {
                    case .success(let result): end(.success(earlierRuns.including(result)))
                    case .failure(let error): end(.failure(error))
                    }
                }
            }
        }
    }

    /// `finished`, as a reference of its own. Bound straight from the outcome, each closure and call that
    /// keeps it retained the whole ``SegmentedDownload/Outcome`` instead (an outlined copy that tests every
    /// case, four times per file): the optimizer treats the payload and its enum as one reference. A call it
    /// cannot see into hands back the class reference alone.
    @inline(never)
    private static func held(_ finished: SegmentedDownload.Finished) -> SegmentedDownload.Finished { finished }

    /// Deletes the partial file and its journal (off the loop), then ends with `ending`, ``HaulError/cancelled``
    /// unless given. `run` is the download that was running, if any (it knows the paths of a directory download).
    private func removeFilesAndEnd(run: SegmentedDownload?, ending: HaulError = .cancelled) {
        let paths = workingFiles(run: run)
        BlockingWork.start { [self] in
            for path in paths { try? OutputFile.remove(path) }
            lane.loop.execute { [self] in end(.failure(ending)) }
        }
    }

    /// The journal and the partial file of this download, in that order; none for a stream or memory.
    /// `run` is the download that was running, if any (it knows the paths of a directory download).
    private func workingFiles(run: SegmentedDownload?) -> [String] {
        // A file without a name leaves nothing on disk; a `.part` or journal there now is another download's.
        if let run, run.writesUnnamed { return [] }
        switch request.destination {
        case .memory, .stream:
            return []   // nothing on disk: an in-memory file goes with its download, a stream is the caller's
        case .file(let path):
            return [WorkingFileNames.journal(of: path), WorkingFileNames.partial(of: path)]
        case .directory:
            if let run, !run.partPath.isEmpty { return [run.journalPath, run.partPath] }
            let partial = progressBroadcast.latest.partialPath
            return partial.isEmpty ? [] : [WorkingFileNames.journal(of: WorkingFileNames.destination(ofPartial: partial) ?? partial), partial]
        }
    }

    /// Wakes ``transferEnded()`` waiters (once).
    private func endTransfer() {
        let waiters = transfer.withLock { transfer in
            transfer.ended = true
            defer { transfer.waiters = [] }
            return transfer.waiters
        }
        for waiter in waiters { waiter() }
    }

    private func end(_ result: Result<DownloadResult, HaulError>) {
        // The download's URL, unless a nearer one is known; without its credentials, since errors are printed,
        // logged and stored in session events.
        let result = result.mapError { $0.adding(url: HTTPURL.displayText(of: request.url)) }
        // Before the outcome is told: a caller that starts the next download once this one has ended finds
        // this lane free again and starts it here, on the connection this one kept alive.
        if !leftLane {
            leftLane = true
            lane.leave()
            lane.downloads[ObjectIdentifier(self)] = nil
        }
        // After the final rename (a finished download ends only then): the name is free for the next one.
        DestinationClaims.release(owner: nameOwner)
        lifecycle.ended()
        let phase: DownloadProgress.Phase
        // A finished file's length and path, for the final snapshot.
        var file: (bytes: Int64, path: String)?
        switch result {
        case .success(let value):
            phase = .completed
            file = (value.bytes, value.path)
            logger.debug("download finished", metadata: [
                "haul.destination": "\(value.path)", "haul.bytes": "\(value.bytes)", "haul.duration": "\(value.duration)",
                "haul.retries": "\(value.retries)", "haul.redirects": "\(value.redirects)", "haul.connections": "\(value.connections)",
            ])
        case .failure(let error):
            phase = error.isCancelled ? .cancelled : .failed
            if error.isCancelled { logger.debug("download cancelled") } else {
                logger.debug("download failed", metadata: [LogKey.reason: "\(error)"])
            }
        }
        // The latest snapshot is changed where it lies, not copied out and back in.
        progressBroadcast.end(result) { final in
            final.phase = phase
            final.activeConnections = 0
            final.estimatedTimeRemaining = nil
            if let file {
                final.bytesDone = file.bytes
                final.total = file.bytes
                final.completedRanges = file.bytes > 0 ? [0..<file.bytes] : []
                final.segments = []
                final.partialPath = file.path
            }
        }
        // After the outcome is set: a caller woken by ``transferEnded()`` finds the download ended and can take
        // its result at once, instead of waiting for it in another task (a second thread hop per download).
        endTransfer()
        // A pause asked for while the download was ending has nothing left to pause; a resume learns how
        // it ended.
        resolve(&pauseWaiters, .success(()))
        resolve(&resumeWaiters, result.map { _ in () })
        let cancelled = cancelWaiters
        cancelWaiters = []
        for waiter in cancelled { waiter.resume() }
    }

    private func resolve(_ waiters: inout [CheckedContinuation<Result<Void, HaulError>, Never>], _ result: Result<Void, HaulError>) {
        let resolved = waiters
        waiters = []
        for waiter in resolved { waiter.resume(returning: result) }
    }

    // MARK: Progress

    /// The lane's progress tick (``ClientLane/startProgressTicks()``): a running download publishes a
    /// snapshot. Whether it runs (false: paused, finishing or ended, nothing published). Loop thread only.
    func progressTick() -> Bool {
        guard let download = lifecycle.run else { return false }
        let snapshot = download.snapshot()
        publish(snapshot, phase: snapshot.total == nil && snapshot.bytesDone == 0 ? .connecting : .downloading)
        return true
    }

    /// The lane's once-a-second tick (``ClientLane/startSpeedChecks()``): the running download checks its
    /// connections' speeds. Whether it still wants the tick afterwards. Loop thread only.
    func speedCheckTick() -> Bool {
        guard let download = lifecycle.run, download.checksSpeeds else { return false }
        download.checkSpeeds()
        // The check may have ended or paused the run.
        guard let after = lifecycle.run else { return false }
        return after.checksSpeeds
    }

    private func publish(phase: DownloadProgress.Phase) {
        progressBroadcast.update { latest in
            latest.phase = phase
            if phase == .connecting || phase == .paused {
                latest.activeConnections = 0
                latest.bytesPerSecond = 0
                latest.estimatedTimeRemaining = nil
            }
        }
    }

    private func publish(_ snapshot: SegmentedDownload.Snapshot, phase: DownloadProgress.Phase, canResume: Bool = true) {
        // The latest snapshot is overwritten where it lies (every field), not replaced by a new one.
        let now = MonotonicInstant.now()
        progressBroadcast.update { latest in meter.update(&latest, from: snapshot, phase: phase, canResume: canResume, at: now) }
    }
}
