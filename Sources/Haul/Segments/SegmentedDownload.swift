import Glibc
import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// One download over up to N connections, all on one event loop: the driver that carries events from the
/// connections to the engine's decisions and carries out what they decide.
///
/// The decisions live in `Decisions/`, each a pure function with its own tests: what the first response
/// means (``ProbeResponseDecision``), whether a ranged response may be written (``RangedResponseDecision``),
/// which body bytes belong in the file (``BodyWindow``), which headers go where (``MirrorSet``,
/// ``CredentialScope``), what a failure leads to (``FailurePolicy``), which connections are too slow
/// (``ConnectionSpeedWatch``). The planner (``SegmentPlanner``) decides which bytes each connection asks
/// for. What remains here is bookkeeping: connections, timers, the file, the checkpoints.
///
/// Loop-confined. It ends by calling `completion` once with the state the final (blocking) steps need.
final class SegmentedDownload: @unchecked Sendable {
    // @unchecked Sendable: everything is touched on `loop` only (entry points hop onto it).

    /// What the loop hands to the blocking finish (checksum, sync, rename).
    struct Finished: Sendable {
        /// nil for a download streamed in order (``OrderedStream``): everything is delivered already.
        var file: OutputFile?
        /// Whether `file` is in memory (``DownloadRequest/Destination/memory(limit:)``): its bytes are read
        /// back into the result, nothing is renamed. `partPath` then names it for messages only.
        var inMemory = false
        var partPath: String
        var journalPath: String
        /// Whether a journal was written (small files have none), so the finish knows to remove it.
        var journaled: Bool
        var bytes: Int64
        var finalURL: HTTPURL
        var entityTag: EntityTag?
        var lastModified: HTTPDate?
        var redirects: Int
        var connections: Int
        var bytesRequested: Int64
        var retries: Int
        /// The response the run took the file from (``SegmentedDownload/response``).
        var response: ResponseHead?
    }

    /// How a download ended, for its ``DownloadTask``.
    enum Outcome {
        /// Every byte is written; the blocking finish remains.
        case finished(Finished)
        case failed(HaulError)
        /// Stopped by a pause after a final checkpoint (which may have failed). `resumable` is false when
        /// bytes were fetched from a server without range support: the next run starts over.
        case paused(checkpointFailure: JournalError?, resumable: Bool)
        /// Stopped by a cancel; any running checkpoint has landed, so the files can be removed.
        case cancelled
    }

    /// Where a download into a directory goes, decided once the probe's head names the file.
    enum NameResolution {
        /// Start a new file at this destination path, in `file` (its `.part`, opened and locked); `created`
        /// is what naming it created on disk.
        case fresh(destination: String, file: OutputFile, created: EarlyStopCleanup.Created)
        /// A journal for this destination exists: continue it (the probe's response is dropped).
        case resume(destination: String, journal: ResumeJournal, state: JournalState, file: OutputFile)
    }

    let loop: EventLoop
    let client: HTTPClient
    let options: DownloadOptions
    let checksum: Checksum?
    let ifChangedOnServer: ChangePolicy
    let budget: ConnectionBudget
    /// Request-level records (``LogKey``); drops everything unless the embedder gave a logger.
    let logger: Logger
    /// The final path, and the `.part` file written until the end; empty until a directory download's
    /// probe names the file.
    private(set) var destination: String
    private(set) var partPath: String
    /// Set for a download into a directory until the probe's head has named the file.
    private var resolveName: ((ResponseHead, HTTPURL) throws -> NameResolution)?
    private(set) var mirrors: MirrorSet
    let rateLimiter: RateLimiter?

    private(set) var planner: SegmentPlanner?
    private(set) var total: Int64?
    /// Whether the server answered the probe with 206: only then can bytes be fetched out of order.
    private(set) var rangesSupported = false
    private(set) var isFinished = false
    var bytesRequested: Int64 = 0
    private var file: OutputFile?
    private var workers: [SegmentWorker] = []
    private var retries = 0
    private var restarts = 0
    private var redirects = 0
    /// The first response accepted as the file in this run: the probe's, or for a download resumed from its
    /// journal (no probe) its first ranged response. Forgotten when the file starts over.
    private var response: ResponseHead?
    private var bytesDone: Int64 = 0
    private var peakConnections = 0
    private var monitor: TimerID?
    private var speedWatch: ConnectionSpeedWatch
    private var completion: ((Outcome) -> Void)?
    private(set) var journalPath: String
    private var resumeState: JournalState?
    private var checkpointer: Checkpointer?
    private var checkpointTimer: TimerID?
    private var resumeJournal: ResumeJournal?
    private var bytesAtLastCheckpoint: Int64 = 0
    /// What the user should be told about this download (a resume from another URL, say).
    private(set) var notices: [String] = []
    /// Set when the bytes go to a stream in order instead of a file: then no `.part`, no journal, and the
    /// planner hands out nothing past ``streamWindow`` beyond what the stream has delivered.
    let stream: OrderedStream?
    /// Most bytes requested ahead of the stream's delivery point: one request per connection.
    let streamWindow: Int64
    /// What one request of a streamed download asks for.
    let streamChunk: Int64
    private var horizonCheckQueued = false
    /// Set when the bytes are kept in memory (an anonymous file in `file`): no `.part`, no journal, and
    /// nothing past this many bytes is ever written (``DownloadRequest/Destination/memory(limit:)``).
    let memoryLimit: Int64?
    /// Mirror checks still out; nothing is requested for the file until they are all back.
    private var mirrorChecksPending = 0
    /// The form a refused probe fell back to (``ProbeResponseDecision/retryProbe(_:because:)``), which every
    /// later probe of this download keeps: a server that refused a form once refuses it again.
    private var probeFallback: ProbeForm?
    /// What this run created on disk (the `.part`, directories), removed again if it stops before its
    /// first body byte (``EarlyStopCleanup``).
    private var created: EarlyStopCleanup.Created
    /// The `.part` was created empty by this run (`O_EXCL`) and nothing has been written to it yet: the first
    /// ``prepareFile(length:)`` need not ask its size (an `fstat` per small file). Cleared by that call.
    private var partKnownEmpty = false

