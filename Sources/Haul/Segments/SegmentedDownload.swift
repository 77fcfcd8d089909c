import Glibc
import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// One download over up to N connections, all on one event loop: the driver of a ``DownloadStateMachine``.
///
/// The machine decides everything; this class feeds it events (response heads, written bytes, exchanges'
/// ends, timers, checkpoints landed, pause and cancel) and carries out the actions it returns with what a
/// value cannot hold: the connection budget, the workers (``SegmentWorker``, one per connection), the
/// timers, the output (``BodySink``) and the journal (``Checkpointer``). Workers report to it; it never
/// writes into them.
///
/// Loop-confined. It ends by calling `completion` once with the state the final (blocking) steps need.
final class SegmentedDownload: SegmentWorkerHost, @unchecked Sendable {
    // @unchecked Sendable: everything is touched on `loop` only (entry points hop onto it).

    let loop: EventLoop
    let client: HTTPClient
    /// The machine's: one copy of the client's options per download, read in place.
    var options: DownloadOptions {
        _read { yield machine.options }
    }
    let checksum: Checksum?
    let budget: ConnectionBudget
    /// Request-level records (``LogKey``); drops everything unless the embedder gave a logger.
    let logger: Logger
    private var machine: DownloadStateMachine
    private let sink: BodySink
    private let settings: SegmentWorker.Settings
    /// Set for a download into a directory until the probe's head has named the file.
    private var resolveName: ((ResponseHead, HTTPURL) throws -> NameResolution)?
    /// The worker of each connection, at the connection's id (the machine numbers its connections 0, 1, 2...
    /// as it adds them), made on its first exchange. A list, not a dictionary: no hash table made per download.
    private var workers: [SegmentWorker?] = []
    /// Connection slots taken from the budget (a connection may hold one before its worker's first exchange).
    private var slotsHeld = 0
    private var retryTimers: [Int: TimerID] = [:]
    /// Whether the speed checks run for this download: from the machine's `.scheduleSpeedChecks` to its
    /// `.stopTimers`. They run once a second on the lane's tick (``checkSpeeds()``), armed through
    /// `armSpeedChecks`: a download of its own timer paid a schedule and a cancellation for every small file,
    /// which ends long before its first check.
    private(set) var checksSpeeds = false
    /// Arms the tick that calls ``checkSpeeds()`` once a second while downloads want it.
    private let armSpeedChecks: () -> Void
    private var checkpointTimer: TimerID?
    private var checkpointer: Checkpointer?
    private var resumeJournal: ResumeJournal?
    private var completion: ((Outcome) -> Void)?
    /// Made for the first pieces to hash (a download with piece hashes).
    private var pieceHasher: PieceHasher?
    private let refresher: URLRefresher?
    /// See ``Finished/finalNameIsNew``.
    private var finalNameIsNew: Bool

