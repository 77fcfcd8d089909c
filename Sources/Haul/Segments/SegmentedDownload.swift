import Glibc

/// One download over up to N connections, all on one event loop.
///
/// The first request (`Range: bytes=0-`) doubles as the probe: a 206 with a total length means ranges work,
/// so this connection keeps streaming from byte 0 while the others open; a 200 means the server ignores
/// ranges and the same connection carries the whole file. Every later response is checked against the
/// range asked for and the validator (`If-Range`), so bytes of two versions of the file are never mixed.
/// Failed connections retry only their unwritten bytes; a mirror that keeps failing is dropped and its work
/// moves to the others.
///
/// Loop-confined. It ends by calling `completion` once with the state the final (blocking) steps need.
final class SegmentedDownload: @unchecked Sendable {
    // @unchecked Sendable: everything is touched on `loop` only (entry points hop onto it).

    struct Mirror {
        var url: HTTPURL
        var validator: IfRangeValidator?
        var entityTag: EntityTag?
        var lastModified: HTTPDate?
        var failures = 0
        var dropped = false
        /// Whether this mirror's length was checked against the download's.
        var verified = false
    }

    /// What the loop hands to the blocking finish (checksum, sync, rename).
    struct Finished: Sendable {
        var file: OutputFile
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
    }

    /// How a download ended, for its ``DownloadTask``.
    enum Outcome {
        /// Every byte is written; the blocking finish remains.
        case finished(Finished)
        case failed(HaulError)
        /// Stopped by a pause after a final checkpoint (which may have failed).
        case paused(checkpointFailure: JournalError?)
        /// Stopped by a cancel; any running checkpoint has landed, so the files can be removed.
        case cancelled
    }

    /// Where a download into a directory goes, decided once the probe's head names the file.
    enum NameResolution {
        /// Start a new file at this destination path.
        case fresh(destination: String)
        /// A journal for this destination exists: continue it (the probe's response is dropped).
        case resume(destination: String, journal: ResumeJournal, state: JournalState)
    }

    let loop: EventLoop
    let client: HTTPClient
    let options: DownloadOptions
    let checksum: Checksum?
    let onChange: ChangePolicy
    let budget: ConnectionBudget
    /// The final path, and the `.part` file written until the end; empty until a directory download's
    /// probe names the file.
    private(set) var destination: String
    private(set) var partPath: String
    /// Set for a download into a directory until the probe's head has named the file.
    private var resolveName: ((ResponseHead, HTTPURL) throws -> NameResolution)?
    let requestTemplate: RequestHead
    var mirrors: [Mirror]
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
    private var visited: [HTTPURL] = []
    private var bytesDone: Int64 = 0
    private var peakConnections = 0
    private var monitor: TimerID?
    private var completion: ((Outcome) -> Void)?
    private(set) var journalPath: String
    private var resumeState: JournalState?
    private var checkpointer: Checkpointer?
    private var checkpointTimer: TimerID?
    private var resumeJournal: ResumeJournal?
    private var bytesAtLastCheckpoint: Int64 = 0