    /// `destination` nil means "into a directory": `resolveName` then names the file from the probe's head.
    init(loop: EventLoop, client: HTTPClient, options: DownloadOptions, budget: ConnectionBudget, mirrors: MirrorSet,
         destination: String?, resolveName: ((ResponseHead, HTTPURL) throws -> NameResolution)? = nil,
         checksum: Checksum? = nil, ifChangedOnServer: ChangePolicy = .fail,
         resume: (journal: ResumeJournal, state: JournalState)? = nil, notices: [String] = [], file: OutputFile? = nil,
         stream: OrderedStream? = nil, memoryLimit: Int? = nil, created: EarlyStopCleanup.Created = .init(),
         logger: Logger = .haulDisabled) {
        precondition(destination != nil || resolveName != nil || stream != nil || memoryLimit != nil,
                     "a download needs a destination or a way to name it")
        precondition(memoryLimit == nil || file != nil, "a download into memory is given its in-memory file")
        self.destination = destination ?? ""
        self.partPath = destination.map(WorkingFileNames.partial(of:)) ?? ""
        self.journalPath = destination.map(WorkingFileNames.journal(of:)) ?? ""
        self.resolveName = destination == nil ? resolveName : nil
        self.checksum = checksum
        self.ifChangedOnServer = ifChangedOnServer
        self.budget = budget
        self.resumeState = resume?.state
        self.resumeJournal = resume?.journal
        self.loop = loop
        self.client = client
        self.options = options
        self.mirrors = mirrors
        self.logger = logger
        self.rateLimiter = options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
        self.speedWatch = ConnectionSpeedWatch(
            window: Int(options.slowWindow.components.seconds), slowRatio: options.slowConnectionRatio,
            lowSpeed: options.lowSpeedLimit?.allowing(rateLimit: options.rateLimit, connections: options.connections))
        self.notices = notices
        self.file = file
        self.created = created
        self.partKnownEmpty = created.part && resume == nil
        self.stream = stream
        self.memoryLimit = memoryLimit.map(Int64.init)
        if stream != nil {
            // Nothing is written beside a stream: "-" names it, as on curl's command line.
            self.destination = "-"
            self.partPath = ""
            self.journalPath = ""
        }
        if memoryLimit != nil {
            // No path at all: nothing to lock, journal, rename, or remove on a cancel.
            self.destination = ""
            self.partPath = ""
            self.journalPath = ""
        }
        streamChunk = max(options.minimumSegment, 1 << 20)
        streamWindow = Int64(options.connections) * streamChunk
    }

    // MARK: Lifecycle

    func startOnLoop(completion: @escaping (Outcome) -> Void) {
        precondition(loop.inEventLoop)
        self.completion = completion
        let shownDestination = memoryLimit.map { "(memory, at most \($0) bytes)" }
            ?? (destination.isEmpty ? "(named by the server)" : destination)
        logger.debug("download starting", metadata: [
            LogKey.url: "\(mirrors.primary.given)", "haul.destination": "\(shownDestination)",
            "haul.connections": "\(options.connections)", "haul.mirrors": "\(mirrors.mirrors.count - 1)",
        ])
        begin()
        if let limit = options.totalTimeout {
            _ = loop.scheduleTimer(after: limit) { [self] in
                fail(.timedOut(after: limit, url: mirrors.primary.given.description, bytesReceived: bytesDone))
            }
        }
    }

    /// Starts (once the client-wide budget has a connection free): from the journal, or with the probe.
    private func begin() {
        guard !isFinished else { return }
        guard let first = addWorker(mirror: 0) else {
            return budget.waitForSlot(owner: self) { [self] in begin() }
        }
        if let resumeState {
            resume(from: resumeState, first: first)
        } else {
            sendProbe(first)
        }
        scheduleSpeedChecks()
    }

    /// Where the probe's range ends: one request's worth when other connections will share the file, so that
    /// the first connection asks for its segment a request at a time like the others, and a connection that
    /// runs out of work can take half of what the first one has left (an open-ended request makes its whole
    /// segment "in flight", which nobody may split, and the first connection became the download's tail).
    /// Open-ended with one connection (no other request, no extra round trip) and for a stream.
    private var probeEnd: Int64? {
        guard options.connections > 1, stream == nil else { return nil }
        return max(options.minimumSegment, SegmentPlanner.defaultRequestChunk)
    }

    /// Sends the probe in the form the server has not refused: the fallback a refusal chose, else bounded
    /// (``probeEnd``) — open-ended when it goes `again` after a failure, as it always has.
    private func sendProbe(_ worker: SegmentWorker, again: Bool = false) {
        let form = probeFallback ?? (again ? .openEnded : probeEnd.map { .bounded(end: $0) } ?? .openEnded)
        worker.request(first: 0, end: form.end, role: .probe, withoutRange: !form.sendsRange)
    }

    /// Asks again, at once, in the form the probe fell back to (a refused range, a coded answer, a server
    /// without validators): the server answered (it is not overloaded), and the question is another one.
    /// Counted among the download's retries (the result shows them, and they spend the budget like any
    /// other), but no failure in a row: at most two, each once.
    private func retryRefusedProbe(_ worker: SegmentWorker, because refusal: HaulError) {
        guard !isFinished else { return }
        retries += 1
        let form = probeFallback ?? .withoutRange
        logger.notice("the probe's answer cannot be used: asking again in another form", metadata: [
            LogKey.connection: "\(worker.id)", LogKey.url: "\(worker.url.map { "\($0)" } ?? "-")", LogKey.reason: "\(refusal)",
            LogKey.range: "\(form.sendsRange ? "bytes=\(form.rangeText)" : "-")",
        ])
        sendProbe(worker)
    }

    /// A new connection's worker, when the client-wide budget has a slot for it.
    private func addWorker(mirror: Int? = nil) -> SegmentWorker? {
        guard budget.take(upTo: 1) == 1 else { return nil }
        let id = (workers.map(\.id).max() ?? -1) + 1
        let worker = SegmentWorker(id: id, download: self, mirror: mirror ?? mirrors.mirror(forConnection: id))
        workers.append(worker)
        return worker
    }

    /// Opens up to `wanted` more connections; those the budget cannot give now are waited for.
    private func addWorkers(upTo wanted: Int) {
        guard !isFinished else { return }
        var added = 0
        while added < wanted, let worker = addWorker() {
            added += 1
            assignWork(worker)
        }
        if added < wanted {
            budget.waitForSlot(owner: self) { [self] in
                guard let planner, !isFinished else { return }
                // Only open what the remaining work can still use.
                let useful = planner.usefulConnections(limit: options.connections) - workers.filter(\.isBusy).count
                if useful > 0 { addWorkers(upTo: min(wanted - added, useful)) }
            }
        }
    }

    /// Gives every connection slot back to the client-wide budget (the download has stopped).
    private func releaseConnections() {
        budget.stopWaiting(owner: self)
        budget.giveBack(workers.count)
        workers.removeAll()
    }

    /// Stops every connection and reports `error` (once), after a last checkpoint so that running again
    /// resumes from everything written so far.
    func fail(_ error: HaulError) {
        guard !isFinished else { return }
        logger.debug("download stopping on an error", metadata: [LogKey.reason: "\(error)", "haul.bytes": "\(bytesDone)"])
        isFinished = true
        stopAll()
        releaseConnections()
        let report = { [self] in
            file?.unlock()
            completion?(.failed(error))
            completion = nil
        }
        let cleanup = earlyStopCleanup
        if !cleanup.isEmpty {
            // Nothing was written: no checkpoint to make, and what this run created goes again.
            return removeThenReport(cleanup, report)
        }
        if let checkpointer, let planner {
            if case .changedOnServer = error.reason { return checkpointer.whenIdle(report) }
            checkpointer.checkpoint(planner.written, completion: report)
        } else {
            report()
        }
    }