    /// `destination` nil means "into a directory": `resolveName` then names the file from the probe's head.
    init(loop: EventLoop, client: HTTPClient, options: DownloadOptions, budget: ConnectionBudget, mirrors: MirrorSet,
         destination: String?, resolveName: ((ResponseHead, HTTPURL) throws -> NameResolution)? = nil,
         checksum: Checksum? = nil, ifChangedOnServer: ChangePolicy = .fail,
         resume: (journal: ResumeJournal, state: JournalState)? = nil, notices: [String] = [], file: OutputFile? = nil,
         stream: OrderedStream? = nil, memoryLimit: Int? = nil, created: EarlyStopCleanup.Created = .init(),
         conditional: ConditionalProbe? = nil, pieceHashes: PieceHashes? = nil, expectedSize: Int64? = nil,
         followsMetalink: Bool = false, refresher: URLRefresher? = nil, finalNameIsNew: Bool = false,
         logger: Logger = .haulDisabled, armSpeedChecks: @escaping () -> Void) {
        precondition(destination != nil || resolveName != nil || stream != nil || memoryLimit != nil,
                     "a download needs a destination or a way to name it")
        precondition(memoryLimit == nil || file != nil, "a download into memory is given its in-memory file")
        self.loop = loop
        self.client = client
        self.checksum = checksum
        self.budget = budget
        self.logger = logger
        self.resolveName = destination == nil ? resolveName : nil
        self.resumeJournal = resume?.journal
        self.refresher = refresher
        self.armSpeedChecks = armSpeedChecks
        self.finalNameIsNew = finalNameIsNew
        sink = BodySink(file: file, stream: stream, memoryLimit: memoryLimit.map(Int64.init), maximumFileSize: options.maximumFileSize,
                        partKnownEmpty: (created.part || created.unnamed) && resume == nil, label: "",
                        beforeEachHandedOffWrite: options.beforeEachHandedOffWrite)
        settings = .init(client: client, splicesBodies: options.splicesBodies, synchronizesToDisk: options.synchronizesToDisk,
                         rateLimiter: options.rateLimit.map { RateLimiter(bytesPerSecond: $0) }, logger: logger,
                         handsOffSplicedWrites: options.handsOffSplicedWrites)
        machine = DownloadStateMachine(
            options: options, mirrors: mirrors, destination: destination, awaitingName: resolveName != nil, sink: sink.kind,
            sizeLimit: sink.sizeLimit, ifChangedOnServer: ifChangedOnServer, resume: resume?.state,
            notices: notices, fileOpen: file != nil, created: created,
            bootID: resume != nil ? JournalState.currentBootID() : nil, conditional: resume == nil ? conditional : nil,
            pieceHashes: pieceHashes, refreshesURLs: refresher != nil, expectedSize: expectedSize, followsMetalink: followsMetalink)
        sink.label = inspect { $0.fileLabel }
    }

    var destination: String { machine.destination }
    var partPath: String { machine.partPath }
    var journalPath: String { machine.journalPath }
    /// Whether the download writes into a file that has no name yet (``WorkingFileChoice/unnamed``): nothing
    /// of it is on disk under `partPath`, and whatever is there is not its own.
    var writesUnnamed: Bool { sink.file?.isUnnamed == true }
    /// What this run has cost so far, for a result that covers every run of a paused and resumed download.
    var runCounters: (bytesRequested: Int64, retries: Int, connections: Int) {
        (machine.bytesRequested, machine.retries, machine.peakConnections)
    }
    func snapshot() -> Snapshot {
        let failure = checkpointer?.lastError
        return inspect { $0.snapshot(checkpointFailure: failure) }
    }

    /// Reads the machine in place. A method or computed property called on the stored `machine` itself works
    /// on a copy of all of it (every array, string and reference in it retained, then released), because the
    /// class's property could change during the call; an `inout` access is exclusive, so nothing is copied.
    /// `body` must not reach this download (an overlapping access would trap).
    @inline(__always)
    private func inspect<Result>(_ body: (inout DownloadStateMachine) -> Result) -> Result {
        body(&machine)
    }

    // MARK: Entry points

    func startOnLoop(completion: @escaping (Outcome) -> Void) {
        precondition(loop.inEventLoop)
        self.completion = completion
        let shown = sink.memoryLimit.map { "(memory, at most \($0) bytes)" } ?? (destination.isEmpty ? "(named by the server)" : destination)
        logger.debug("download starting", metadata: [
            LogKey.url: "\(machine.mirrors.primary.given)", "haul.destination": "\(shown)",
            "haul.connections": "\(options.connections)", "haul.mirrors": "\(machine.mirrors.mirrors.count - 1)",
        ])
        run(machine.start())
        if let limit = options.totalTimeout {
            _ = loop.scheduleTimer(after: limit) { [self] in
                fail(.timedOut(after: limit, url: machine.mirrors.primary.given.description, bytesReceived: machine.bytesDone))
            }
        }
    }

    func fail(_ error: HaulError) { run(machine.fail(error)) }
    func pauseOnLoop() {
        // Bytes handed to the writer count when their completions run on the loop: a pause comes after the
        // writes under way and their completions (``HandedOffWriteOrder/Step/pause``), so that it keeps those
        // bytes — and a pause right after the first bytes came is not taken for one before them, which would
        // keep nothing. The loop goes on meanwhile.
        switch HandedOffWriteOrder.decide(.pause, writesUnderway: sink.hasHandOffsUnderway) {
        case .now, .refuse: run(machine.pause())
        case .afterWrites: sink.afterHandedOffWrites(on: loop) { [self] in run(machine.pause()) }
        }
    }
    func cancelOnLoop() { run(machine.cancel()) }

