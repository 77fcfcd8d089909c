import Glibc
import HaulHTTP
import HaulIO
import HaulJournal
import Logging
import Synchronization
import SystemPackage

/// A running (or paused, or finished) download, as ``HaulClient/start(_:logger:)`` returns it.
///
/// - ``value`` waits for the end: the ``DownloadResult``, or the ``HaulError`` that stopped it.
/// - ``progress`` delivers ``DownloadProgress`` snapshots until the end.
/// - ``pause()`` stops every connection after making the journal durable; ``resume()`` continues, in this
///   process or — by starting the same request again — in another one, even after a crash.
/// - ``cancel()`` stops and deletes the partial file and its journal.
///
/// Every method is safe to call from any thread or task, in any state; calls that make no sense in the
/// current state (pausing a finished download) do nothing.
public final class DownloadTask: @unchecked Sendable {
    // @unchecked Sendable: `Published` is behind a mutex; everything under "Loop-confined" is touched on
    // the client's event loop only.

    /// What the download was asked to do.
    public let request: DownloadRequest
    private let client: HaulClient
    /// Where this download logs (the client's logger unless it was started with its own).
    let logger: Logger
    private let published = Mutex(Published())

    private struct Published {
        var latest = DownloadProgress(phase: .connecting, bytesDone: 0, total: nil, bytesPerSecond: 0,
                                      estimatedTimeRemaining: nil, activeConnections: 0, completedRanges: [],
                                      segments: [], elapsed: .zero, partialPath: "")
        var outcome: Result<DownloadResult, HaulError>?
        var waiters: [CheckedContinuation<Result<DownloadResult, HaulError>, Never>] = []
        var subscribers: [Int: AsyncStream<DownloadProgress>.Continuation] = [:]
        var nextSubscriber = 0
        /// Set once every byte is in (the finish remains) or the download ended.
        var transferEnded = false
        var transferWaiters: [CheckedContinuation<Void, Never>] = []
    }

    // MARK: Loop-confined

    private enum State {
        /// Checking the destination and any journal, off the loop.
        case preparing
        case running(SegmentedDownload)
        /// Checksum, sync and rename, off the loop.
        case finishing
        case paused
        case ended
    }

    /// What a pause, cancel or stop asked for while the download could not act on it yet.
    private enum Request {
        case none
        case pause
        case stop
        case cancel
    }

    private var state: State = .preparing
    private var pending: Request = .none
    private var pauseWaiters: [CheckedContinuation<Result<Void, HaulError>, Never>] = []
    private var cancelWaiters: [CheckedContinuation<Void, Never>] = []
    private var ticker: TimerID?
    private var rate = RateEstimator()
    private var runStarted = MonotonicInstant.now()
    private var lastBytes: Int64 = 0
    private var lastTotal: Int64?

    init(request: DownloadRequest, client: HaulClient, logger: Logger = .haulDisabled) {
        self.request = request
        self.client = client
        self.logger = logger
    }

    // MARK: Public

    /// The result, once the download has ended (a pause is not an end: this keeps waiting).
    ///
    /// Throws ``HaulError/cancelled`` after ``cancel()``. Cancelling the Swift task that awaits it stops
    /// the download the way ``HaulClient/download(_:logger:)`` does — like a pause, keeping the partial file and
    /// its journal for a later resume — and throws ``HaulError/cancelled``.
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
            let ended = published.withLock { published in
                if published.transferEnded { return true }
                published.transferWaiters.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
    }

    /// The latest snapshot.
    public var currentProgress: DownloadProgress {
        published.withLock { $0.latest }
    }