    /// What a stop now removes (``EarlyStopCleanup``): empty unless no body byte was written yet.
    private var earlyStopCleanup: EarlyStopCleanup {
        guard stream == nil, memoryLimit == nil else { return EarlyStopCleanup() }
        return EarlyStopCleanup.decide(.init(created: created, resumed: resumeState != nil,
                                             bytesWritten: max(bytesDone, planner?.written.count ?? 0),
                                             partPath: partPath, journalPath: journalPath))
    }

    /// Carries out `cleanup` once no checkpoint is writing (none can re-create the journal after it), while
    /// the `.part` is still locked, then calls `report`.
    private func removeThenReport(_ cleanup: EarlyStopCleanup, _ report: @escaping () -> Void) {
        let remove = {
            cleanup.perform()
            report()
        }
        if let checkpointer { checkpointer.discardWhenIdle(completion: remove) } else { remove() }
    }

    /// Continues an interrupted download: only the ranges the journal does not list as durable are fetched,
    /// each request carrying `If-Range` with the stored validator, so a changed file is noticed at once.
    private func resume(from state: JournalState, first: SegmentWorker) {
        // The download's identity, as the first run's probe showed it: every response is held to it.
        let identity = Validators(entityTag: state.etag.flatMap { EntityTag($0[...]) },
                                  lastModified: state.lastModified.map { HTTPDate(secondsSinceEpoch: $0) })
        guard !identity.isEmpty else { return startOverWithoutValidators(state, first: first) }
        let file: OutputFile
        if let opened = self.file {
            file = opened
        } else {
            do {
                file = try OutputFile.open(partPath, truncate: false)
            } catch {
                return fail(.disk(path: partPath, error))
            }
            self.file = file
        }
        total = state.totalLength
        rangesSupported = true
        mirrors.record(identity, for: 0)
        // Straight to where the URL led last time; back to the given URL if that has expired.
        if state.url == mirrors.primary.given.description, let text = state.resolvedURL, let resolved = try? HTTPURL(text) {
            mirrors.noteRedirect(0, to: resolved)
        }
        // Unsynced data (--no-sync) survives a crash of haul, not of the machine: after a reboot, none of it.
        let durable = state.trustedDurable(currentBootID: JournalState.currentBootID())
        if durable.count < state.durable.count {
            notices.append("the partial download was not synced to disk and the machine has restarted since: starting over")
            logger.notice("the journal's unsynced ranges predate a restart of the machine: fetching them again", metadata: [
                "haul.journal": "\(journalPath)", "haul.bytes.dropped": "\(state.durable.count - durable.count)",
            ])
        }
        logger.debug("resuming from the journal", metadata: [
            "haul.journal": "\(journalPath)", "haul.total": "\(state.totalLength)", "haul.bytes.reused": "\(durable.count)",
            "haul.ranges.reused": "\(durable.ranges.count)", "haul.etag": "\(state.etag.map { String(decoding: $0, as: UTF8.self) } ?? "-")",
        ])
        var planner = SegmentPlanner(total: state.totalLength, minimumSegment: options.minimumSegment, alreadyDone: durable)
        bytesDone = durable.count
        bytesAtLastCheckpoint = bytesDone
        checkpointer = Checkpointer(loop: loop, journalPath: journalPath, file: file, syncsData: options.synchronizesToDisk,
                                    state: state, journal: resumeJournal)
        scheduleCheckpoints()
        let connections = planner.usefulConnections(limit: options.connections)
        planner.splitForStart(connections: connections)
        self.planner = planner
        assignWork(first)
        addWorkers(upTo: connections - 1)
        finishIfDone()
    }

    /// A journal without any validator (an older Haul wrote those) cannot be continued: nothing would show
    /// whether the server still has the file its bytes are from. The download starts over, and says so.
    private func startOverWithoutValidators(_ state: JournalState, first: SegmentWorker) {
        notices.append("the partial download \(partPath) has no ETag or Last-Modified to prove the server still has the same file: starting over")
        logger.notice("discarding a journal without validators", metadata: [
            "haul.journal": "\(journalPath)", "haul.bytes.discarded": "\(state.durable.count)",
        ])
        Checkpointer.discard(path: journalPath)
        resumeState = nil
        resumeJournal = nil
        sendProbe(first)
    }

    /// Starts the resume journal — for files larger than one checkpoint window only (or `always`, for a
    /// pause): a smaller file lost in a crash costs no more than the window the journal would have saved,
    /// and skipping its create, sync and removal is what makes many small downloads cheap.
    private func startCheckpointing(always: Bool = false) {
        guard let file, let total, checkpointer == nil, rangesSupported, memoryLimit == nil,
              always || total > options.checkpointBytes else { return }
        let primary = mirrors.primary
        let state = JournalState(
            url: primary.given.description, mirrors: mirrors.mirrors.dropFirst().map(\.given.description),
            etag: primary.validators.entityTag.map(\.fieldValue), lastModified: primary.validators.lastModified?.secondsSinceEpoch,
            totalLength: total, minimumSegmentSize: options.minimumSegment,
            checksum: checksum.map { JournalChecksum(algorithm: $0.algorithm.rawValue, hex: $0.hex) },
            createdAt: Int64(time(nil)), resolvedURL: primary.isRedirected ? primary.resolved.description : nil)
        checkpointer = Checkpointer(loop: loop, journalPath: journalPath, file: file, syncsData: options.synchronizesToDisk, state: state)
        // A pause creates the journal with its own checkpoint, one job: a second signal during an extra
        // empty one (with its data sync) left no journal at all.
        guard !always else { return }
        checkpointer!.checkpoint(ByteRangeSet())
        scheduleCheckpoints()
    }

    private func scheduleCheckpoints() {
        checkpointTimer = loop.scheduleTimer(after: options.checkpointInterval) { [self] in
            checkpointTimer = nil
            guard !isFinished else { return }
            checkpointNow()
            scheduleCheckpoints()
        }
    }

    /// How long reads should wait because too much is written but not yet checkpointed.
    ///
    /// A crash loses at most what no finished checkpoint records. Checkpoints run while data keeps coming,
    /// so when the disk syncs slower than the network delivers, that amount would grow without bound;
    /// pausing reads at two windows (one being synced, one being written) keeps it bounded.
    func durabilityBackpressure() -> Duration? {
        guard readsHeldForDurability else { return nil }
        checkpointNow()
        return .milliseconds(5)
    }

    /// Whether reads wait for the checkpoints to catch up (``durabilityBackpressure()``).
    private var readsHeldForDurability: Bool {
        guard let checkpointer else { return false }
        return bytesDone - checkpointer.durableBytes >= 2 * options.checkpointBytes
    }

    private func checkpointNow() {
        guard let checkpointer, let planner, bytesDone != bytesAtLastCheckpoint else { return }
        bytesAtLastCheckpoint = bytesDone
        checkpointer.checkpoint(planner.written) { [self] in
            // Pages that failed to sync may be gone while the file still reads as written: nothing written
            // so far can be trusted to be on disk, so the download cannot honestly go on.
            if let failure = checkpointer.dataSyncFailure { fail(.disk(path: partPath, failure)) }
        }
    }