    /// `destination` nil means "into a directory": `resolveName` then names the file from the probe's head.
    init(loop: EventLoop, client: HTTPClient, options: DownloadOptions, budget: ConnectionBudget, urls: [HTTPURL],
         destination: String?, resolveName: ((ResponseHead, HTTPURL) throws -> NameResolution)? = nil,
         checksum: Checksum? = nil, onChange: ChangePolicy = .fail,
         requestTemplate: RequestHead, resume: (journal: ResumeJournal, state: JournalState)? = nil) {
        precondition(destination != nil || resolveName != nil, "a download needs a destination or a way to name it")
        self.destination = destination ?? ""
        self.partPath = destination.map { $0 + ".part" } ?? ""
        self.journalPath = destination.map { $0 + ".part.haul" } ?? ""
        self.resolveName = destination == nil ? resolveName : nil
        self.checksum = checksum
        self.onChange = onChange
        self.budget = budget
        self.resumeState = resume?.state
        self.resumeJournal = resume?.journal
        self.loop = loop
        self.client = client
        self.options = options
        self.requestTemplate = requestTemplate
        self.mirrors = urls.map { Mirror(url: $0) }
        self.rateLimiter = options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }
        self.visited = [urls[0]]
    }

    // MARK: Lifecycle

    func startOnLoop(completion: @escaping (Outcome) -> Void) {
        precondition(loop.inEventLoop)
        self.completion = completion
        begin()
        if let limit = options.totalTimeout {
            _ = loop.scheduleTimer(after: limit) { [self] in
                fail(.timedOut(after: limit, url: mirrors[0].url.description, bytesReceived: bytesDone))
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
            first.request(first: 0, end: nil, role: .probe)
        }
        monitor = loop.scheduleTimer(after: .seconds(1)) { [self] in checkSlowConnections() }
    }

    /// A new connection's worker, when the client-wide budget has a slot for it.
    private func addWorker(mirror: Int? = nil) -> SegmentWorker? {
        guard budget.take(upTo: 1) == 1 else { return nil }
        let id = (workers.map(\.id).max() ?? -1) + 1
        let worker = SegmentWorker(id: id, download: self, mirror: mirror ?? liveMirror(for: id))
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
        isFinished = true
        stopAll()
        releaseConnections()
        let report = { [self] in
            completion?(.failed(error))
            completion = nil
        }
        if let checkpointer, let planner {
            if case .changedOnServer = error { return report() }
            checkpointer.checkpoint(planner.written, completion: report)
        } else {
            report()
        }
    }

    /// Continues an interrupted download: only the ranges the journal does not list as durable are fetched,
    /// each request carrying `If-Range` with the stored validator, so a changed file is noticed at once.
    private func resume(from state: JournalState, first: SegmentWorker) {
        let file: OutputFile
        do {
            file = try OutputFile.open(partPath, truncate: false)
        } catch {
            return fail(.disk(path: partPath, error))
        }
        self.file = file
        total = state.totalLength
        rangesSupported = true
        mirrors[0].entityTag = state.etag.flatMap { EntityTag($0[...]) }
        mirrors[0].lastModified = state.lastModified.map { HTTPDate(secondsSinceEpoch: $0) }
        if let tag = mirrors[0].entityTag, !tag.isWeak {
            mirrors[0].validator = .entityTag(tag)
        } else if let modified = mirrors[0].lastModified {
            mirrors[0].validator = .lastModified(modified)
        }
        mirrors[0].verified = true
        var planner = SegmentPlanner(total: state.totalLength, minimumSegment: options.minimumSegment, alreadyDone: state.durable)
        bytesDone = state.durable.count
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

    /// Starts the resume journal — for files larger than one checkpoint window only: a smaller file lost in
    /// a crash costs no more than the window the journal would have saved, and skipping its create, sync and
    /// removal is what makes many small downloads cheap.
    private func startCheckpointing() {
        guard let file, let total, checkpointer == nil, total > options.checkpointBytes else { return }
        let primary = mirrors[0]
        let state = JournalState(
            url: primary.url.description, mirrors: mirrors.dropFirst().map(\.url.description),
            etag: primary.entityTag.map(\.fieldValue), lastModified: primary.lastModified?.secondsSinceEpoch,
            totalLength: total, minimumSegmentSize: options.minimumSegment,
            checksum: checksum.map { JournalChecksum(algorithm: $0.algorithm.rawValue, hex: $0.hex) },
            createdAt: Int64(time(nil)))
        checkpointer = Checkpointer(loop: loop, journalPath: journalPath, file: file, syncsData: options.synchronizesToDisk, state: state)
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
        guard let checkpointer, bytesDone - checkpointer.durableBytes >= 2 * options.checkpointBytes else { return nil }
        checkpointNow()
        return .milliseconds(5)
    }

    private func checkpointNow() {
        guard let checkpointer, let planner, bytesDone != bytesAtLastCheckpoint else { return }
        bytesAtLastCheckpoint = bytesDone
        checkpointer.checkpoint(planner.written)
    }

    /// Stops every connection after a final checkpoint, so that the journal lists everything written.
    func pauseOnLoop() {
        guard !isFinished else { return }
        isFinished = true
        stopAll()
        releaseConnections()
        guard let checkpointer, let planner else {
            completion?(.paused(checkpointFailure: nil))
            completion = nil
            return
        }
        checkpointer.checkpoint(planner.written) { [self] in
            completion?(.paused(checkpointFailure: checkpointer.lastError))
            completion = nil
        }
    }

    /// Stops every connection; reports once no checkpoint is writing any more, so the caller can delete
    /// the files without racing one.
    func cancelOnLoop() {
        guard !isFinished else { return }
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

    private func succeed() {
        guard !isFinished, let file else { return }
        isFinished = true
        stopAll()
        releaseConnections()
        // A checkpoint may still be writing the journal; report only after it has landed, so that removing
        // the journal after the final rename cannot race with its creation.
        if let checkpointer, let planner {
            checkpointer.checkpoint(planner.written) { [self] in report(file) }
        } else {
            report(file)
        }
    }

    private func report(_ file: OutputFile) {
        let primary = mirrors[0]
        completion?(.finished(Finished(file: file, partPath: partPath, journalPath: journalPath, journaled: checkpointer != nil || resumeJournal != nil, bytes: total ?? bytesDone, finalURL: primary.url,
                                      entityTag: primary.entityTag, lastModified: primary.lastModified,
                                      redirects: redirects, connections: peakConnections,
                                      bytesRequested: bytesRequested, retries: retries)))
        completion = nil
    }

    /// Throws away everything and starts over from the probe (the resource changed and the caller allowed it).
    private func restart(because error: HaulError) {
        restarts += 1
        guard restarts <= 3 else { return fail(error) }
        stopAll()
        resetToProbe()
        checkpointer = nil
        Checkpointer.discard(path: journalPath)
        for index in mirrors.indices {
            mirrors[index].validator = nil
            mirrors[index].verified = false
        }
        // Keep one connection slot for the new probe, so that another download cannot take it meanwhile.
        budget.giveBack(workers.count - 1)
        let probe = SegmentWorker(id: 0, download: self, mirror: 0)
        workers = [probe]
        probe.request(first: 0, end: nil, role: .probe)
        monitor = loop.scheduleTimer(after: .seconds(1)) { [self] in checkSlowConnections() }
    }

    /// Forgets the plan so the next probe starts the file over (the file itself is truncated by the probe).
    private func resetToProbe() {
        planner = nil
        total = nil
        rangesSupported = false
        bytesDone = 0
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
                        segments: segments, checkpointFailure: checkpointer?.lastError, partialPath: partPath)
    }

    // MARK: Responses

    /// The probe's head decides the shape of the whole download.
    func acceptProbe(_ head: ResponseHead, from worker: SegmentWorker) throws -> HeadDecision {
        let url = mirrors[worker.mirror].url
        if let resolveName, head.status == 206 || head.status == 200 || head.status == 416 {
            self.resolveName = nil
            switch try resolveName(head, url) {
            case .fresh(let destination):
                setDestination(destination)
            case .resume(let destination, let journal, let state):
                // An earlier run left this very file half done: continue it instead of this response.
                setDestination(destination)
                worker.verdict = .retired
                loop.execute { [self] in switchToJournal(journal, state) }
                return .abandon
            }
        }
        switch head.status {
        case 206:
            guard let text = head.fields.firstString("content-range"), let range = ContentRange(text),
                  let bytes = range.range, bytes.lowerBound == 0, let length = range.completeLength else {
                throw HaulError.wrongContentRange(url: url.description, requested: "0-",
                                                  received: head.fields.firstString("content-range") ?? "(none)")
            }
            recordValidators(head, mirror: worker.mirror)
            try prepareFile(length: length)
            total = length
            var planner = SegmentPlanner(total: length, minimumSegment: options.minimumSegment)
            let connections = planner.usefulConnections(limit: options.connections)
            planner.splitForStart(connections: connections)
            let work = planner.nextRequest(for: worker.id)!
            precondition(work.range.lowerBound == 0, "the probe's segment starts at byte 0")
            // The probe asked for everything: its whole segment is in flight and nobody may take part of it.
            planner.markRequestedToEnd(work.segment)
            self.planner = planner
            rangesSupported = true
            worker.segment = work.segment
            worker.requestEnd = bytes.upperBound + 1
            bytesRequested += planner.end(of: work.segment)
            startCheckpointing()
            // The probe keeps streaming from byte 0; the others open now.
            addWorkers(upTo: connections - 1)
        case 200:
            // Ranges are not supported: this one connection carries the file.
            recordValidators(head, mirror: worker.mirror)
            if case .contentLength(let length) = head.framing {
                try prepareFile(length: length)
                total = length
                var planner = SegmentPlanner(total: length, minimumSegment: options.minimumSegment)
                worker.segment = planner.nextRequest(for: worker.id)?.segment
                if let segment = worker.segment { planner.markRequestedToEnd(segment) }
                worker.requestEnd = length
                self.planner = planner
                bytesRequested += length
            } else {
                try prepareFile(length: 0)
                total = nil
                worker.segment = nil
            }
        case 416 where ContentRange(head.fields.firstString("content-range") ?? "")?.completeLength == 0:
            recordValidators(head, mirror: worker.mirror)
            try prepareFile(length: 0)
            total = 0
            planner = SegmentPlanner(total: 0, minimumSegment: options.minimumSegment)
        default:
            throw HaulError.httpStatus(status: head.status, reason: head.reason, url: url.description)
        }
        peakConnections = max(peakConnections, workers.count)
        return .receiveBody
    }

    private func setDestination(_ path: String) {
        destination = path
        partPath = path + ".part"
        journalPath = path + ".part.haul"
    }

    /// Drops the probe and continues the interrupted download the journal describes.
    private func switchToJournal(_ journal: ResumeJournal, _ state: JournalState) {
        guard !isFinished else { return }
        for worker in workers { worker.stop() }
        budget.giveBack(workers.count - 1)
        let first = SegmentWorker(id: 0, download: self, mirror: 0)
        workers = [first]
        resumeJournal = journal
        resumeState = state
        resume(from: state, first: first)
    }

    /// Every ranged response must be exactly what was asked for, of the same resource.
    func checkRangedResponse(_ head: ResponseHead, from worker: SegmentWorker) throws {
        let mirror = mirrors[worker.mirror]
        let url = mirror.url.description
        let requested = "\(worker.requestFirst)-\((worker.requestEnd ?? total ?? 0) - 1)"
        switch head.status {
        case 206:
            let text = head.fields.firstString("content-range") ?? ""
            guard let range = ContentRange(text), let bytes = range.range,
                  bytes.lowerBound == worker.requestFirst, bytes.upperBound + 1 == worker.requestEnd else {
                throw HaulError.wrongContentRange(url: url, requested: requested, received: text.isEmpty ? "(none)" : text)
            }
            guard range.completeLength == total else {
                if !mirror.verified {
                    throw HaulError.mirrorMismatch(url: url, detail: "length \(range.completeLength.map(String.init) ?? "unknown"), expected \(total ?? 0)")
                }
                throw HaulError.changedOnServer(url: url, detail: "length is now \(range.completeLength.map(String.init) ?? "unknown"), was \(total ?? 0)")
            }
            if !mirror.verified {
                recordValidators(head, mirror: worker.mirror)
                mirrors[worker.mirror].verified = true
            } else if let tag = head.fields.first("etag").flatMap({ EntityTag($0) }), let known = mirror.entityTag,
                      !tag.strongMatches(known) && !known.isWeak {
                throw HaulError.changedOnServer(url: url, detail: "ETag changed from \(known) to \(tag)")
            }
        case 200:
            if mirror.validator == nil && worker.mirror != 0 && !mirror.verified {
                throw HaulError.mirrorMismatch(url: url, detail: "ignores Range requests")
            }
            if let state = checkpointer?.state {
                let since = state.lastModified.map { " (last modified \(HTTPDate(secondsSinceEpoch: $0)))" } ?? ""
                throw HaulError.changedOnServer(url: url, detail: "it no longer matches the partial download started \(HTTPDate(secondsSinceEpoch: state.createdAt))\(since)")
            }
            throw HaulError.changedOnServer(url: url, detail: "a ranged request with If-Range got the whole file (200)")
        case 416:
            throw HaulError.changedOnServer(url: url, detail: "range \(requested) is no longer satisfiable (416)")
        default:
            throw HaulError.httpStatus(status: head.status, reason: head.reason, url: url)
        }
    }

    private func recordValidators(_ head: ResponseHead, mirror index: Int) {
        let tag = head.fields.first("etag").flatMap { EntityTag($0) }
        let modified = head.fields.first("last-modified").flatMap { HTTPDate($0) }
        mirrors[index].entityTag = tag
        mirrors[index].lastModified = modified
        if let tag, !tag.isWeak {
            mirrors[index].validator = .entityTag(tag)
        } else if let modified {
            mirrors[index].validator = .lastModified(modified)
        }
        mirrors[index].verified = true
    }

    private func prepareFile(length: Int64) throws {
        var justCreated = false
        if file == nil {
            let directory = partPath.contains("/") ? String(partPath[..<partPath.lastIndex(of: "/")!]) : "."
            do {
                let available = try OutputFile.availableSpace(in: directory.isEmpty ? "/" : directory)
                if length > available {
                    throw HaulError.insufficientSpace(path: partPath, needed: length, available: available)
                }
                file = try OutputFile.open(partPath, truncate: true)
                justCreated = true
            } catch let error as SystemError {
                throw HaulError.disk(path: partPath, error)
            }
        }
        do {
            if !justCreated { try file!.truncate(to: 0) }
            // A small file goes front to back over one connection with no journal: preallocating it buys
            // nothing (free space was checked above) and costs syscalls and extent conversions per file.
            if length < 2 * options.minimumSegment && length <= options.checkpointBytes { return }
            try file!.preallocate(length: length)
            if try file!.size() != length { try file!.truncate(to: length) }
        } catch {
            throw HaulError.disk(path: partPath, error)
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        do {
            try file!.write(bytes, at: offset)
        } catch {
            throw HaulError.disk(path: partPath, error)
        }
    }

    func startWriteBack(from start: Int64, to end: Int64) {
        try? file?.startWriteBack(offset: start, length: end - start)
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
        guard !isFinished else { return }
        guard var planner else { return }
        if let work = planner.nextRequest(for: worker.id, continuing: worker.segment) {
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
        switch (result, worker.verdict) {
        case (.success(let summary), .redirect(let head)):
            followRedirect(head, summary: summary, worker: worker)
        case (.success(let summary), _):
            if planner == nil {
                // Unknown length, single stream: the end of the body is the end of the file.
                guard summary.complete else { return handleFailure(.unexpected("stream ended early"), worker: worker) }
                total = worker.position
                planner = SegmentPlanner(total: worker.position, minimumSegment: 1, alreadyDone: ByteRangeSet([0..<worker.position]))
                return finishIfDone()
            }
            if worker.segment != nil && summary.complete && worker.position < (worker.requestEnd ?? Int64.max) {
                // The response ended before the range it was asked for: the server sent less than it promised.
                return handleFailure(.incomplete(url: mirrors[worker.mirror].url.description,
                                                 expected: worker.requestEnd ?? 0, received: worker.position), worker: worker)
            }
            worker.failuresInRow = 0
            assignWork(worker)
            finishIfDone()
        case (.failure(let error), _):
            handleFailure(HaulError(error), worker: worker)
        }
    }

    private func followRedirect(_ head: ResponseHead, summary: ExchangeSummary, worker: SegmentWorker) {
        var request = requestTemplate
        request.url = mirrors[worker.mirror].url
        do {
            guard let next = try options.redirects.follow(head, from: request, visited: &visited) else { return }
            mirrors[worker.mirror].url = next.url
            redirects += 1
        } catch {
            return fail(.redirect(error))
        }
        if worker.role == .probe {
            worker.request(first: 0, end: nil, role: .probe)
        } else if let segment = worker.segment, let planner {
            worker.request(first: planner.next(of: segment), end: planner.end(of: segment), role: .ranged)
        }
    }

    private func handleFailure(_ error: HaulError, worker: SegmentWorker) {
        if let segment = worker.segment { planner?.release(segment) }
        worker.segment = nil
        switch error {
        case .changedOnServer:
            return onChange == .restart ? restart(because: error) : fail(error)
        case .mirrorMismatch, .wrongContentRange:
            return dropMirror(worker.mirror, worker: worker, error: error)
        default:
            break
        }
        guard options.retry.isRetriable(error), retries < options.retry.totalRetries else { return fail(error) }
        retries += 1
        worker.failuresInRow += 1
        if worker.failuresInRow >= options.retry.triesPerRange {
            return dropMirror(worker.mirror, worker: worker, error: error)
        }
        let delay = options.retry.delay(attempt: worker.failuresInRow, retryAfter: worker.retryAfter)
        worker.timer = loop.scheduleTimer(after: delay) { [self] in
            worker.timer = nil
            resume(worker)
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
            worker.request(first: 0, end: nil, role: .probe)
        }
    }

    /// Spreads connections over the mirrors that have not been dropped.
    private func liveMirror(for worker: Int) -> Int {
        let live = mirrors.indices.filter { !mirrors[$0].dropped }
        return live.isEmpty ? 0 : live[worker % live.count]
    }

    /// "Retry A, A, then B": after its tries, a mirror is dropped and its connections move to the others.
    private func dropMirror(_ index: Int, worker: SegmentWorker, error: HaulError) {
        mirrors[index].dropped = true
        guard let next = mirrors.indices.first(where: { !mirrors[$0].dropped }) else { return fail(error) }
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

    /// Once a second: a connection far slower than the median for the slow window gives up the rest of
    /// its range, so that the tail of the download does not wait on it.
    private func checkSlowConnections() {
        monitor = loop.scheduleTimer(after: .seconds(1)) { [self] in checkSlowConnections() }
        let window = Int(options.slowWindow.components.seconds)
        let active = workers.filter { $0.isBusy && $0.segment != nil }
        for worker in workers {
            worker.samples.append(worker.bytesWritten)
            if worker.samples.count > window + 1 { worker.samples.removeFirst() }
        }
        guard active.count >= 2, window > 0, var planner else { return }
        let rates = active.filter { $0.samples.count > window }.map { $0.samples.last! - $0.samples.first! }
        guard rates.count >= 2 else { return }
        let median = rates.sorted()[rates.count / 2]
        var released = false
        for worker in active where worker.samples.count > window {
            let rate = worker.samples.last! - worker.samples.first!
            guard Double(rate) < Double(median) * options.slowConnectionRatio, let segment = worker.segment else { continue }
            // Keep what is likely in flight (about a second's worth); the rest goes to faster connections.
            let keep = max(64 * 1024, rate / Int64(window))
            if planner.shrink(segment, keeping: keep) > 0 {
                released = true
                worker.samples.removeAll()
            }
        }
        self.planner = planner
        if released { wakeIdleWorkers() }
    }
}