    /// Snapshots from now until the download ends (the last one has phase `.completed`, `.failed` or
    /// `.cancelled`); a consumer that falls behind gets the newest one. Each call is its own subscription.
    public var progress: AsyncStream<DownloadProgress> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let id: Int? = published.withLock { published in
                continuation.yield(published.latest)
                guard published.outcome == nil else { return nil }
                let id = published.nextSubscriber
                published.nextSubscriber += 1
                published.subscribers[id] = continuation
                return id
            }
            guard let id else { return continuation.finish() }
            continuation.onTermination = { [weak self] _ in
                _ = self?.published.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        }
    }

    /// Stops every connection once the journal records every byte written, and returns then.
    ///
    /// The partial file and its journal stay; ``resume()`` continues in this process, and starting the same
    /// request continues in another. Throws ``HaulError/checkpointFailed(_:)`` when that last checkpoint
    /// could not be written (a later resume then re-fetches what the previous checkpoint did not list).
    public func pause() async throws(HaulError) {
        let result = await withCheckedContinuation { continuation in
            client.loop.execute { [self] in pauseOnLoop(continuation) }
        }
        try result.get()
    }

    /// Continues a paused download from its journal: only the bytes it does not list are fetched, each
    /// request carrying `If-Range` so that a change on the server is noticed. Does nothing unless paused.
    public func resume() {
        client.loop.execute { [self] in
            switch state {
            case .paused: begin()
            case .preparing where pending == .pause: pending = .none
            default: break
            }
        }
    }

    /// Stops the download and deletes its partial file and journal; ``value`` then throws
    /// ``HaulError/cancelled``. Returns once the files are gone. Does nothing to a finished download.
    public func cancel() async {
        await withCheckedContinuation { continuation in
            client.loop.execute { [self] in cancelOnLoop(continuation) }
        }
    }

    // MARK: Driving the download

    /// Waits for the end without throwing (for callers that map the error themselves).
    func outcome() async -> Result<DownloadResult, HaulError> {
        await withCheckedContinuation { continuation in
            let done: Result<DownloadResult, HaulError>? = published.withLock { published in
                if let outcome = published.outcome { return outcome }
                published.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// Checks the request and starts it on the loop.
    ///
    /// Preparing touches the file system, but only with metadata calls (`stat`, `mkdir`) and reading a
    /// journal of a few KiB: each takes microseconds, less than handing the work to another thread and
    /// back, which for many small downloads was a measurable share of the time.
    func begin() {
        let options = client.options
        let request = self.request
        client.loop.execute { [self] in
            state = .preparing
            publish(phase: .connecting)
            launch(Result { () throws(HaulError) in try Self.prepare(request, options: options) })
        }
    }

    /// Stops like a pause (files kept for a later resume), then ends with ``HaulError/cancelled``.
    func stop() {
        client.loop.execute { [self] in
            switch state {
            case .preparing: pending = .stop
            case .running(let download): pending = .stop; download.pauseOnLoop()
            case .paused: end(.failure(.cancelled))
            case .finishing, .ended: break
            }
        }
    }

    private func pauseOnLoop(_ continuation: CheckedContinuation<Result<Void, HaulError>, Never>) {
        switch state {
        case .preparing:
            if pending == .none { pending = .pause }
            pauseWaiters.append(continuation)
        case .running(let download):
            if pending == .none { pending = .pause }
            pauseWaiters.append(continuation)
            download.pauseOnLoop()
        case .paused, .finishing, .ended:
            continuation.resume(returning: .success(()))
        }
    }

    private func cancelOnLoop(_ continuation: CheckedContinuation<Void, Never>) {
        switch state {
        case .preparing:
            pending = .cancel
            cancelWaiters.append(continuation)
        case .running(let download):
            pending = .cancel
            cancelWaiters.append(continuation)
            download.cancelOnLoop()
        case .paused:
            cancelWaiters.append(continuation)
            removeFilesAndEnd()
        case .finishing, .ended:
            continuation.resume()
        }
    }

    private func launch(_ outcome: Result<Prepared, HaulError>) {
        let prepared: Prepared
        switch (outcome, pending) {
        case (.failure(let error), _):
            return end(.failure(error))
        case (.success, .cancel):
            return removeFilesAndEnd()
        case (.success, .stop):
            return end(.failure(.cancelled))
        case (.success, .pause):
            pending = .none
            state = .paused
            publish(phase: .paused)
            return resolvePauseWaiters(.success(()))
        case (.success(let value), .none):
            prepared = value
        }
        let request = self.request
        let download = SegmentedDownload(
            loop: client.loop, client: client.httpClient, options: client.options, budget: client.budget,
            mirrors: prepared.mirrors, destination: prepared.destination,
            resolveName: prepared.directory.map { Self.nameResolver(directory: $0, request: request) },
            checksum: request.checksum, onChange: request.onChange, resume: prepared.resume,
            notices: prepared.notices, file: prepared.file, stream: prepared.stream.map(OrderedStream.init(descriptor:)),
            logger: logger)
        state = .running(download)
        runStarted = .now()
        rate = RateEstimator()
        publish(phase: .connecting)
        scheduleTick()
        download.startOnLoop { [self] outcome in downloadEnded(outcome) }
    }

    private func downloadEnded(_ outcome: SegmentedDownload.Outcome) {
        guard case .running(let download) = state else { return }
        if let ticker { client.loop.cancelTimer(ticker) }
        ticker = nil
        let snapshot = download.snapshot()
        switch outcome {
        case .finished(let finished):
            state = .finishing
            publish(snapshot, phase: .finishing)
            let request = self.request
            let synchronizes = client.options.synchronizesToDisk
            let destination = download.destination
            let started = runStarted
            let loop = client.loop
            let report: @Sendable (Result<Void, HaulError>) -> Void = { [self] outcome in
                let result = outcome.map {
                    DownloadResult(
                        path: destination, bytes: finished.bytes,
                        duration: .nanoseconds(Int64(MonotonicInstant.now().nanoseconds(since: started))),
                        finalURL: finished.finalURL, entityTag: finished.entityTag, lastModified: finished.lastModified,
                        redirects: finished.redirects, connections: finished.connections,
                        bytesRequested: finished.bytesRequested, retries: finished.retries)
                }
                if loop.inEventLoop { end(result) } else { loop.execute { [self] in end(result) } }
            }
            // A durable file goes to the client's group commit, which syncs it together with every other
            // file finishing meanwhile; hashing comes first, off the loop.
            if synchronizes, let file = finished.file {
                // The wait for the disk is shared with other files: a caller may start the next download.
                endTransfer()
                let commits = client.commits
                let entry = GroupCommit.Entry(
                    file: file, partPath: finished.partPath, destination: destination,
                    journalPath: finished.journaled ? finished.journalPath : nil, completion: report)
                if let checksum = request.checksum {
                    BlockingWork.start {
                        do throws(HaulError) {
                            try Self.verify(finished, checksum: checksum)
                            commits.submit(entry)
                        } catch {
                            report(.failure(error))
                        }
                    }
                } else {
                    commits.submit(entry)
                }
                return
            }
            let finish = { @Sendable in
                report(Result { () throws(HaulError) in
                    try Self.finish(finished, destination: destination, checksum: request.checksum, synchronizes: false)
                })
            }
            // Hashing takes long; without it the finish is one rename, quicker done here.
            if request.checksum != nil {
                endTransfer()
                BlockingWork.start(finish)
            } else {
                finish()
            }
        case .failed(let error):
            publish(snapshot, phase: .failed)
            end(.failure(error))
        case .paused(let failure, let resumable):
            switch pending {
            case .stop:
                end(.failure(.cancelled))
            case .cancel:
                removeFilesAndEnd()
            case .pause, .none:
                pending = .none
                state = .paused
                var paused = snapshot
                paused.checkpointFailure = failure
                publish(paused, phase: .paused, canResume: resumable)
                resolvePauseWaiters(failure.map { .failure(.checkpointFailed($0)) } ?? .success(()))
            }
        case .cancelled:
            removeFilesAndEnd()
        }
    }

    /// Deletes the partial file and its journal (off the loop), then ends with ``HaulError/cancelled``.
    private func removeFilesAndEnd() {
        let paths: [String]
        if case .running(let download) = state, !download.partPath.isEmpty {
            paths = [download.journalPath, download.partPath]
        } else if case .file(let path) = request.destination {
            paths = [WorkingFileNames.journal(of: path), WorkingFileNames.partial(of: path)]
        } else {
            paths = lastPartialPath.map { [$0 + ".haul", $0] } ?? []
        }
        state = .finishing
        BlockingWork.start { [self] in
            for path in paths { try? OutputFile.remove(path) }
            client.loop.execute { [self] in end(.failure(.cancelled)) }
        }
    }

    private var lastPartialPath: String? {
        let path = published.withLock { $0.latest.partialPath }
        return path.isEmpty ? nil : path
    }

    /// Wakes ``transferEnded()`` waiters (once).
    private func endTransfer() {
        let waiters = published.withLock { published in
            published.transferEnded = true
            defer { published.transferWaiters = [] }
            return published.transferWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func end(_ result: Result<DownloadResult, HaulError>) {
        endTransfer()
        if let ticker { client.loop.cancelTimer(ticker) }
        ticker = nil
        state = .ended
        pending = .none
        let phase: DownloadProgress.Phase
        switch result {
        case .success: phase = .completed
        case .failure(.cancelled): phase = .cancelled
        case .failure: phase = .failed
        }
        switch result {
        case .success(let value):
            logger.debug("download finished", metadata: [
                "haul.destination": "\(value.path)", "haul.bytes": "\(value.bytes)", "haul.duration": "\(value.duration)",
                "haul.retries": "\(value.retries)", "haul.redirects": "\(value.redirects)", "haul.connections": "\(value.connections)",
            ])
        case .failure(let error):
            if case .cancelled = error { logger.debug("download cancelled") } else {
                logger.debug("download failed", metadata: [LogKey.reason: "\(error)"])
            }
        }
        var final = published.withLock { $0.latest }
        final.phase = phase
        final.activeConnections = 0
        final.estimatedTimeRemaining = nil
        if case .success(let value) = result {
            final.bytesDone = value.bytes
            final.total = value.bytes
            final.completedRanges = value.bytes > 0 ? [0..<value.bytes] : []
            final.segments = []
            final.partialPath = value.path
        }
        let (waiters, subscribers) = published.withLock { published in
            published.latest = final
            published.outcome = result
            defer { published.waiters = []; published.subscribers = [:] }
            return (published.waiters, published.subscribers)
        }
        for subscriber in subscribers.values {
            subscriber.yield(final)
            subscriber.finish()
        }
        for waiter in waiters { waiter.resume(returning: result) }
        // A pause asked for while the download was ending has nothing left to pause.
        resolvePauseWaiters(.success(()))
        let cancelled = cancelWaiters
        cancelWaiters = []
        for waiter in cancelled { waiter.resume() }
    }

    private func resolvePauseWaiters(_ result: Result<Void, HaulError>) {
        let waiters = pauseWaiters
        pauseWaiters = []
        for waiter in waiters { waiter.resume(returning: result) }
    }

    // MARK: Progress

    private func scheduleTick() {
        ticker = client.loop.scheduleTimer(after: client.options.progressInterval) { [self] in
            ticker = nil
            guard case .running(let download) = state else { return }
            let snapshot = download.snapshot()
            publish(snapshot, phase: snapshot.total == nil && snapshot.bytesDone == 0 ? .connecting : .downloading)
            scheduleTick()
        }
    }

    private func publish(phase: DownloadProgress.Phase) {
        var latest = published.withLock { $0.latest }
        latest.phase = phase
        if phase == .connecting || phase == .paused { latest.activeConnections = 0; latest.bytesPerSecond = 0; latest.estimatedTimeRemaining = nil }
        send(latest)
    }

    private func publish(_ snapshot: SegmentedDownload.Snapshot, phase: DownloadProgress.Phase, canResume: Bool = true) {
        let now = MonotonicInstant.now()
        rate.record(bytes: snapshot.bytesDone, at: now)
        let perSecond = phase == .downloading ? rate.bytesPerSecond : 0
        var remaining: Duration?
        if let total = snapshot.total, perSecond > 0 {
            remaining = .milliseconds(Int64(Double(total - snapshot.bytesDone) / perSecond * 1000))
        }
        var progress = DownloadProgress(
            phase: phase, bytesDone: snapshot.bytesDone, total: snapshot.total, bytesPerSecond: perSecond,
            estimatedTimeRemaining: remaining, activeConnections: phase == .downloading ? snapshot.activeConnections : 0,
            completedRanges: snapshot.completedRanges, segments: snapshot.segments,
            elapsed: .nanoseconds(Int64(now.nanoseconds(since: runStarted))), partialPath: snapshot.partialPath,
            checkpointFailure: snapshot.checkpointFailure)
        progress.notices = snapshot.notices
        progress.canResume = canResume
        send(progress)
    }

    private func send(_ progress: DownloadProgress) {
        let subscribers = published.withLock { published in
            published.latest = progress
            return Array(published.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(progress) }
    }
}

// MARK: - Blocking steps

extension DownloadTask {
    /// The request, checked, and the journal of an interrupted download of it, if any.
    struct Prepared: @unchecked Sendable {
        // @unchecked Sendable: `ResumeJournal` is safe to hand from the preparing thread to the loop.
        var mirrors: MirrorSet
        /// The final path, or nil when a directory download still has to learn its name.
        var destination: String?
        var directory: String?
        var resume: (journal: ResumeJournal, state: JournalState)?
        var notices: [String] = []
        /// The `.part` file, opened and locked for this download (nil until a directory download is named).
        var file: OutputFile?
        /// The descriptor of a download delivered in order to a stream (not owned: the request's caller's).
        var stream: FileDescriptor?
    }

    static func prepare(_ request: DownloadRequest, options: DownloadOptions) throws(HaulError) -> Prepared {
        var urls: [HTTPURL] = []
        for text in [request.url] + request.mirrors {
            do { urls.append(try HTTPURL(text)) } catch { throw .invalidURL(error) }
        }
        let mirrors = MirrorSet(urls: urls, headers: HTTPFields(options.headers + request.headers), userAgent: options.userAgent)
        do { _ = try mirrors.request(to: urls[0], range: .from(0), ifRange: nil).serialized() } catch { throw .invalidRequest(error) }
        switch request.destination {
        case .file(let path):
            let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
            // The parent is looked at only when the `.part` cannot be created in it: the common case (it is
            // there) costs no `stat` per file, and a missing or wrong parent gets the same error as before.
            let opened: (OutputFile, created: Bool)
            do throws(HaulError) {
                opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
            } catch .disk(_, let error) where !parent.isEmpty && (error.errno == ENOENT || error.errno == ENOTDIR) {
                try prepareDirectory(parent, create: request.createsDirectories, rechecking: true)
                opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
            }
            let (file, created) = opened
            do throws(HaulError) {
                let resume = try interruptedDownload(at: WorkingFileNames.partial(of: path), file: file, url: urls[0], restart: request.discardsPartialDownload)
                if resume == nil, !request.replacesExisting, OutputFile.exists(path) { throw .destinationExists(path: path) }
                return Prepared(mirrors: mirrors, destination: path, directory: nil,
                                resume: resume.map { ($0.journal, $0.state) }, notices: resume?.note.map { [$0] } ?? [], file: file)
            } catch {
                // Nothing of this download may stay behind: not even the empty `.part` it just made.
                if created { try? OutputFile.remove(WorkingFileNames.partial(of: path)) }
                throw error
            }
        case .stream(let descriptor):
            guard request.checksum == nil else {
                throw .invalidDestination("a checksum needs the whole file, which a stream does not keep")
            }
            return Prepared(mirrors: mirrors, destination: nil, directory: nil, resume: nil, stream: descriptor)
        case .directory(let directory):
            try prepareDirectory(directory, create: request.createsDirectories)
            return Prepared(mirrors: mirrors, destination: nil, directory: directory, resume: nil)
        }
    }

    /// Opens (creating if needed) and locks the `.part` file, so that no other download — in this process
    /// or another — writes the same destination. A symbolic link there is refused, never followed.
    static func lockedPartialFile(_ partPath: String) throws(HaulError) -> (OutputFile, created: Bool) {
        do {
            let opened = try OutputFile.openForDownload(partPath)
            return (opened.file, opened.created)
        } catch where error.call == "flock" && error.errno == EWOULDBLOCK {
            let destination = WorkingFileNames.destination(ofPartial: partPath) ?? partPath
            throw .destinationBusy(path: destination, holder: OutputFile.lockHolder(of: partPath))
        } catch {
            throw .disk(path: partPath, error)
        }
    }

    private static func prepareDirectory(_ directory: String, create: Bool, rechecking: Bool = false) throws(HaulError) {
        guard !directory.isEmpty else { return }
        // A list of thousands of downloads into one directory would check it once per download. A recent
        // answer is taken instead: should the directory go meanwhile, creating the `.part` in it fails and
        // ``resolveName(in:head:url:request:)`` comes back here to check (and create) it again.
        let now = MonotonicInstant.now()
        if !rechecking, recentDirectory.withLock({ $0.map { $0.path == directory && now < $0.checked.advanced(by: .seconds(1)) } ?? false }) {
            return
        }
        guard !OutputFile.isDirectory(directory) else {
            recentDirectory.withLock { $0 = (directory, now) }
            return
        }
        guard create else {
            throw .disk(path: directory, SystemError(call: "stat", errno: OutputFile.exists(directory) ? ENOTDIR : ENOENT))
        }
        do { try OutputFile.createDirectories(directory) } catch { throw .disk(path: directory, error) }
    }

    /// The directory ``prepareDirectory(_:create:)`` last found, and when.
    private static let recentDirectory = Mutex<(path: String, checked: MonotonicInstant)?>(nil)

    static func nameResolver(directory: String, request: DownloadRequest) -> (ResponseHead, HTTPURL) throws -> SegmentedDownload.NameResolution {
        { head, url in try resolveName(in: directory, head: head, url: url, request: request) }
    }

    /// Names a directory download once the probe's head is in: the suggested name, checked against an
    /// existing file and an interrupted download of the same name. Runs on the loop; its file-system calls
    /// are a `stat` and, rarely, reading a journal of a few KiB.
    static func resolveName(in directory: String, head: ResponseHead, url: HTTPURL, request: DownloadRequest) throws(HaulError) -> SegmentedDownload.NameResolution {
        let name = SuggestedFileName.forResponse(head, url: url)
        let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        let primary: HTTPURL
        do { primary = try HTTPURL(request.url) } catch { throw .invalidURL(error) }
        let opened: (OutputFile, created: Bool)
        do throws(HaulError) {
            opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
        } catch .disk(_, let error) where error.errno == ENOENT || error.errno == ENOTDIR {
            // The directory checked at prepare (or recently, for another download) is gone or was replaced.
            try prepareDirectory(directory, create: request.createsDirectories, rechecking: true)
            opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
        }
        let (file, created) = opened
        do throws(HaulError) {
            if let resume = try interruptedDownload(at: WorkingFileNames.partial(of: path), file: file, url: primary, restart: request.discardsPartialDownload) {
                return .resume(destination: path, journal: resume.journal, state: resume.state, file: file)
            }
            if !request.replacesExisting, OutputFile.exists(path) { throw .destinationExists(path: path) }
            return .fresh(destination: path, file: file)
        } catch {
            if created { try? OutputFile.remove(WorkingFileNames.partial(of: path)) }
            throw error
        }
    }

    /// Checks the `.part` file against the expected checksum.
    static func verify(_ finished: SegmentedDownload.Finished, checksum: Checksum) throws(HaulError) {
        let actual: String
        do { actual = try FileDigest.hex(of: finished.partPath, algorithm: checksum.algorithm) } catch {
            throw .disk(path: finished.partPath, error)
        }
        guard actual == checksum.hex else {
            throw .checksumMismatch(path: finished.partPath, expected: checksum, actual: actual)
        }
    }

    /// Checksum, sync, atomic rename, journal removal, for one file on its own (a durable download of a
    /// client goes through its ``GroupCommit`` instead).
    static func finish(_ finished: SegmentedDownload.Finished, destination: String, checksum: Checksum?, synchronizes: Bool) throws(HaulError) {
        // A streamed download has delivered everything already: there is no file to check or rename.
        guard let file = finished.file else { return }
        if let checksum { try verify(finished, checksum: checksum) }
        do {
            if synchronizes { try file.synchronize() }
            try OutputFile.rename(finished.partPath, to: destination)
            // The rename is durable only once the directory is: without this a power cut could bring back
            // `.part` (or nothing) after haul said the file was there.
            if synchronizes { try OutputFile.synchronizeDirectory(containing: destination) }
        } catch {
            throw .disk(path: destination, error)
        }
        // The file is complete under its final name; the journal has nothing left to describe.
        if finished.journaled { try? ResumeJournal.remove(path: finished.journalPath) }
    }

    /// The journal of an interrupted download at `partPath`, if there is one to resume.
    ///
    /// A journal without its `.part` file (or with one of the wrong size) cannot be trusted and is
    /// discarded; a journal for another URL, or one that cannot be read, is an error unless `restart`.
    /// `file` is the `.part` file, opened and locked by the caller: nothing is read or removed without the lock.
    static func interruptedDownload(at partPath: String, file: OutputFile, url: HTTPURL, restart: Bool) throws(HaulError) -> (journal: ResumeJournal, state: JournalState, note: String?)? {
        let journalPath = partPath + ".haul"
        guard OutputFile.exists(journalPath) else { return nil }
        if restart {
            // The `.part` file stays (this download holds it open and locked); its content is truncated
            // when the new download learns the length.
            try? ResumeJournal.remove(path: journalPath)
            return nil
        }
        let opened: (ResumeJournal, JournalState)
        do {
            opened = try ResumeJournal.open(path: journalPath)
        } catch {
            throw .journal(error)
        }
        let state = opened.1
        var note: String?
        switch DownloadIdentity.decide(journalURL: state.url, journalResolvedURL: state.resolvedURL, journalETag: state.etag, requested: url) {
        case .same: break
        case .sameValidator(let text): note = text
        case .different(let detail): throw .partialDownloadMismatch(path: partPath, detail: detail)
        }
        let partSize: Int64
        do {
            partSize = try file.size()
        } catch {
            throw .disk(path: partPath, error)
        }
        guard partSize == state.totalLength else {
            // The data the journal describes is gone (or was replaced): start over rather than trust it.
            try? ResumeJournal.remove(path: journalPath)
            return nil
        }
        return (opened.0, opened.1, note)
    }
}