    /// Stops every connection after a final checkpoint, so that the journal lists everything written —
    /// whatever the file's size: a pause promises a resume.
    func pauseOnLoop() {
        guard !isFinished else { return }
        logger.debug("pausing", metadata: ["haul.bytes": "\(bytesDone)"])
        isFinished = true
        stopAll()
        releaseConnections()
        // Neither a stream nor memory keeps what it has: a resume of either starts over.
        let resumable = bytesDone == 0 || (rangesSupported && stream == nil && memoryLimit == nil)
        let cleanup = earlyStopCleanup
        if !cleanup.isEmpty {
            // Paused before the first body byte: there is nothing to resume, so nothing stays behind; the
            // next run (or ``DownloadTask/resume()``) starts as this one did.
            return removeThenReport(cleanup) { [self] in
                file?.unlock()
                completion?(.paused(checkpointFailure: nil, resumable: resumable))
                completion = nil
            }
        }
        startCheckpointing(always: true)
        guard let checkpointer, let planner else {
            file?.unlock()
            completion?(.paused(checkpointFailure: nil, resumable: resumable))
            completion = nil
            return
        }
        // `pausing`: the process may be killed right after (a second Ctrl-C), so a record that is true for
        // this boot goes first when no synced one is at stake (``Checkpointer``).
        checkpointer.checkpoint(planner.written, pausing: true) { [self] in
            file?.unlock()
            completion?(.paused(checkpointFailure: checkpointer.lastError, resumable: resumable))
            completion = nil
        }
    }

    /// Stops every connection; reports once no checkpoint is writing any more, so the caller can delete
    /// the files without racing one.
    func cancelOnLoop() {
        guard !isFinished else { return }
        logger.debug("cancelling", metadata: ["haul.bytes": "\(bytesDone)"])
        isFinished = true
        stopAll()
        releaseConnections()
        guard let checkpointer else {
            completion?(.cancelled)
            completion = nil
            return
        }
        checkpointer.whenIdle { [self] in
            completion?(.cancelled)
            completion = nil
        }
    }

    private func stopAll() {
        for worker in workers { worker.stop() }
        if let monitor { loop.cancelTimer(monitor) }
        monitor = nil
        if let checkpointTimer { loop.cancelTimer(checkpointTimer) }
        checkpointTimer = nil
    }

    /// Every byte is written: check that the file is exactly the resource's length, then report.
    private func succeed() {
        guard !isFinished, let total, let planner else { return }
        if let stream {
            guard stream.delivered == total, planner.written.count == total else {
                return fail(.unexpected("delivered \(stream.delivered) of \(total) bytes to the stream, \(planner.written.count) written"))
            }
            isFinished = true
            stopAll()
            releaseConnections()
            return report(nil)
        }
        guard let file else { return }
        let size: Int64
        do { size = try file.size() } catch { return fail(.disk(path: fileLabel, error)) }
        guard size == total, planner.written.count == total, planner.written.gaps(in: 0..<total).isEmpty else {
            return fail(.unexpected("\(fileLabel) has \(size) bytes and \(planner.written.count) written, expected \(total)"))
        }
        isFinished = true
        stopAll()
        releaseConnections()
        // A checkpoint may still be writing the journal; report only after it has landed, so that removing
        // the journal after the final rename cannot race with its creation.
        if let checkpointer {
            checkpointer.checkpoint(planner.written) { [self] in report(file) }
        } else {
            report(file)
        }
    }

    private func report(_ file: OutputFile?) {
        let primary = mirrors.primary
        completion?(.finished(Finished(file: file, inMemory: memoryLimit != nil, partPath: fileLabel, journalPath: journalPath,
                                       journaled: checkpointer != nil || resumeJournal != nil, bytes: total ?? bytesDone,
                                       finalURL: primary.resolved, entityTag: primary.validators.entityTag,
                                       lastModified: primary.validators.lastModified, redirects: redirects,
                                       connections: peakConnections, bytesRequested: bytesRequested, retries: retries,
                                       response: response)))
        completion = nil
    }

    /// Throws away everything and starts over from the probe (the resource changed and the caller allowed
    /// it) — once any checkpoint in flight has landed, so that it cannot re-create the discarded journal.
    private func restart() {
        restarts += 1
        logger.notice("the file changed on the server: starting over", metadata: [
            LogKey.url: "\(mirrors.primary.given)", "haul.bytes.discarded": "\(bytesDone)",
        ])
        stopAll()
        resetToProbe()
        mirrors.forgetValidators()
        // Keep one connection slot for the new probe, so that another download cannot take it meanwhile.
        budget.giveBack(workers.count - 1)
        let probe = SegmentWorker(id: 0, download: self, mirror: 0)
        workers = [probe]
        let previous = checkpointer
        checkpointer = nil
        resumeState = nil
        resumeJournal = nil
        let startOver = { [self] in
            Checkpointer.discard(path: journalPath)
            guard !isFinished else { return }
            sendProbe(probe)
            scheduleSpeedChecks()
        }
        if let previous { previous.whenIdle(startOver) } else { startOver() }
    }

    /// Forgets the plan so the next probe starts the file over (the file itself is truncated by the probe).
    private func resetToProbe() {
        planner = nil
        total = nil
        response = nil
        rangesSupported = false
        bytesDone = 0
        bytesAtLastCheckpoint = 0
    }

    // MARK: Progress

    /// What the download's progress looks like now, for ``DownloadProgress``.
    struct Snapshot {
        var bytesDone: Int64
        var total: Int64?
        var activeConnections: Int
        var completedRanges: [Range<Int64>]
        var segments: [DownloadProgress.Segment]
        var checkpointFailure: JournalError?
        var partialPath: String
        var notices: [String]
    }

    /// What this run has cost so far, for a result that covers every run of a paused and resumed download.
    var runCounters: (bytesRequested: Int64, retries: Int, connections: Int) {
        (bytesRequested, retries, peakConnections)
    }

    func snapshot() -> Snapshot {
        let active = workers.filter(\.isBusy)
        var segments: [DownloadProgress.Segment] = []
        if let planner {
            let owners = Set(active.compactMap(\.segment))
            for segment in planner.segments.values where segment.remaining > 0 {
                segments.append(.init(start: segment.start, next: segment.next, end: segment.end,
                                      isActive: owners.contains(segment.id)))
            }
            segments.sort { $0.start < $1.start }
        }
        return Snapshot(bytesDone: bytesDone, total: total, activeConnections: active.count,
                        completedRanges: planner?.written.ranges ?? (bytesDone > 0 ? [0..<bytesDone] : []),
                        segments: segments, checkpointFailure: checkpointer?.lastError, partialPath: partPath,
                        notices: notices)
    }

    // MARK: Responses

