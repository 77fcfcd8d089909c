import Glibc
import Haul
import HaulIO
import Logging
import SystemPackage

// Running the engine for tasks: starting what the scheduler says, carrying out what each outcome does.
extension SessionDaemon {
    // MARK: Scheduling

    /// Starts the queued tasks the scheduler names, one at a time: a start that fails changes the task (or
    /// stops the daemon), so the next question has a new answer.
    func schedule() {
        for _ in 0...state.tasks.count {
            guard let next = scheduler.startsDue(state.tasks, settings: state.settings).first else { return }
            guard let task = state.task(next.id) else { return }
            start(task, next)
        }
    }

    /// Starts (or continues in this process) the download of `task`. When it cannot start, the task has
    /// failed or the daemon is stopping.
    private func start(_ task: SessionState.Task, _ start: SessionScheduler.Start) {
        if case .continueHeld = start, let engine = engines[task.id] {
            let progress = engine.task.currentProgress
            guard commitOrStop([.event(event(task.id, .started(bytes: progress.bytesDone, total: progress.total)), spec: nil, part: nil)])
            else { return }
            scheduler.started(start)
            engine.task.requestResume()
            return
        }
        let spec = task.spec
        let firstStart = task.starts == 0
        var part: PartIdentity?
        var createdPart = false
        var progress: (bytes: Int64, total: Int64?) = (0, nil)
        if let path = spec.filePath {
            (part, createdPart) = Self.preparePartFile(for: spec, path: path)
            progress = JournalProgress.read(partPath: WorkingFileNames.partial(of: path)) ?? (0, nil)
            if firstStart && spec.discardsPartialDownload { progress = (0, nil) }
        } else if let path = task.part?.path {
            // A directory task named by an earlier daemon: its journal says how far it got, though the engine
            // learns that only once the server has named the file again.
            progress = JournalProgress.read(partPath: WorkingFileNames.partial(of: path)) ?? (0, nil)
        }
        guard commitOrStop([.event(event(task.id, .started(bytes: progress.bytes, total: progress.total)), spec: nil, part: part)])
        else { return }
        let client: HaulClient
        do {
            client = try profile(for: spec.options)
        } catch {
            fail(task.id, TaskFailure(error), removeEmptyPart: createdPart)
            return
        }
        // daemon.log gets the engine's notices, which are rare (a mirror dropped, a file that changed and
        // starts over), marked with the task they belong to.
        var logger = DaemonLogHandler.logger(level: .notice, log: configuration.log)
        logger[metadataKey: "haul.task"] = "\(task.id)"
        let request = spec.request(firstStart: firstStart)
        // The command's reasons for giving up (and the URLs it gave) go to daemon.log, with the task's id.
        let download = spec.urlCommand.map { command in
            client.start(request, logger: logger, refreshingURL: command.refresher { [logger] line, _ in logger.notice("\(line)") })
        } ?? client.start(request, logger: logger)
        let engine = Engine(task: download)
        engines[task.id] = engine
        scheduler.started(start, createdPart: createdPart)
        let id = task.id
        Task { [self] in
            let outcome: Result<DownloadResult, HaulError>
            do throws(HaulError) { outcome = .success(try await download.value) } catch { outcome = .failure(error) }
            loop.execute { [self] in engineEnded(id, engine, outcome) }
        }
    }

    /// Makes sure a `.file` task's `NAME.part` exists before the engine starts, and returns its identity,
    /// recorded with the start: should the daemon die after the engine's rename and before the completion
    /// is recorded, the file at the destination is recognised as this task's by its inode. (The engine opens
    /// an existing `.part` as it finds it; an empty one without a journal is a fresh start.) Nothing is
    /// created where the engine would refuse anyway (an existing destination it may not replace).
    static func preparePartFile(for spec: TaskSpec, path: String) -> (PartIdentity?, created: Bool) {
        let partPath = WorkingFileNames.partial(of: path)
        var created = false
        if !OutputFile.exists(partPath) {
            if !spec.replacesExisting && !spec.onlyIfChanged && spec.modifiedSince == nil && OutputFile.exists(path) { return (nil, false) }
            let parent = OutputFile.directory(containing: path)
            if spec.createsDirectories && !OutputFile.isDirectory(parent) { _ = try? OutputFile.createDirectories(parent) }
            do {
                _ = try FileDescriptor.openingSessionFile(partPath, .writeOnly, options: [.create, .exclusiveCreate],
                                                          permissions: [.ownerReadWrite, .groupRead, .otherRead])
                created = true
            } catch {
                // Not created here: the engine reports why when it opens the path itself.
            }
        }
        guard let status = PathStatus.of(partPath), status.isRegularFile else { return (nil, created) }
        return (PartIdentity(path: path, device: status.device, inode: status.inode), created)
    }