    // MARK: Carrying out actions

    /// Carries out `actions` in order; one whose I/O fails feeds the failure back and drops the rest.
    private func run(_ actions: consuming [DownloadStateMachine.Action]) {
        // Each action is moved out of the array into `perform`, first to last, a payload-free action left in
        // its place for the array to destroy. Iterating copied each out (its payload retained) and destroyed
        // the array's own afterwards; `removeFirst`, and `reverse` then `popLast`, copy too (measured).
        var pending = actions
        pending.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices {
                let action = buffer.moveElement(from: index)
                buffer.initializeElement(at: index, to: .stopTimers)
                guard perform(action) else { return }
            }
        }
    }

    /// `consuming`: the action's copy made for this call is given up by the switch, not kept to be destroyed
    /// at the end beside the payload taken from it (a large enum: this was a measurable part of each of
    /// many small downloads).
    private func perform(_ action: consuming DownloadStateMachine.Action) -> Bool {
        switch consume action {
        case .send(let assignment):
            // A stop carried out before this action may have ended the download or moved the connection on.
            guard machine.isCurrent(connection: assignment.connection, serial: assignment.serial) else { return true }
            let step: HandedOffWriteOrder.Step = assignment.role == .probe ? .sendProbe : .sendOther
            switch HandedOffWriteOrder.decide(step, writesUnderway: sink.hasHandOffsUnderway) {
            case .now, .refuse:
                worker(assignment.connection).start(assignment)
            case .afterWrites:
                // A probe after a restart: its head empties the file, which no write still under way may
                // land in. Sent once they have returned, unless the download moved on meanwhile.
                sink.afterHandedOffWrites(on: loop) { [self] in
                    guard !machine.isStopped, machine.isCurrent(connection: assignment.connection, serial: assignment.serial) else { return }
                    worker(assignment.connection).start(assignment)
                }
            }
        case .stop(let connection):
            madeWorker(connection)?.stop()
        case .retry(let connection, let delay):
            retryTimers[connection] = loop.scheduleTimer(after: delay) { [self] in
                retryTimers[connection] = nil
                run(machine.retryDue(connection))
            }
        case .takeSlots(let wanted, let purpose):
            // Slots taken after a stop (carried out before this action) would never be given back.
            guard !machine.isStopped else { return true }
            let granted = budget.take(upTo: wanted)
            slotsHeld += granted
            run(machine.slotsGranted(granted, wanted: wanted, for: purpose))
        case .waitForSlot:
            guard !machine.isStopped else { return true }
            budget.waitForSlot(owner: self, on: loop) { [self] in run(machine.slotFreed()) }
        case .stopConnections:
            for case let worker? in workers { worker.stop() }
            for timer in retryTimers.values { loop.cancelTimer(timer) }
            retryTimers.removeAll()
            pieceHasher?.stop()
        case .stopTimers:
            checksSpeeds = false
            if let checkpointTimer { loop.cancelTimer(checkpointTimer) }
            checkpointTimer = nil
        case .releaseConnections(let keeping):
            if keeping == 0 { budget.stopWaiting(owner: self) }
            budget.giveBack(max(0, slotsHeld - keeping))
            slotsHeld = min(slotsHeld, keeping)
            workers.removeAll()
        case .prepareFile(let preparation):
            do { try prepare(preparation) } catch { return failed(error) }
        case .openPartialFile(let length):
            do { try sink.openPartial(partPath, length: length) } catch { return failed(error) }
        case .startJournal(let firstCheckpoint):
            // A journal describes a `.part`: the file takes its name before the first record. (Failing while
            // stopping — a pause whose `.part` name another download took meanwhile — must not drop the end
            // that follows: there is just no journal then.)
            do { try nameWorkingFile() } catch { return machine.isStopped ? true : failed(error) }
            guard let file = sink.file, let state = machine.journalState(createdAt: Int64(time(nil)), checksum: checksum) else { return true }
            checkpointer = Checkpointer(loop: loop, journalPath: journalPath, file: file, syncsData: options.synchronizesToDisk, state: state)
            if firstCheckpoint {
                checkpoint(ByteRangeSet())
                scheduleCheckpoints()
            }
        case .continueJournal(let state):
            guard let file = sink.file else { return true }
            checkpointer = Checkpointer(loop: loop, journalPath: journalPath, file: file, syncsData: options.synchronizesToDisk,
                                        state: state, journal: resumeJournal)
            scheduleCheckpoints()
        case .discardJournal(let thenStartOver):
            let previous = checkpointer
            checkpointer = nil
            resumeJournal = nil
            let path = journalPath
            let startOver = { [self] in
                Checkpointer.discard(path: path)
                if thenStartOver { run(machine.journalDiscarded()) }
            }
            if let previous { previous.whenIdle(startOver) } else { startOver() }
        case .checkpoint(let written):
            checkpoint(written)
        case .scheduleSpeedChecks:
            checksSpeeds = true
            armSpeedChecks()
        case .commitStream(let range, let connection, let serial, let window):
            var failure: HaulError?
            do { try sink.commit(range) } catch { failure = error }
            if failure == nil { queueHorizonCheck() }
            run(machine.provisionalCommitted(on: connection, serial: serial, window: window, failure: failure))
        case .discardUnproven(let range):
            sink.discardUnproven(in: range)
        case .hashPieces(let checks):
            guard let file = sink.file else { return failed(.unexpected("pieces to hash before the file is open")) }
            let hasher = pieceHasher ?? PieceHasher(loop: loop) { [weak self] result in self.map { $0.run($0.machine.pieceHashed(result)) } }
            pieceHasher = hasher
            hasher.hash(checks, in: file)
        case .checkOutput:
            // Always a batch's last action: nothing after it runs before the check.
            switch HandedOffWriteOrder.decide(.checkOutput, writesUnderway: sink.hasHandOffsUnderway) {
            case .now, .refuse:
                do { run(machine.outputChecked(size: try sink.size())) } catch { return failed(error) }
            case .afterWrites:
                sink.afterHandedOffWrites(on: loop) { [self] in
                    do throws(HaulError) { run(machine.outputChecked(size: try sink.size())) } catch { run(machine.fail(error)) }
                }
            }
        case .log(let level, let message, let metadata):
            logger.log(level: level, message, metadata: metadata())
        case .end(let report, let wait):
            end(report, after: wait)
        case .refreshURL(let mirror, let url, let error):
            refreshURL(mirror: mirror, url: url, because: error)
        }
        return true
    }

    /// The worker for `connection`, made on its first exchange.
    private func worker(_ connection: Int) -> SegmentWorker {
        if let worker = madeWorker(connection) { return worker }
        let worker = SegmentWorker(id: connection, host: self, sink: sink, settings: settings)
        if workers.count <= connection { workers += repeatElement(nil, count: connection + 1 - workers.count) }
        workers[connection] = worker
        return worker
    }

    /// The worker of `connection`, if it has one.
    private func madeWorker(_ connection: Int) -> SegmentWorker? {
        workers.indices.contains(connection) ? workers[connection] : nil
    }

    /// Gives a file without a name (``WorkingFileChoice/unnamed``) its `.part` name, locked, so that from
    /// here on the download is what it would have been with a named `.part`: before anything needs the name
    /// (a journal record), and when a pause or failure keeps written bytes for a later run.
    private func nameWorkingFile() throws(HaulError) {
        guard let file = sink.file, file.isUnnamed else { return }
        do { try file.materialize() } catch { throw .disk(path: partPath, error) }
        machine.noteWorkingFileNamed()
    }

    /// Feeds an action's I/O failure to the machine; false: the rest of the actions are dropped.
    private func failed(_ error: HaulError) -> Bool {
        run(machine.fail(error))
        return false
    }

    private func prepare(_ preparation: DownloadStateMachine.FilePreparation) throws(HaulError) {
        try sink.prepare(length: preparation.length, preallocate: preparation.preallocate, partPath: partPath,
                         resolvedURL: machine.mirrors.primary.resolved)
    }

    private func checkpoint(_ written: ByteRangeSet) {
        guard let checkpointer else { return }
        checkpointer.pieces = machine.journalPieces
        checkpointer.checkpoint(written) { [self] in run(machine.checkpointLanded(dataSyncFailure: checkpointer.dataSyncFailure)) }
    }

    private func scheduleCheckpoints() {
        checkpointTimer = loop.scheduleTimer(after: options.checkpointInterval) { [self] in
            checkpointTimer = nil
            guard !machine.isStopped else { return }
            if let action = machine.checkpointNow() { run([action]) }
            scheduleCheckpoints()
        }
    }

    /// The once-a-second speed check (``ConnectionSpeedWatch``), while ``checksSpeeds``. Loop thread only.
    func checkSpeeds() {
        guard checksSpeeds else { return }
        var received: [Int: Int64] = [:]
        var paused: Set<Int> = []
        for connection in machine.connections where connection.isBusy {
            guard let worker = madeWorker(connection.id) else { continue }
            received[connection.id] = worker.bytesReceived
            if worker.readsPaused { paused.insert(connection.id) }
        }
        run(machine.speedTick(received: received, readsPaused: paused, durableBytes: checkpointer?.durableBytes))
    }

    /// Asks the refresher on a task of its own (it may wait for a process or the network), never on the loop.
    private func refreshURL(mirror: Int, url: HTTPURL, because error: HaulError) {
        guard let refresher else { return run(machine.urlRefreshed(mirror: mirror, to: nil, refresherError: nil)) }
        Task { [self] in
            let answer: (url: HTTPURL?, error: HaulError?)
            do { answer = (try await refresher(url, error), nil) } catch { answer = (nil, error as? HaulError) }
            loop.execute { [self] in run(machine.urlRefreshed(mirror: mirror, to: answer.url, refresherError: answer.error)) }
        }
    }

    /// Once the stream has delivered enough, the planner may hand out the next bytes (on the next loop turn:
    /// this runs inside a connection's read).
    private func queueHorizonCheck() {
        guard let stream = sink.stream, machine.queueHorizonCheck(delivered: stream.delivered) else { return }
        loop.execute { [self] in run(machine.advanceHorizon(delivered: stream.delivered)) }
    }

    /// Reports the end once `wait` is over: the file unlocked after a failure or a pause.
    private func end(_ report: DownloadStateMachine.Report, after wait: DownloadStateMachine.EndWait) {
        // The download ends only once every write handed to a writer thread has returned: none may land in
        // the file after its end (a rename, a removal, another run's write of the same `.part`). The loop goes
        // on meanwhile; the download has stopped, so nothing hands off more.
        sink.closeHandOffs()
        switch HandedOffWriteOrder.decide(.end, writesUnderway: sink.hasHandOffsUnderway) {
        case .now, .refuse: endAfterWrites(report, after: wait)
        case .afterWrites: sink.afterHandedOffWrites(on: loop) { [self] in endAfterWrites(report, after: wait) }
        }
    }

    /// ``end(_:after:)`` once no write handed off is under way.
    private func endAfterWrites(_ report: DownloadStateMachine.Report, after wait: DownloadStateMachine.EndWait) {
        let checkpointed = if case .checkpoint = wait { true } else { false }
        // Nothing to wait for (every small file's end): delivered here, without a closure holding a copy of
        // the report (an allocation, and the report copied in and destroyed again, once per file).
        if case .nothing = wait { return deliver(report, checkpointed: checkpointed) }
        let deliver = { [self, report] in self.deliver(report, checkpointed: checkpointed) }
        switch wait {
        case .nothing: deliver()
        case .removing(let cleanup):
            // Once no checkpoint is writing (none can re-create the journal after it), while the `.part` is
            // still locked.
            let remove = { cleanup.perform(); deliver() }
            if let checkpointer { checkpointer.discardWhenIdle(completion: remove) } else { remove() }
        case .checkpoint(let written, let pausing):
            guard let checkpointer else { return deliver() }
            checkpointer.pieces = machine.journalPieces
            checkpointer.checkpoint(written, pausing: pausing, completion: deliver)
        case .checkpointerIdle:
            if let checkpointer { checkpointer.whenIdle(deliver) } else { deliver() }
        }
    }

    /// Hands the download's outcome to its task (once `end(_:after:)`'s wait is over).
    private func deliver(_ report: DownloadStateMachine.Report, checkpointed: Bool) {
        let outcome: Outcome
        switch report {
        case .finished: outcome = .finished(finished())
        case .failed(let error): outcome = .failed(error)
        case .paused(let resumable): outcome = .paused(checkpointFailure: checkpointed ? checkpointer?.lastError : nil, resumable: resumable)
        case .cancelled: outcome = .cancelled
        case .upToDate: outcome = .upToDate
        case .metalinkDocument(let url): outcome = .metalinkDocument(url)
        }
        // Best effort: a name taken meanwhile by another download leaves the bytes nowhere.
        if inspect({ $0.namesUnnamedWorkingFile(endingWith: report) }) { try? nameWorkingFile() }
        switch report {
        case .failed, .paused, .upToDate, .metalinkDocument: sink.file?.unlock()
        case .finished, .cancelled: break
        }
        completion?(outcome)
        completion = nil
    }

    private func finished() -> Finished {
        let file = sink.kind == .stream ? nil : sink.file, inMemory = sink.kind == .memory
        return inspect { machine in
            let primary = machine.mirrors.primary
            return Finished(file: file, inMemory: inMemory, partPath: machine.fileLabel,
                            journalPath: machine.journalPath, journaled: machine.journaling || machine.resumedFromJournal,
                            bytes: machine.total ?? machine.bytesDone, finalURL: primary.resolved, entityTag: primary.validators.entityTag,
                            lastModified: primary.validators.lastModified, redirects: machine.redirects,
                            connections: machine.peakConnections, bytesRequested: machine.bytesRequested, retries: machine.retries,
                            response: machine.response, representationDigests: machine.integrity.representationDigests,
                            finalNameIsNew: finalNameIsNew)
        }
    }

    // MARK: SegmentWorkerHost
    var isStopped: Bool { machine.isStopped }

    func headArrived(_ head: ResponseHead, _ facts: ResponseFacts, on connection: Int) throws -> HeadAnswer {
        var step = machine.headArrived(facts, head: head, on: connection)
        if case .nameFile(let decision) = step {
            guard let name = try nameFile(head, decision: decision, on: connection) else { return .abandon }
            step = name
        }
        switch machine.settle(consume step, head: head, on: connection) {
        case .answer(let answer, let preparation, let then):
            if let preparation { try prepare(preparation) }
            run(then)
            return answer
        case .refuse(let error):
            throw error
        case .nameFile:
            throw HaulError.unexpected("the file was named twice")
        }
    }

    /// Names a directory download's file from the probe's head; nil: the name leads to an interrupted
    /// download, continued on the next loop turn instead of this response.
    private func nameFile(_ head: ResponseHead, decision: ProbeResponseDecision, on connection: Int) throws -> DownloadStateMachine.HeadStep? {
        guard let resolveName, let url = machine.connection(connection, { $0.exchange?.url }) else {
            return machine.acceptProbe(decision, head: head, on: connection)
        }
        self.resolveName = nil
        switch try resolveName(head, url) {
        case .fresh(let destination, let file, let created, let finalNameIsNew):
            self.finalNameIsNew = finalNameIsNew
            machine.name(destination)
            sink.label = inspect { $0.fileLabel }
            sink.adopt(file, knownEmpty: created.part || created.unnamed)
            machine.noteCreated(created)
            return machine.acceptProbe(decision, head: head, on: connection)
        case .resume(let destination, let journal, let state, let file):
            // An earlier run left this very file half done: continue it instead of this response.
            machine.name(destination)
            sink.label = inspect { $0.fileLabel }
            sink.adopt(file)
            machine.retire(connection)
            resumeJournal = journal
            loop.execute { [self] in run(machine.continueFromJournal(state, bootID: JournalState.currentBootID())) }
            return nil
        }
    }

    func segmentEnd(of connection: Int) -> Int64? { machine.segmentEnd(of: connection) }

    func bodyWritten(_ count: Int64, at offset: Int64, proven: Bool, on connection: Int) {
        if proven { run(machine.bodyWritten(count, on: connection)) }
        if sink.kind == .stream { queueHorizonCheck() }
    }

    func durabilityHold() -> Duration? {
        guard let hold = machine.durabilityHold(durableBytes: checkpointer?.durableBytes) else { return nil }
        if let checkpoint = hold.checkpoint { run([checkpoint]) }
        return hold.wait
    }

    func exchangeEnded(_ end: ExchangeEnd) { run(machine.exchangeEnded(end)) }
}