    /// The probe's head decides the shape of the whole download (``ProbeResponseDecision``).
    func acceptProbe(_ head: ResponseHead, _ facts: ResponseFacts, from worker: SegmentWorker) throws -> HeadDecision {
        // A bounded probe counted its range when it was sent; what it carries is counted below, per decision.
        if let end = worker.requestEnd { bytesRequested -= end - worker.requestFirst }
        let url = worker.url!
        let decision = ProbeResponseDecision.decide(facts, url: url.description, form: worker.probeForm)
        switch decision {
        case .redirect:
            preconditionFailure("redirects are followed before the probe's decision")
        case .faulty(let error), .failed(let error):
            throw error
        case .retryProbe(let form, let refusal):
            // Nothing of this response is the file (no window): its body is drained, then the probe goes again.
            probeFallback = form
            worker.verdict = .retryProbe(because: refusal)
            return .receiveBody
        case .ranged, .whole, .empty, .withoutValidators:
            break
        }
        if let resolveName {
            self.resolveName = nil
            switch try resolveName(head, url) {
            case .fresh(let destination, let file, let created):
                setDestination(destination)
                self.file = file
                self.created = self.created.merged(with: created)
                partKnownEmpty = created.part
            case .resume(let destination, let journal, let state, let file):
                // An earlier run left this very file half done: continue it instead of this response.
                setDestination(destination)
                self.file = file
                worker.verdict = .retired
                loop.execute { [self] in switchToJournal(journal, state) }
                return .abandon
            }
        }
        if response == nil { response = head }
        switch decision {
        case .ranged(let length, let served, let validators, let streamBody):
            try refuseOverMemoryLimit(length, url: url)
            mirrors.record(validators, for: worker.requestMirror)
            total = length
            // Mirrors that have not shown their length yet are asked first (``MirrorCheck``): URLs that are
            // different files fail the download before a byte is written.
            let unchecked = mirrors.indices.filter { $0 != worker.requestMirror && !mirrors[$0].verified && !mirrors[$0].dropped }
            let streamBody = streamBody && unchecked.isEmpty
            if unchecked.isEmpty { try prepareFile(length: length) }
            rangesSupported = true
            var planner = stream == nil
                ? SegmentPlanner(total: length, minimumSegment: options.minimumSegment)
                : SegmentPlanner(total: length, minimumSegment: min(options.minimumSegment, streamChunk),
                                 horizon: streamWindow, requestChunk: streamChunk)
            let connections = planner.usefulConnections(limit: options.connections)
            planner.splitForStart(connections: connections)
            let work = planner.nextRequest(for: worker.id)!
            precondition(work.range.lowerBound == 0, "the probe's segment starts at byte 0")
            if streamBody {
                // What the response carries of the probe's segment is in flight and nobody may take part of it
                // (all of the segment for an open-ended probe); the rest is asked for a request at a time.
                let inFlight = min(planner.end(of: work.segment), served.upperBound)
                planner.markRequested(work.segment, upTo: inFlight)
                worker.segment = work.segment
                worker.requestEnd = served.upperBound
                worker.window = BodyWindow(start: 0, end: served.upperBound, bounded: true)
                bytesRequested += inFlight
            } else {
                // A body without a length to hold it to: fetch the same bytes again in bounded ranges.
                planner.release(work.segment)
            }
            self.planner = planner
            if !unchecked.isEmpty {
                checkMirrors(unchecked)
                return .abandon
            }
            startCheckpointing()
            // The probe keeps streaming from byte 0 (or starts over with a bounded range); the others open now.
            addWorkers(upTo: connections - 1)
            peakConnections = max(peakConnections, workers.count)
            return streamBody ? .receiveBody : .abandon
        case .whole(let length, let validators):
            // Ranges are not supported: this one connection carries the file.
            try takeWholeFile(length: length, validators: validators, from: worker, url: url)
        case .withoutValidators(let length, let carriesWholeFile):
            if probeFallback != .withoutRange {
                notices.append("\(url) sends no ETag or Last-Modified: nothing could show that two responses are of the same file, so it is fetched as one response over one connection")
                // Every later probe of this download (after a failure, a restart) asks without Range too.
                probeFallback = .withoutRange
            }
            if carriesWholeFile {
                // `rangesSupported` stays false: a retry or a pause starts the file over, never continues it.
                try takeWholeFile(length: length, validators: Validators(), from: worker, url: url)
            } else if !worker.sentRange {
                throw HaulError.faultyResponse(url: url.description, detail: "answered a request without Range with part of the file (206)")
            } else {
                worker.verdict = .retryProbe(because: .faultyResponse(url: url.description, detail: "sends no ETag or Last-Modified, and this answer is not the whole file"))
                return .abandon
            }
        case .empty(let validators):
            // Whatever body came with it (a 416's error text) is not the file.
            mirrors.record(validators, for: worker.requestMirror)
            try prepareFile(length: 0)
            total = 0
            planner = SegmentPlanner(total: 0, minimumSegment: options.minimumSegment)
        case .redirect, .faulty, .failed, .retryProbe:
            break
        }
        peakConnections = max(peakConnections, workers.count)
        return .receiveBody
    }

    /// Makes `worker`'s response the one that carries the whole file (`length` bytes, when known).
    private func takeWholeFile(length: Int64?, validators: Validators, from worker: SegmentWorker, url: HTTPURL) throws {
        if let length { try refuseOverMemoryLimit(length, url: url) }
        mirrors.record(validators, for: worker.requestMirror)
        try prepareFile(length: length ?? 0)
        total = length
        if let length {
            var planner = SegmentPlanner(total: length, minimumSegment: options.minimumSegment)
            worker.segment = planner.nextRequest(for: worker.id)?.segment
            if let segment = worker.segment { planner.markRequestedToEnd(segment) }
            worker.requestEnd = length
            self.planner = planner
            bytesRequested += length
        } else {
            worker.segment = nil
        }
        worker.window = BodyWindow(start: 0, end: length, bounded: length != nil)
    }

    // MARK: Mirror checks

    /// Asks each of `unchecked` for its first byte (`Range: bytes=0-0`), one connection each, before anything
    /// is written; the download starts once every one has answered (or failed to: a mirror that could not
    /// be reached is checked by its first real response instead).
    private func checkMirrors(_ unchecked: [Int]) {
        for mirror in unchecked {
            guard let checker = addWorker(mirror: mirror) else { continue }
            mirrorChecksPending += 1
            checker.request(first: 0, end: 1, role: .mirrorCheck)
        }
        if mirrorChecksPending == 0 { startAfterMirrorChecks() }
    }

    /// Whether a mirror's answer to the check shows the same resource (its length); throws a
    /// ``HaulError/mirrorMismatch(url:detail:)`` otherwise. Its body is never read.
    func acceptMirrorCheck(_ facts: ResponseFacts, from worker: SegmentWorker) throws {
        if facts.status == 200 {
            // It ignores ranges: it cannot share the work, but that says nothing against the file.
            _ = mirrors.drop(worker.requestMirror)
            return
        }
        let known = RangedResponseDecision.Known(total: total!, validators: Validators(), verified: false, sentIfRange: false)
        switch RangedResponseDecision.decide(facts, requested: 0..<1, known: known, url: worker.url!.description) {
        case .accept(let validators, _):
            mirrors.record(validators, for: worker.requestMirror)
        case .mirrorDisagrees(let error):
            throw error
        case .mirrorWithoutValidators(let error):
            // Like a mirror that ignores ranges: it says nothing against the file, but cannot share the work.
            logger.notice("leaving out a mirror without validators", metadata: [LogKey.url: "\(worker.url!)", LogKey.reason: "\(error)"])
            _ = mirrors.drop(worker.requestMirror)
        case .redirect:
            preconditionFailure("redirects are followed before the check's decision")
        case .faulty, .changed, .failed, .acceptFromWholeBody:
            break   // not an answer about the resource: its first ranged response will check it
        }
    }