    private func profile(for options: TaskOptions) throws(HaulError) -> HaulClient {
        if let client = profiles[options] { return client }
        var downloadOptions = options.downloadOptions(maximumConnections: state.settings.maximumConnections)
        // A task's file is recognised after a crash by the inode of its `.part` (``PartIdentity``), which a
        // file without a name has not got: a directory task's would never be recorded.
        downloadOptions.writesUnnamedFiles = false
        let client = try HaulClient(options: downloadOptions)
        profiles[options] = client
        return client
    }

    // MARK: Engine outcomes

    func engineEnded(_ id: Int, _ engine: Engine, _ result: Result<DownloadResult, HaulError>) {
        guard engines[id] === engine else { return }
        let outcome: SessionScheduler.Outcome
        switch result {
        case .success: outcome = .completed
        case .failure(let error): outcome = .failed(error, bytesWritten: engine.task.currentProgress.bytesDone)
        }
        carryOut(scheduler.engineEnded(id, outcome, taskState: state.task(id)?.state), id, engine, result: try? result.get())
    }

    /// The engine's pause returned; if the task is still its own and a client asked for the pause, record it.
    func enginePaused(_ id: Int, _ engine: Engine) {
        guard engines[id] === engine, engine.task.currentProgress.phase == .paused else { return }
        carryOut(scheduler.engineEnded(id, .paused, taskState: state.task(id)?.state), id, engine, result: nil)
    }

    private func carryOut(_ action: SessionScheduler.OutcomeAction, _ id: Int, _ engine: Engine, result: DownloadResult?) {
        switch action {
        case .none:
            return
        case .computeDigest:
            guard let result else { return }
            let checksum = state.task(id)?.spec.checksum
            BlockingWork.start { [self] in
                let digest = Self.digest(of: result.path, checksum: checksum)
                loop.execute { [self] in completed(id, engine, result, digest: digest) }
            }
            return
        case .recordFailure(let failure, let removeEmptyPart):
            engines[id] = nil
            fail(id, failure, removeEmptyPart: removeEmptyPart)
        case .recordCancelled:
            engines[id] = nil
            commitOrStop([.event(event(id, .cancelled), spec: nil, part: nil)])
        case .forget:
            engines[id] = nil
        case .recordPaused:
            let progress = engine.task.currentProgress
            // Its journal is complete now: make sure the next daemon knows a directory task's file to read it
            // from, even when no progress tick has recorded the name yet.
            recordPartFileIfNamed(id, progress)
            commitOrStop([.event(event(id, .paused(bytes: progress.bytesDone, total: progress.total)), spec: nil, part: nil)])
        }
        taskSettled(id)
    }

    private func completed(_ id: Int, _ engine: Engine, _ result: DownloadResult, digest: String) {
        guard engines[id] === engine else { return }
        engines[id] = nil
        scheduler.completionRecorded(id)
        guard commitOrStop([.event(event(id, .completed(path: result.path, bytes: result.bytes, digest: digest, recovered: false)),
                                   spec: nil, part: nil)])
        else { return taskSettled(id) }
        if let task = state.task(id), case .owed(let command) = task.hook { runHook(id, command: command) }
        taskSettled(id)
    }

    /// Records that task `id` failed; removes the empty `.part` the daemon made for this start when asked
    /// (the engine took away the journal it started; a `.part` it preallocated has a size but no byte).
    func fail(_ id: Int, _ failure: TaskFailure, removeEmptyPart: Bool) {
        guard let task = state.task(id), !task.state.hasEnded else { return }
        // The engine's own words (the URL, the tries), not the CLI's hints: the event is read by API clients
        // as well as by `haul queue`, and a hint names options of `haul`, not of a queued task.
        commitOrStop([.event(event(id, .failed(failure)), spec: nil, part: nil)])
        guard removeEmptyPart, let path = task.spec.filePath, !OutputFile.exists(WorkingFileNames.journal(of: path)) else { return }
        let partPath = WorkingFileNames.partial(of: path)
        if let status = PathStatus.of(partPath), status.isRegularFile {
            do { try OutputFile.remove(partPath) } catch { say("task \(id): cannot remove its empty \(partPath): \(error)") }
        }
    }

    /// A task's outcome is committed: answer who waited for it, go on with the queue, and see whether a
    /// stop can finish.
    func taskSettled(_ id: Int) {
        let waiters = taskWaiters.removeValue(forKey: id) ?? []
        for waiter in waiters { waiter() }
        schedule()
        continueStop()
    }

    /// Runs `body` once the outcome of task `id` (an end or a pause) has been committed.
    func whenSettled(_ id: Int, _ body: @escaping () -> Void) {
        taskWaiters[id, default: []].append(body)
    }

    /// Whether an engine's byte count is the task's: a restarted daemon's engine counts nothing while it
    /// connects (a directory task reads its journal only once the server has named the file again); until
    /// then the bytes its `started` event recorded from the journal stand, rather than "running 0 B".
    static func engineHasCounted(_ progress: DownloadProgress) -> Bool {
        progress.bytesDone > 0 || progress.phase != .connecting
    }
}