    /// A mirror check ended (whatever its answer); the last one starts the download.
    private func mirrorCheckEnded(_ worker: SegmentWorker) {
        worker.role = .ranged
        if mirrors[worker.mirror].dropped { worker.mirror = mirrors.mirror(forConnection: worker.id) }
        mirrorChecksPending -= 1
        if mirrorChecksPending == 0 { startAfterMirrorChecks() }
    }

    private func startAfterMirrorChecks() {
        guard !isFinished, let total else { return }
        do { try prepareFile(length: total) } catch { return fail(error as? HaulError ?? .unexpected("\(error)")) }
        startCheckpointing()
        for worker in workers where !worker.isBusy && worker.timer == nil { assignWork(worker) }
        let busy = workers.filter(\.isBusy).count
        if let planner { addWorkers(upTo: planner.usefulConnections(limit: options.connections) - busy) }
        peakConnections = max(peakConnections, workers.count)
    }

    /// Whether a ranged response may be written (``RangedResponseDecision``); throws what it is otherwise.
    func acceptRanged(_ head: ResponseHead, _ facts: ResponseFacts, from worker: SegmentWorker) throws {
        let mirror = mirrors[worker.requestMirror]
        let end = worker.requestEnd ?? total!
        let known = RangedResponseDecision.Known(total: total!, validators: mirror.validators, verified: mirror.verified,
                                                 sentIfRange: worker.sentIfRange,
                                                 partialSince: resumeState.map { HTTPDate(secondsSinceEpoch: $0.createdAt) },
                                                 failuresInRow: worker.failuresInRow)
        switch RangedResponseDecision.decide(facts, requested: worker.requestFirst..<end, known: known, url: worker.url!.description) {
        case .accept(let validators, let bounded):
            if response == nil { response = head }
            if !mirror.verified { mirrors.record(validators, for: worker.requestMirror) }
            worker.window = BodyWindow(start: worker.requestFirst, end: end, bounded: bounded)
        case .acceptFromWholeBody:
            logger.debug("taking a range out of a whole-file answer with the download's ETag", metadata: [
                LogKey.connection: "\(worker.id)", LogKey.url: "\(worker.url!)", LogKey.range: "\((worker.requestFirst..<end).logText)",
            ])
            worker.window = BodyWindow(wholeBodyTaking: worker.requestFirst..<end)
        case .redirect:
            preconditionFailure("redirects are followed before the ranged decision")
        case .faulty(let error), .changed(let error), .mirrorDisagrees(let error), .mirrorWithoutValidators(let error), .failed(let error):
            // A mirror without validators that its check did not reach: retried, then dropped by its tries.
            throw error
        }
    }

    /// Refuses a resource of `length` bytes that a download into memory may not hold.
    private func refuseOverMemoryLimit(_ length: Int64, url: HTTPURL) throws(HaulError) {
        guard let memoryLimit, length > memoryLimit else { return }
        logger.debug("refusing a resource larger than the memory limit", metadata: [
            LogKey.url: "\(url)", "haul.total": "\(length)", "haul.limit": "\(memoryLimit)",
        ])
        throw .responseTooLarge(url: url.description, limit: Int(memoryLimit), length: length)
    }

    /// What messages call the file being written: the `.part` path, or, in memory, the URL so marked.
    private var fileLabel: String {
        memoryLimit == nil ? partPath : "\(mirrors.primary.given) (in memory)"
    }

    private func setDestination(_ path: String) {
        destination = path
        partPath = WorkingFileNames.partial(of: path)
        journalPath = WorkingFileNames.journal(of: path)
    }

    /// Drops the probe and continues the interrupted download the journal describes.
    private func switchToJournal(_ journal: ResumeJournal, _ state: JournalState) {
        guard !isFinished else { return }
        logger.debug("the server's name leads to an interrupted download: continuing it", metadata: ["haul.destination": "\(destination)"])
        for worker in workers { worker.stop() }
        budget.giveBack(workers.count - 1)
        let first = SegmentWorker(id: 0, download: self, mirror: 0)
        workers = [first]
        resumeJournal = journal
        resumeState = state
        resume(from: state, first: first)
    }

    /// Makes the `.part` file empty and, for a large file, reserves `length` bytes — after checking that
    /// the filesystem has room for them (counting what the file already holds, since it is truncated).
    private func prepareFile(length: Int64) throws {
        guard stream == nil else { return }
        if memoryLimit != nil {
            // Checked when the length was learnt; again here, the one place every length passes on its way
            // to the file. Memory is not a filesystem: no free space to check, nothing to reserve.
            try refuseOverMemoryLimit(length, url: mirrors.primary.resolved)
            do {
                if try file!.size() > 0 { try file!.truncate(to: 0) }
                try file!.truncate(to: length)
            } catch {
                throw HaulError.disk(path: fileLabel, error)
            }
            return
        }
        let directory = partPath.contains("/") ? String(partPath[..<partPath.lastIndex(of: "/")!]) : "."
        do {
            if file == nil { file = try OutputFile.open(partPath, truncate: true) }
            let held = partKnownEmpty ? 0 : try file!.size()
            partKnownEmpty = false
            let available = try OutputFile.availableSpace(in: directory.isEmpty ? "/" : directory, forWriting: length)
            if length > available + held {
                throw HaulError.insufficientSpace(path: partPath, needed: length, available: available + held)
            }
            if held > 0 { try file!.truncate(to: 0) }
            // A small file goes front to back over one connection with no journal: preallocating it buys
            // nothing (free space was checked above) and costs syscalls and extent conversions per file.
            if length < 2 * options.minimumSegment && length <= options.checkpointBytes { return }
            try file!.preallocate(length: length)
            if try file!.size() != length { try file!.truncate(to: length) }
        } catch let error as SystemError {
            throw HaulError.disk(path: partPath, error)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, proven: Bool = true, from worker: SegmentWorker) throws {
        // The body windows make this impossible; if it ever happens, it must not become a wrong file.
        guard offset >= 0, offset + Int64(bytes.count) <= total ?? Int64.max else {
            throw HaulError.unexpected("refusing to write \(bytes.count) bytes at \(offset) of a \(total ?? -1)-byte file")
        }
        // A known length was held to the limit before any byte came; a body without one (chunked,
        // close-delimited) is stopped by the first bytes that would take it past the limit, none of which is kept.
        if let memoryLimit, offset + Int64(bytes.count) > memoryLimit {
            throw HaulError.responseTooLarge(url: (worker.url ?? mirrors.primary.resolved).description,
                                             limit: Int(memoryLimit), length: total)
        }
        if let stream {
            do {
                try stream.write(bytes, at: offset, proven: proven)
            } catch {
                throw error.errno == EPIPE ? HaulError.outputClosed : HaulError.disk(path: "the output stream", error)
            }
            return queueHorizonCheck()
        }
        do {
            try file!.write(bytes, at: offset)
        } catch {
            throw HaulError.disk(path: fileLabel, error)
        }
    }

    /// Moves `count` spliced body bytes from the connection's pipe into the file at `offset`: ``write(_:at:proven:from:)``
    /// for bytes that never entered user space (a file only; ``sink`` says when).
    func write(piped: PipedBytes, count: Int, at offset: Int64, from worker: SegmentWorker) throws {
        guard offset >= 0, offset + Int64(count) <= total ?? Int64.max, sink == .file, let file else {
            throw HaulError.unexpected("refusing to splice \(count) bytes at \(offset) of a \(total ?? -1)-byte file")
        }
        do {
            try piped.move(count, into: file.fileDescriptor, at: offset)
        } catch {
            throw HaulError.disk(path: fileLabel, error)
        }
    }

    /// Where the bytes go: a file on disk is the one destination bodies may be spliced into.
    var sink: BodyReceivePath.Sink {
        if stream != nil { return .stream }
        if memoryLimit != nil { return .memory }
        return .file
    }

    /// Once the stream has delivered enough, the planner may hand out the next bytes: connections that
    /// rest for want of work are woken (on the next loop turn: this runs inside a connection's read).
    private func queueHorizonCheck() {
        guard let stream, let planner, !horizonCheckQueued,
              stream.delivered + streamWindow - planner.horizon >= streamChunk || stream.delivered == planner.horizon else { return }
        horizonCheckQueued = true
        loop.execute { [self] in
            horizonCheckQueued = false
            guard !isFinished, var planner = self.planner else { return }
            let released = planner.advanceHorizon(to: (self.stream?.delivered ?? 0) + streamWindow)
            self.planner = planner
            if released { wakeIdleWorkers() }
        }
    }

    /// Starts write-back of `start..<end` off the loop; a failure surfaces at the next sync of the file.
    func startWriteBack(from start: Int64, to end: Int64) {
        // Memory has no disk to write back to: a thread woken for nothing.
        guard memoryLimit == nil else { return }
        // A file smaller than one write-back step is written back by its commit, with the rest of its batch
        // (``GroupCommit``): starting it here cost a thread hop and a `sync_file_range` per small file.
        guard total.map({ $0 >= SegmentWorker.writeBackStep }) ?? true else { return }
        file?.writeBackInBackground(offset: start, length: end - start)
    }

    /// Bytes written for `segment` (nil: a single stream of unknown length).
    func recordWritten(_ count: Int64, in segment: Int?) {
        if let segment { planner!.advance(segment, by: count) }
        bytesDone += count
        if bytesDone - bytesAtLastCheckpoint >= options.checkpointBytes { checkpointNow() }
    }

    // MARK: Scheduling

    /// Gives `worker` its next range, or lets it rest when there is nothing left to share.
    private func assignWork(_ worker: SegmentWorker) {
        guard !isFinished, mirrorChecksPending == 0 else { return }
        guard var planner else { return }
        let segmentsBefore = planner.segments.count
        if let work = planner.nextRequest(for: worker.id, continuing: worker.segment) {
            if planner.segments.count > segmentsBefore {
                // The planner split another connection's segment: this one takes its second half.
                logger.trace("connection takes half of another's remaining range", metadata: [
                    LogKey.connection: "\(worker.id)", LogKey.range: "\((work.range.lowerBound..<planner.end(of: work.segment)).logText)",
                ])
            }
            self.planner = planner
            worker.segment = work.segment
            worker.request(first: work.range.lowerBound, end: work.range.upperBound, role: .ranged)
            peakConnections = max(peakConnections, workers.filter(\.isBusy).count)
        } else {
            self.planner = planner
            finishIfDone()
        }
    }

    private func finishIfDone() {
        if let planner, planner.isComplete, !workers.contains(where: \.isBusy) { succeed() }
    }

    /// Wakes resting workers when work appears (a failed or slow connection released some).
    private func wakeIdleWorkers() {
        for worker in workers where !worker.isBusy && worker.timer == nil { assignWork(worker) }
    }

    func exchangeEnded(_ worker: SegmentWorker, _ result: Result<ExchangeSummary, HTTPClientError>) {
        // A worker retired by a restart may still report its cancelled exchange; it no longer counts.
        guard !isFinished, workers.contains(where: { $0 === worker }) else { return }
        if case .retired = worker.verdict { return }
        if let interruption = worker.interruption { return handleFailure(interruption, worker: worker) }
        if worker.role == .mirrorCheck {
            // A mismatch fails the download; any other failure leaves the mirror to its first real response.
            if case .failure(let error) = result { return handleFailure(HaulError(mapping: error), worker: worker) }
            if case .redirect(let facts) = worker.verdict { return followRedirect(facts, worker: worker) }
            return mirrorCheckEnded(worker)
        }
        let summary: ExchangeSummary
        switch result {
        case .failure(let error): return handleFailure(HaulError(mapping: error), worker: worker)
        case .success(let value): summary = value
        }
        if case .redirect(let facts) = worker.verdict { return followRedirect(facts, worker: worker) }
        if case .retryProbe(let refusal) = worker.verdict { return retryRefusedProbe(worker, because: refusal) }
        let url = worker.url!.description
        if let window = worker.window {
            if window.end == nil {
                // Unknown length, single stream: the end of the body is the end of the file.
                guard summary.complete else { return handleFailure(.incomplete(url: url, expected: -1, received: window.position), worker: worker) }
                total = window.position
                // Asked for open-ended, so not counted when sent: what came is what was requested.
                bytesRequested += window.position - window.start
                planner = SegmentPlanner(total: window.position, minimumSegment: 1, alreadyDone: ByteRangeSet([0..<window.position]))
                return finishIfDone()
            }
            if worker.provisional {
                // Only a body that ended at exactly the range's end proves its bytes are that range.
                guard summary.complete, window.endedExactly else {
                    return handleFailure(.faultyResponse(url: url, detail: "the body of range \(window.start)-\(window.end! - 1) ended after \(window.received) of \(window.end! - window.start) bytes"), worker: worker)
                }
                recordWritten(window.received, in: worker.segment)
                if let stream {
                    do { try stream.commit(window.start..<window.end!) } catch {
                        return handleFailure(error.errno == EPIPE ? .outputClosed : .disk(path: "the output stream", error), worker: worker)
                    }
                    queueHorizonCheck()
                }
            } else if worker.segment != nil, summary.complete, !window.isFilled {
                return handleFailure(.incomplete(url: url, expected: window.end!, received: window.position), worker: worker)
            }
        }
        worker.failuresInRow = 0
        assignWork(worker)
        finishIfDone()
    }

    /// Sends the same request on along its own redirect chain; the mirror remembers where it led.
    private func followRedirect(_ facts: ResponseFacts, worker: SegmentWorker) {
        let target: HTTPURL
        do {
            target = try worker.extendChain(facts, policy: options.redirects)
        } catch {
            return handleFailure(.redirect(error), worker: worker)
        }
        // The worker was moved off a mirror dropped meanwhile: its chain is of no use any more.
        guard worker.mirror == worker.requestMirror else { return resume(worker) }
        mirrors.noteRedirect(worker.mirror, to: target)
        redirects += 1
        logger.debug("following a redirect", metadata: [
            LogKey.connection: "\(worker.id)", LogKey.status: "\(facts.status)", LogKey.url: "\(worker.chain.dropLast().last.map { "\($0)" } ?? "-")",
            "haul.location": "\(target)",
        ])
        if let end = worker.requestEnd, worker.role != .mirrorCheck { bytesRequested -= end - worker.requestFirst }
        worker.request(first: worker.requestFirst, end: worker.requestEnd, role: worker.role, hop: target)
    }

    private func handleFailure(_ error: HaulError, worker: SegmentWorker) {
        // A server's Retry-After on this failure: a wait to honour, or — longer than the policy allows — the
        // failure itself (``RetryPolicy/serverWait(after:retryAfter:)``).
        var error = error
        var serverWait: Duration?
        switch options.retry.serverWait(after: error, retryAfter: worker.retryAfter) {
        case .success(let wait): serverWait = wait
        case .failure(let refusal): error = refusal
        }
        // The URL this request went to (a mirror's, a redirect's target) and its tries in a row, for an
        // error that ends the download: the context a message needs beside the reason.
        let failed = error.adding(url: worker.url?.description, attempts: worker.failuresInRow + 1)
        if worker.role == .mirrorCheck {
            if case .mirrorMismatch = error.reason { return fail(failed) }
            return mirrorCheckEnded(worker)
        }
        if worker.provisional, let window = worker.window, let end = window.end {
            stream?.discardUnproven(in: window.start..<end)
        }
        if let segment = worker.segment { planner?.release(segment) }
        worker.segment = nil
        worker.window = nil
        speedWatch.forget(worker.id)
        // A request to a mirror that was dropped while it ran says nothing about the mirror the worker has
        // moved to (nor, twice, about the dropped one): it goes back to work there.
        if worker.requestMirror != worker.mirror, mirrors[worker.requestMirror].dropped { return resume(worker) }
        let mirror = worker.mirror
        let context = FailurePolicy.Context(
            error: error, failuresInRow: worker.failuresInRow + 1, retriesSoFar: retries, restartsSoFar: restarts,
            canReResolve: worker.url != mirrors[mirror].given && mirrors.canReResolve(mirror),
            otherMirrorLive: mirrors.hasOtherLiveMirror(than: mirror))
        switch FailurePolicy.decide(context, retry: options.retry, ifChangedOnServer: ifChangedOnServer) {
        case .restart:
            restart()
        case .fail:
            fail(failed)
        case .dropMirror:
            logger.notice("dropping a mirror after its tries", metadata: [
                LogKey.url: "\(mirrors[mirror].given)", LogKey.reason: "\(failed)", LogKey.connection: "\(worker.id)",
            ])
            dropMirror(mirror, worker: worker, error: failed)
        case .retry(let attempt, let reResolve):
            retries += 1
            worker.failuresInRow += 1
            if reResolve { _ = mirrors.reResolve(mirror) }
            let delay = options.retry.delay(attempt: attempt, retryAfter: serverWait)
            logger.debug("retrying", metadata: [
                LogKey.connection: "\(worker.id)", LogKey.url: "\(worker.url.map { "\($0)" } ?? "-")",
                LogKey.reason: "\(error)", "haul.delay": "\(delay)", LogKey.attempt: "\(worker.failuresInRow + 1)",
                "haul.reresolve": "\(reResolve)",
            ])
            worker.timer = loop.scheduleTimer(after: delay) { [self] in
                worker.timer = nil
                resume(worker)
            }
        }
    }

    /// Sends `worker` back to work after a failure: its unwritten range when ranges work, otherwise a new
    /// probe (without ranges nothing can be resumed, so the file starts over).
    private func resume(_ worker: SegmentWorker) {
        guard !isFinished else { return }
        if rangesSupported {
            assignWork(worker)
            wakeIdleWorkers()
        } else {
            resetToProbe()
            sendProbe(worker, again: true)
        }
    }

    /// "Retry A, A, then B": after its tries, a mirror is dropped and its connections move to the others.
    private func dropMirror(_ index: Int, worker: SegmentWorker, error: HaulError) {
        guard let next = mirrors.drop(index) else { return fail(error) }
        for other in workers where other.mirror == index && other !== worker {
            other.mirror = next
            // Their exchanges end with a "closed" failure and retry on the new mirror.
            if other.isBusy { other.stop() }
        }
        worker.failuresInRow = 0
        worker.mirror = next
        resume(worker)
    }

    // MARK: Slow connections

    private func scheduleSpeedChecks() {
        monitor = loop.scheduleTimer(after: .seconds(1)) { [self] in checkSpeeds() }
    }

    /// Once a second (``ConnectionSpeedWatch``): a connection far slower than the median gives up the rest
    /// of its range, so that the tail does not wait on it; one under the low-speed limit is closed and its
    /// range retried — any connection with a request out, whatever it waits for (a head, a probe, a whole
    /// file of unknown length, a drain), since any of them can be held by a server.
    private func checkSpeeds() {
        scheduleSpeedChecks()
        var received: [Int: Int64] = [:]
        for worker in workers where worker.isBusy { received[worker.id] = worker.bytesReceived }
        let splittable = Set(workers.filter { $0.isBusy && $0.segment != nil }.map(\.id))
        // Reads haul holds back itself (the rate limit, a slow disk behind the checkpoints) are haul's wait,
        // not the server's: those seconds are not counted.
        let paused = readsHeldForDurability ? Set(received.keys) : Set(workers.filter { $0.isBusy && $0.readsPaused }.map(\.id))
        let verdict = speedWatch.tick(received: received, splittable: splittable, paused: paused)
        for id in verdict.belowLimit {
            guard let worker = workers.first(where: { $0.id == id }), let limit = speedWatch.lowSpeed, let url = worker.url else { continue }
            worker.interruption = .belowSpeedLimit(url: url.description, limit: limit)
            logger.debug("closing a connection below the speed limit", metadata: [LogKey.connection: "\(id)", LogKey.url: "\(url)"])
            worker.stop()
        }
        guard var planner, !verdict.split.isEmpty else { return }
        var released = false
        for (id, keep) in verdict.split {
            guard let worker = workers.first(where: { $0.id == id }), let segment = worker.segment else { continue }
            let given = planner.shrink(segment, keeping: keep)
            if given > 0 {
                logger.trace("slow connection gives up the rest of its range", metadata: [
                    LogKey.connection: "\(id)", "haul.bytes.released": "\(given)",
                ])
                released = true
                speedWatch.forget(id)
            }
        }
        self.planner = planner
        if released { wakeIdleWorkers() }
    }
}
