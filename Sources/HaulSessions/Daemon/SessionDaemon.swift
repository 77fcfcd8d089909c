import Glibc
import Haul
import HaulCommandLine
import HaulIO
import SystemPackage

/// The one owner of a session: it holds the session directory's lock, appends to the log, runs the queued
/// downloads (at most `jobs` at once, under one connection cap) and serves clients on the session's Unix
/// socket.
///
/// ```swift
/// let paths = try SessionPaths(identifier: "backups")
/// let status = try await SessionDaemon.run(DaemonConfiguration(paths: paths))   // until stopped
/// ```
///
/// Everything the daemon decides happens on one event-loop thread, in the order things arrive; a change is
/// in the log and synced before anyone (client, hook) hears of it. See `docs/sessions.md`.
public final class SessionDaemon: @unchecked Sendable {
    // @unchecked Sendable: the members under "Loop-confined" are touched on `loop` only (start-up excepted,
    // which runs before the loop gets any work); the rest are immutable.

    /// Runs the daemon of `configuration.paths` until it is stopped (`stop` request, signal, idle exit);
    /// returns the exit status (0 after a clean stop, 1 when the log could no longer be written).
    ///
    /// Throws before serving when the session is unusable: another daemon holds it
    /// (``SessionError/daemonAlreadyRunning(path:pid:)``), its log is damaged
    /// (``SessionError/corruptState(path:offset:reason:)``), its directory or socket cannot be set up.
    public static func run(_ configuration: DaemonConfiguration) async throws(SessionError) -> Int32 {
        let paths = configuration.paths
        signal(SIGPIPE, SIG_IGN)
        // File-system work (and the fdatasync of a torn tail's truncation) runs on a blocking-work thread,
        // never on the cooperative pool.
        let (lock, opened) = try await BlockingWork.run { () throws(SessionError) -> (SessionLock, SessionLogFile.Opened) in
            try paths.prepareDirectory()
            let lock = try SessionLock.acquire(paths)
            let opened = try SessionLogFile.open(path: paths.log)
            try lock.writePID()
            return (lock, opened)
        }
        let loop: EventLoop
        do { loop = try EventLoop(name: "haul-session") } catch { throw .io(path: paths.directory, error) }
        let daemon = SessionDaemon(configuration: configuration, lock: lock, log: opened.file, state: opened.state, loop: loop)
        if let torn = opened.tornTail {
            configuration.log("session \(paths.identifier): cut off a torn record at the end of the log (\(torn))")
        }
        do {
            try await BlockingWork.run { () throws(SessionError) in try daemon.startUp() }
        } catch {
            await BlockingWork.run {
                loop.shutdown()
                lock.removePID()
            }
            throw error
        }
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            loop.execute { daemon.serve(continuation) }
        }
        for client in daemon.clientsToShutDown() { await client.shutdown() }
        await BlockingWork.run {
            loop.shutdown()
            lock.removePID()
        }
        configuration.log("session \(paths.identifier): stopped")
        return status
    }

    /// Starts `arguments` (an absolute executable path first, typically `haul daemon --session ID ...`)
    /// as a daemon in the background: a new session (no terminal, so a Ctrl-C in the caller's terminal never
    /// reaches it), stdin from `/dev/null`, stdout and stderr appended to the session's `daemon.log`, no
    /// descriptor of this process inherited (it marks this process's descriptors from 3 up close-on-exec:
    /// meant for a short-lived launcher such as `haul daemon --detach`). Returns its pid without waiting.
    public static func startDetached(_ arguments: [String], paths: SessionPaths) throws(SessionError) -> Int32 {
        try paths.prepareDirectory()
        ChildProcesses.closeInheritedDescriptorsOnExec()
        do {
            return try ChildProcesses.spawn(arguments, environment: ["HAUL_STATE_DIR": paths.stateDirectory],
                                            outputPath: paths.daemonLog, newSession: true)
        } catch {
            throw .daemonUnavailable("cannot start \(arguments[0]): \(error)")
        }
    }

    let configuration: DaemonConfiguration
    let paths: SessionPaths
    let loop: EventLoop
    let lock: SessionLock
    let store: SessionLogFile

    // MARK: Loop-confined

    /// A download the engine is running (or holds paused) for a task.
    final class Engine: @unchecked Sendable {
        // @unchecked Sendable: `phase` and `intent` are loop-confined; `task` is Sendable.
        enum Phase { case active, paused, finishing }
        enum Intent { case none, pause, cancel }
        let task: DownloadTask
        let connections: Int
        /// Whether the daemon created the task's `.part` for this start (it may remove it if nothing was written).
        let createdPart: Bool
        var phase = Phase.active
        var intent = Intent.none
        init(task: DownloadTask, connections: Int, createdPart: Bool) {
            self.task = task
            self.connections = connections
            self.createdPart = createdPart
        }
    }

    private var state: SessionState
    private var engines: [Int: Engine] = [:]
    /// Tasks whose files are being removed for a cancel, off the loop.
    private var cancelling: Set<Int> = []
    private var clients: [Int: DaemonConnection] = [:]
    private var nextClientID = 1
    /// The listening socket (closed when the daemon lets go of it) and its registration with the loop.
    private final class Listener {
        let socket: OwnedFileDescriptor
        var registration: FileDescriptorRegistration?
        init(_ socket: consuming OwnedFileDescriptor) { self.socket = socket }
    }
    private var listener: Listener?
    private var profiles: [TaskOptions: HaulClient] = [:]
    private var hooksRunning = 0
    /// Set once a stop has begun: the exit status, the stop requests to answer, the pauses still running.
    private var stopping: (status: Int32, replies: [(DaemonConnection, Int64)], pausesLeft: Int)?
    private var finished: CheckedContinuation<Int32, Never>?
    private var idleSince = MonotonicInstant.now()
    /// Called when a task's outcome (end, pause) has been committed.
    private var taskWaiters: [Int: [() -> Void]] = [:]

    private init(configuration: DaemonConfiguration, lock: SessionLock, log: SessionLogFile, state: SessionState, loop: EventLoop) {
        self.configuration = configuration
        paths = configuration.paths
        self.lock = lock
        store = log
        self.state = state
        self.loop = loop
    }

    private func say(_ message: String) { configuration.log("session \(paths.identifier): " + message) }

    // MARK: Start-up (blocking, before the loop serves)

    /// Stores new settings, recovers completions a crash left unrecorded, and opens the socket.
    private func startUp() throws(SessionError) {
        if let update = configuration.updateSettings {
            var settings = state.settings
            update(&settings)
            if settings != state.settings { try commit([.settings(settings)]) }
        }
        try recoverCompletions()
        do { listener = Listener(try UnixSocket.listen(at: paths.socket)) } catch { throw .io(path: paths.socket, error) }
        let unfinished = state.tasks.filter { !$0.state.hasEnded && $0.state != .paused }.count
        say("daemon \(getpid()) serving \(paths.socket): \(state.tasks.count) tasks (\(unfinished) to run), \(state.lastSequence) events")
    }

    /// A task the log says was running (or queued after a start) whose finished file is already at its
    /// destination — the same inode its `.part` had, and no `.part` left — completed just before the last
    /// daemon died, between the rename and the record. It is recorded as completed now, never fetched again.
    private func recoverCompletions() throws(SessionError) {
        for task in state.tasks where (task.state == .running || task.state == .queued) && task.starts > 0 {
            guard let part = task.part else { continue }
            var info = stat()
            guard lstat(part.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                  UInt64(info.st_dev) == part.device, UInt64(info.st_ino) == part.inode,
                  !OutputFile.exists(WorkingFileNames.partial(of: part.path))
            else { continue }
            let digest = Self.digest(of: part.path, checksum: task.spec.checksum)
            try commit([.event(event(task.id, .completed(path: part.path, bytes: Int64(info.st_size), digest: digest, recovered: true)),
                               spec: nil, part: nil)])
            say("task \(task.id): found its finished file \(part.path); recorded the completion")
        }
    }

    static func digest(of path: String, checksum: Checksum?) -> String {
        // The engine verified a given checksum before the rename: the file has it.
        if let checksum { return checksum.description }
        do { return "sha256=" + (try FileDigest.hex(of: path, algorithm: .sha256)) } catch { return "sha256=unknown" }
    }

    private func event(_ task: Int, _ kind: SessionEvent.Kind) -> SessionEvent {
        SessionEvent(sequence: state.lastSequence + 1, time: WallClock.milliseconds(), task: task, kind: kind)
    }

    /// Appends records durably, then makes them the state and pushes their events to subscribers.
    private func commit(_ records: [LogRecord]) throws(SessionError) {
        var next = state
        for record in records {
            do { try next.apply(record) } catch {
                // The daemon made a record its own state refuses: a bug, never written.
                throw .corruptState(path: paths.log, offset: store.end, reason: "refusing to write an inconsistent record: \(error)")
            }
        }
        try store.append(records, firstNumber: state.recordCount + 1)
        let before = state.lastSequence
        state = next
        guard state.lastSequence > before else { return }
        for client in clients.values {
            guard let pushed = client.pushedThrough else { continue }
            for event in state.events(after: max(pushed, before)) {
                if !client.send(ProtocolCodec.encode(.event(event)), loop: loop) { drop(client, reason: client.failure) }
            }
            client.pushedThrough = state.lastSequence
        }
    }

    /// Commits what the daemon itself decided (an engine outcome, a start). If the log cannot take it, the
    /// daemon stops: carrying on would mean acting on what is not on disk. The next daemon reconciles.
    @discardableResult
    private func commitOrStop(_ records: [LogRecord]) -> Bool {
        do {
            try commit(records)
            return true
        } catch {
            say("cannot write the session log (\(error)); stopping")
            beginStop(status: 1)
            return false
        }
    }

    // MARK: Serving

    private func serve(_ continuation: CheckedContinuation<Int32, Never>) {
        finished = continuation
        if let listener {
            do {
                listener.registration = try loop.register(listener.socket.descriptor, interest: .readable) { [self] _ in acceptClients() }
            } catch {
                say("cannot watch the socket: \(error)")
                beginStop(status: 1)
                return
            }
        }
        if configuration.handlesSignals {
            do {
                try StopSignals.install(immediateExitStatus: 130) { [self] _ in
                    loop.execute { [self] in
                        say("stop signal: pausing every download")
                        StopSignals.acknowledge(exitLine: "haul daemon: second stop signal: exiting now; each journal keeps its last checkpoint\n")
                        beginStop(status: 0)
                    }
                }
            } catch {
                say("cannot handle SIGINT/SIGTERM/SIGHUP: \(error)")
            }
        }
        for task in state.tasks {
            if case .owed(let command) = task.hook { runHook(task.id, command: command) }
        }
        schedule()
        scheduleProgress()
        scheduleIdleCheck()
    }

    /// The engine clients of the profiles used, for shutting down after the loop stopped serving.
    private func clientsToShutDown() -> [HaulClient] { Array(profiles.values) }

    // MARK: Scheduling

    /// Starts queued tasks, oldest first, while fewer than `jobs` run and their connections fit the cap.
    private func schedule() {
        guard stopping == nil else { return }
        var active = engines.values.filter { $0.phase != .paused }
        var reserved = active.reduce(0) { $0 + $1.connections }
        for task in state.tasks where task.state == .queued || task.state == .running {
            if let engine = engines[task.id], engine.phase != .paused { continue }
            if cancelling.contains(task.id) { continue }
            guard active.count < state.settings.jobs else { return }
            let need = min(task.spec.options.connections, state.settings.maximumConnections)
            if !active.isEmpty && reserved + need > state.settings.maximumConnections { return }
            guard let engine = start(task) else { continue }
            active.append(engine)
            reserved += need
        }
    }

    /// Starts (or resumes in this process) the download of `task`; nil when it could not start (then it
    /// has failed, or the daemon is stopping).
    private func start(_ task: SessionState.Task) -> Engine? {
        if let engine = engines[task.id], engine.phase == .paused {
            let progress = engine.task.currentProgress
            guard commitOrStop([.event(event(task.id, .started(bytes: progress.bytesDone, total: progress.total)), spec: nil, part: nil)])
            else { return nil }
            engine.phase = .active
            engine.intent = .none
            engine.task.requestResume()
            return engine
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
        else { return nil }
        let client: HaulClient
        do {
            client = try profile(for: spec.options)
        } catch {
            fail(task.id, error, createdPart: createdPart)
            return nil
        }
        // daemon.log (the daemon's stderr) gets the engine's notices, which are rare (a mirror dropped, a
        // file that changed and starts over), marked with the task they belong to.
        var logger = Self.engineLogger
        logger[metadataKey: "haul.task"] = "\(task.id)"
        let download = client.start(spec.request(firstStart: firstStart), logger: logger)
        let engine = Engine(task: download, connections: min(spec.options.connections, state.settings.maximumConnections),
                            createdPart: createdPart)
        engines[task.id] = engine
        let id = task.id
        Task { [self] in
            let outcome: Result<DownloadResult, HaulError>
            do throws(HaulError) { outcome = .success(try await download.value) } catch { outcome = .failure(error) }
            loop.execute { [self] in engineEnded(id, engine, outcome) }
        }
        return engine
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
            if !spec.replacesExisting && OutputFile.exists(path) { return (nil, false) }
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
        var info = stat()
        guard lstat(partPath, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return (nil, created) }
        return (PartIdentity(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), created)
    }

    private static let engineLogger = StandardErrorLogHandler.logger(level: .notice)

    private func profile(for options: TaskOptions) throws(HaulError) -> HaulClient {
        if let client = profiles[options] { return client }
        let client = try HaulClient(options: options.downloadOptions(maximumConnections: state.settings.maximumConnections))
        profiles[options] = client
        return client
    }

    // MARK: Engine outcomes

    private func engineEnded(_ id: Int, _ engine: Engine, _ outcome: Result<DownloadResult, HaulError>) {
        guard engines[id] === engine else { return }
        switch outcome {
        case .success(let result):
            engine.phase = .finishing
            let checksum = state.task(id)?.spec.checksum
            BlockingWork.start { [self] in
                let digest = Self.digest(of: result.path, checksum: checksum)
                loop.execute { [self] in completed(id, engine, result, digest: digest) }
            }
        case .failure(let error):
            if case .cancelled = error.reason { return cancelled(id, engine) }
            engines[id] = nil
            // The engine took away the journal it started; a `.part` it preallocated has a size but no byte.
            fail(id, error, createdPart: engine.createdPart, wroteNothing: engine.task.currentProgress.bytesDone == 0)
            taskSettled(id)
        }
    }

    private func completed(_ id: Int, _ engine: Engine, _ result: DownloadResult, digest: String) {
        guard engines[id] === engine else { return }
        engines[id] = nil
        guard commitOrStop([.event(event(id, .completed(path: result.path, bytes: result.bytes, digest: digest, recovered: false)),
                                   spec: nil, part: nil)])
        else { return taskSettled(id) }
        if let task = state.task(id), case .owed(let command) = task.hook { runHook(id, command: command) }
        taskSettled(id)
    }

    /// The engine's download was cancelled: by a client (record it) or by a stop (nothing to record: the
    /// task runs again with the next daemon).
    private func cancelled(_ id: Int, _ engine: Engine) {
        guard engines[id] === engine else { return }
        engines[id] = nil
        if engine.intent == .cancel, let task = state.task(id), !task.state.hasEnded {
            commitOrStop([.event(event(id, .cancelled), spec: nil, part: nil)])
        }
        taskSettled(id)
    }

    private func fail(_ id: Int, _ error: HaulError, createdPart: Bool, wroteNothing: Bool = false) {
        guard let task = state.task(id), !task.state.hasEnded else { return }
        let status = ExitStatus(error)
        // The engine's own words (the URL, the tries), not the CLI's hints: the event is read by API clients
        // (HaulSession) as well as by `haul queue`, and a hint names options of `haul`, not of a queued task.
        commitOrStop([.event(event(id, .failed(error: error.description,
                                                 className: status.className, code: status.code)), spec: nil, part: nil)])
        // An empty `.part` the daemon made for this start, which never wrote anything, goes again — unless
        // another download holds it (then it is that download's).
        if case .destinationBusy = error.reason { return }
        if createdPart, let path = task.spec.filePath, !OutputFile.exists(WorkingFileNames.journal(of: path)) {
            var info = stat()
            let partPath = WorkingFileNames.partial(of: path)
            if lstat(partPath, &info) == 0, info.st_size == 0 || wroteNothing, info.st_mode & S_IFMT == S_IFREG { _ = unlink(partPath) }
        }
    }

    /// A task's outcome is committed: answer who waited for it, go on with the queue, and see whether a
    /// stop can finish.
    private func taskSettled(_ id: Int) {
        let waiters = taskWaiters.removeValue(forKey: id) ?? []
        for waiter in waiters { waiter() }
        schedule()
        continueStop()
    }

    // MARK: Hooks

    private func runHook(_ id: Int, command: String) {
        guard let task = state.task(id), let completion = task.completion else { return }
        guard commitOrStop([.hookStarted(task: id)]) else { return }
        let environment = [
            "HAUL_SESSION": paths.identifier, "HAUL_TASK_ID": String(id), "HAUL_PATH": completion.path,
            "HAUL_BYTES": String(completion.bytes), "HAUL_DIGEST": completion.digest, "HAUL_URL": task.spec.url,
            "HAUL_EVENT_SEQ": String(completion.sequence),
        ]
        let pid: pid_t
        do {
            pid = try ChildProcesses.spawn(["/bin/sh", "-c", command], environment: environment, outputPath: nil, newSession: false)
        } catch {
            say("task \(id): cannot run its hook: \(error)")
            commitOrStop([.event(event(id, .hook(status: 127)), spec: nil, part: nil)])
            return
        }
        hooksRunning += 1
        BlockingWork.start { [self] in
            let status = ChildProcesses.wait(for: pid)
            loop.execute { [self] in
                hooksRunning -= 1
                commitOrStop([.event(event(id, .hook(status: status)), spec: nil, part: nil)])
                continueStop()
            }
        }
    }

    // MARK: Progress and idling

    private func scheduleProgress() {
        loop.scheduleTimer(after: configuration.progressInterval) { [self] in
            guard stopping == nil || !engines.isEmpty else { return }
            reportProgress()
            scheduleProgress()
        }
    }

    private func reportProgress() {
        var reports: [TaskProgress] = []
        for (id, engine) in engines.sorted(by: { $0.key < $1.key }) where engine.phase != .paused {
            let progress = engine.task.currentProgress
            reports.append(TaskProgress(id: id, phase: JSONProgress.phaseName(progress.phase), bytes: progress.bytesDone, total: progress.total,
                                        bytesPerSecond: Int64(progress.bytesPerSecond.rounded()), connections: progress.activeConnections,
                                        partialPath: progress.partialPath.isEmpty ? nil : progress.partialPath))
            recordPartFileIfNamed(id, progress)
        }
        guard !reports.isEmpty else { return }
        let line = ProtocolCodec.encode(.progress(reports))
        for client in clients.values where client.wantsProgress {
            if !client.send(line, loop: loop) { drop(client, reason: client.failure) }
        }
    }

    /// A directory task learns its file's name from the server: once the engine has named its `.part`,
    /// its identity is recorded like a `.file` task's is at its start.
    private func recordPartFileIfNamed(_ id: Int, _ progress: DownloadProgress) {
        guard let task = state.task(id), task.state == .running, task.spec.filePath == nil,
              let path = WorkingFileNames.destination(ofPartial: progress.partialPath) else { return }
        var info = stat()
        guard lstat(progress.partialPath, &info) == 0 else { return }
        let part = PartIdentity(path: path, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
        guard task.part != part else { return }
        commitOrStop([.part(task: id, part)])
    }

    private func scheduleIdleCheck() {
        loop.scheduleTimer(after: .seconds(1)) { [self] in
            guard stopping == nil else { return }
            let busy = !clients.isEmpty || engines.values.contains { $0.phase != .paused } || hooksRunning > 0
                || !cancelling.isEmpty || state.tasks.contains { $0.state == .queued || $0.state == .running }
            let now = MonotonicInstant.now()
            if busy { idleSince = now }
            if let limit = configuration.idleExit, !busy,
               now.nanoseconds(since: idleSince) >= UInt64(limit.milliseconds) * 1_000_000 {
                say("idle for \(limit.milliseconds / 1000) s; stopping")
                beginStop(status: 0)
                return
            }
            scheduleIdleCheck()
        }
    }

    // MARK: Stopping

    /// Stops taking requests, pauses every running download (each writes its journal), waits for
    /// completions being recorded, answers the stop requests, and ends ``run(_:)``.
    private func beginStop(status: Int32, reply: (DaemonConnection, Int64)? = nil) {
        if stopping != nil {
            if let reply { stopping!.replies.append(reply) }
            return continueStop()
        }
        stopping = (status, reply.map { [$0] } ?? [], 0)
        if let registration = listener?.registration { loop.deregister(registration) }
        if listener != nil {
            listener = nil  // the last reference to it: closes the socket
            _ = unlink(paths.socket)
        }
        for engine in engines.values where engine.phase == .active {
            stopping!.pausesLeft += 1
            Task { [self] in
                try? await engine.task.pause()
                loop.execute { [self] in
                    stopping!.pausesLeft -= 1
                    continueStop()
                }
            }
        }
        continueStop()
    }

    private func continueStop() {
        guard let stop = stopping, stop.pausesLeft == 0, !engines.values.contains(where: { $0.phase == .finishing }),
              cancelling.isEmpty, let finished else { return }
        self.finished = nil
        for (client, id) in stop.replies {
            var body = ReplyBody()
            body.sequence = state.lastSequence
            _ = client.send(ProtocolCodec.encode(.reply(id: id, .success(body))), loop: loop)
        }
        for client in clients.values { client.close(loop: loop) }
        clients = [:]
        finished.resume(returning: stop.status)
    }

    // MARK: Clients

    private func acceptClients() {
        guard let listener else { return }
        while true {
            // Whatever this iteration does not hand to a client is closed when the iteration ends.
            let accepted: OwnedFileDescriptor?
            do { accepted = try UnixSocket.accept(on: listener.socket.descriptor) } catch { return }
            guard let socket = accepted else { return }
            let peer: PeerCredentials
            do { peer = try PeerCredentials.of(socket.descriptor) } catch { continue }
            if let refusal = PeerPolicy.refusal(peer: peer, owner: geteuid()) {
                say("refused a client: \(refusal)")
                let line = ProtocolCodec.encode(.reply(id: nil, .failure(RemoteFailure(code: "refused", message: refusal))))
                _ = try? UnixSocket.send(line, from: 0, on: socket.descriptor)
                continue
            }
            let client = DaemonConnection(id: nextClientID, socket: socket, peer: peer)
            nextClientID += 1
            do {
                client.registration = try loop.register(client.socket, interest: .readable) { [self] events in clientEvent(client, events) }
            } catch {
                client.close(loop: loop)
                continue
            }
            clients[client.id] = client
        }
    }

    private func clientEvent(_ client: DaemonConnection, _ events: IOEvents) {
        guard !client.isClosed else { return }
        if events.contains(.writable) {
            if !client.flush(loop: loop) { return drop(client, reason: client.failure) }
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            switch client.read() {
            case .lines: process(client)
            case .closed(let reason):
                // Lines that came before the close are still answered when they can be (a client may
                // send `stop` and close at once); what cannot be sent is dropped with the connection.
                process(client)
                drop(client, reason: reason)
            }
        }
    }

    private func drop(_ client: DaemonConnection, reason: String?) {
        guard !client.isClosed else { return }
        if let reason { say("dropped client \(client.id) (process \(client.peer.pid)): \(reason)") }
        client.close(loop: loop)
        clients[client.id] = nil
    }

    private var processing: Set<Int> = []

    /// Handles the client's pending request lines one at a time.
    private func process(_ client: DaemonConnection) {
        guard !processing.contains(client.id) else { return }
        processing.insert(client.id)
        defer { processing.remove(client.id) }
        while !client.busy, !client.pendingLines.isEmpty {
            let line = client.pendingLines.removeFirst()
            client.busy = true
            let decoded: (id: Int64, request: SessionRequest)
            do {
                decoded = try ProtocolCodec.decodeRequest(line)
            } catch {
                reply(client, error.id, .failure(.badRequest(error.message)))
                continue
            }
            handle(decoded.request, id: decoded.id, from: client)
        }
    }

    private func reply(_ client: DaemonConnection, _ id: Int64?, _ result: Result<ReplyBody, RemoteFailure>) {
        client.busy = false
        if !client.send(ProtocolCodec.encode(.reply(id: id, result)), loop: loop) { return drop(client, reason: client.failure) }
        process(client)
    }

    private func handle(_ request: SessionRequest, id: Int64, from client: DaemonConnection) {
        let respond = { [self] (result: Result<ReplyBody, RemoteFailure>) in reply(client, id, result) }
        if stopping != nil {
            switch request {
            case .hello, .list, .events, .stop: break
            default: return respond(.failure(RemoteFailure(code: "stopping", message: "the daemon is stopping")))
            }
        }
        switch request {
        case .hello(let version):
            guard version == SessionProtocol.version else {
                return respond(.failure(RemoteFailure(code: "unsupported-protocol",
                                                      message: "this daemon speaks protocol \(SessionProtocol.version), not \(version)")))
            }
            var body = ReplyBody()
            body.protocolVersion = SessionProtocol.version
            body.session = paths.identifier
            body.pid = getpid()
            body.sequence = state.lastSequence
            respond(.success(body))
        case .add(let spec):
            if let problem = spec.problem() { return respond(.failure(.badRequest(problem))) }
            let id = state.nextTaskID
            let added: SessionEvent.Kind
            switch spec.destination {
            case .file(let path): added = .added(url: spec.url, path: path, directory: nil)
            case .directory(let directory): added = .added(url: spec.url, path: nil, directory: directory)
            // Refused by `problem()` above, with its reason; here only for the switch to be exhaustive.
            case .stream, .memory: return respond(.failure(.badRequest(spec.problem() ?? "this destination cannot be queued")))
            }
            let record = LogRecord.event(event(id, added), spec: spec, part: nil)
            guard record.payload.count <= SessionLogCodec.maximumPayload else {
                return respond(.failure(.badRequest("the task is \(record.payload.count) bytes as a log record; at most \(SessionLogCodec.maximumPayload)")))
            }
            do {
                try commit([record])
            } catch {
                return respond(.failure(RemoteFailure(code: "store", message: error.description)))
            }
            var body = ReplyBody()
            body.task = info(state.task(id)!)
            body.sequence = state.lastSequence
            respond(.success(body))
            schedule()
        case .list(let ids):
            if let unknown = ids?.first(where: { listedTask($0) == nil }) { return respond(.failure(unknownTask(unknown))) }
            respond(.success(listing(ids)))
        case .remove(let ids):
            if let unknown = ids.first(where: { listedTask($0) == nil }) { return respond(.failure(unknownTask(unknown))) }
            if let live = ids.compactMap({ listedTask($0) }).first(where: { !$0.state.hasEnded }) {
                return respond(.failure(RemoteFailure(code: "not-ended", message: "task \(live.id) is \(info(live).state.rawValue), not ended; cancel it first")))
            }
            for taskID in Array(Set(ids)).sorted() {
                do { try commit([.event(event(taskID, .removed), spec: nil, part: nil)]) } catch {
                    return respond(.failure(RemoteFailure(code: "store", message: error.description)))
                }
            }
            respond(.success(listing(nil)))
        case .pause(let ids), .resume(let ids), .cancel(let ids):
            if let unknown = ids.first(where: { listedTask($0) == nil }) { return respond(.failure(unknownTask(unknown))) }
            let unique = Array(Set(ids)).sorted()
            var remaining = unique.count + 1
            var failure: RemoteFailure?
            let done = { [self] (problem: RemoteFailure?) in
                if failure == nil { failure = problem }
                remaining -= 1
                guard remaining == 0 else { return }
                if let failure { return respond(.failure(failure)) }
                respond(.success(listing(ids)))
            }
            for taskID in unique {
                switch request {
                case .pause: pause(taskID, done)
                case .resume: resume(taskID, done)
                default: cancel(taskID, done)
                }
            }
            done(nil)
            schedule()
        case .events(let after, let limit):
            let events = state.events(after: after)
            var body = ReplyBody()
            body.events = Array(events.prefix(limit))
            body.more = events.count > limit
            body.sequence = state.lastSequence
            respond(.success(body))
        case .subscribe(let after, let consumer, let progress):
            let start = after ?? consumer.map { state.acknowledgements[$0] ?? 0 } ?? state.lastSequence
            var body = listing(nil)
            body.after = min(start, state.lastSequence)
            client.wantsProgress = progress
            // The reply, then the events already in the log after `start`, then live ones as they are committed.
            client.busy = false
            guard client.send(ProtocolCodec.encode(.reply(id: id, .success(body))), loop: loop) else {
                return drop(client, reason: client.failure)
            }
            for event in state.events(after: start) {
                guard client.send(ProtocolCodec.encode(.event(event)), loop: loop) else { return drop(client, reason: client.failure) }
            }
            client.pushedThrough = state.lastSequence
            process(client)
        case .acknowledge(let consumer, let sequence):
            guard sequence <= state.lastSequence else {
                return respond(.failure(.badRequest("event \(sequence) does not exist yet (the latest is \(state.lastSequence))")))
            }
            if let previous = state.acknowledgements[consumer], previous >= sequence { return respond(.success(ReplyBody())) }
            do { try commit([.acknowledged(consumer: consumer, sequence: sequence)]) } catch {
                return respond(.failure(RemoteFailure(code: "store", message: error.description)))
            }
            respond(.success(ReplyBody()))
        case .stop:
            say("stop requested by process \(client.peer.pid)")
            // Answered once the daemon has stopped, just before it exits.
            beginStop(status: 0, reply: (client, id))
        }
    }

    private func unknownTask(_ id: Int) -> RemoteFailure {
        RemoteFailure(code: "unknown-task", message: "no task \(id) in session \(paths.identifier)")
    }

    private func listing(_ ids: [Int]?) -> ReplyBody {
        var body = ReplyBody()
        body.sequence = state.lastSequence
        body.tasks = (ids ?? state.tasks.map(\.id)).compactMap { listedTask($0) }.map(info)
        return body
    }

    /// Task `id` as clients know it: nil when there is none, or it was removed.
    private func listedTask(_ id: Int) -> SessionState.Task? {
        guard let task = state.task(id), !task.removed else { return nil }
        return task
    }

    /// Runs `body` once the outcome of task `id` (an end or a pause) has been committed.
    private func whenSettled(_ id: Int, _ body: @escaping () -> Void) {
        taskWaiters[id, default: []].append(body)
    }

    private func pause(_ id: Int, _ done: @escaping (RemoteFailure?) -> Void) {
        guard let task = state.task(id), task.state == .queued || task.state == .running else { return done(nil) }
        guard let engine = engines[id] else {
            let progress = task.knownPath.flatMap { JournalProgress.read(partPath: WorkingFileNames.partial(of: $0)) } ?? (task.bytes, task.total)
            do { try commit([.event(event(id, .paused(bytes: progress.bytes, total: progress.total)), spec: nil, part: nil)]) } catch {
                return done(RemoteFailure(code: "store", message: error.description))
            }
            return done(nil)
        }
        switch engine.phase {
        case .finishing:
            whenSettled(id) { done(nil) }
        case .paused:
            // Held paused in this process after a resume that has not started yet.
            let progress = engine.task.currentProgress
            commitOrStop([.event(event(id, .paused(bytes: progress.bytesDone, total: progress.total)), spec: nil, part: nil)])
            done(nil)
        case .active:
            engine.intent = .pause
            whenSettled(id) { done(nil) }
            Task { [self] in
                try? await engine.task.pause()
                loop.execute { [self] in enginePaused(id, engine) }
            }
        }
    }

    private func enginePaused(_ id: Int, _ engine: Engine) {
        // Ended meanwhile (completed, failed, cancelled): that outcome settles the task instead.
        guard engines[id] === engine, engine.phase == .active, engine.intent == .pause else { return }
        let progress = engine.task.currentProgress
        guard progress.phase == .paused else { return }
        // Its journal is complete now: make sure the next daemon knows a directory task's file to read it from,
        // even when no progress tick has recorded the name yet.
        recordPartFileIfNamed(id, progress)
        engine.phase = .paused
        engine.intent = .none
        commitOrStop([.event(event(id, .paused(bytes: progress.bytesDone, total: progress.total)), spec: nil, part: nil)])
        taskSettled(id)
    }

    private func resume(_ id: Int, _ done: @escaping (RemoteFailure?) -> Void) {
        guard let task = state.task(id), task.state == .paused || task.state == .failed else { return done(nil) }
        do { try commit([.event(event(id, .resumed), spec: nil, part: nil)]) } catch {
            return done(RemoteFailure(code: "store", message: error.description))
        }
        done(nil)
    }

    private func cancel(_ id: Int, _ done: @escaping (RemoteFailure?) -> Void) {
        guard let task = state.task(id), task.state != .completed, task.state != .cancelled else { return done(nil) }
        if let engine = engines[id] {
            if engine.phase == .finishing { return whenSettled(id) { done(nil) } }
            engine.intent = .cancel
            whenSettled(id) { done(nil) }
            Task { [self] in
                await engine.task.cancel()
                loop.execute { [self] in cancelled(id, engine) }
            }
            return
        }
        guard !cancelling.contains(id) else { return whenSettled(id) { done(nil) } }
        cancelling.insert(id)
        whenSettled(id) { done(nil) }
        let paths = task.knownPath.map(WorkingFileNames.all(of:)) ?? []
        BlockingWork.start { [self] in
            for path in paths { _ = unlink(path) }
            loop.execute { [self] in
                cancelling.remove(id)
                if let task = state.task(id), task.state != .completed, task.state != .cancelled {
                    commitOrStop([.event(event(id, .cancelled), spec: nil, part: nil)])
                }
                taskSettled(id)
            }
        }
    }

    /// Whether an engine's byte count is the task's: a restarted daemon's engine counts nothing while it
    /// connects (a directory task reads its journal only once the server has named the file again); until
    /// then the bytes its `started` event recorded from the journal stand, rather than "running 0 B".
    static func engineHasCounted(_ progress: DownloadProgress) -> Bool {
        progress.bytesDone > 0 || progress.phase != .connecting
    }

    /// A task as `list` shows it.
    private func info(_ task: SessionState.Task) -> TaskInfo {
        let engine = engines[task.id]
        var state = task.state
        if state == .running && (engine == nil || engine?.phase == .paused) { state = .queued }
        var directory: String?
        if case .directory(let path) = task.spec.destination { directory = path }
        var info = TaskInfo(id: task.id, state: state, url: task.spec.url, path: task.knownPath, directory: directory,
                            bytes: task.bytes, total: task.total)
        switch task.state {
        case .completed:
            if let completion = task.completion {
                info.bytes = completion.bytes
                info.total = completion.bytes
                info.digest = completion.digest
            }
        case .failed:
            info.error = task.failure?.error
            info.errorClass = task.failure?.className
            info.exitCode = task.failure?.code
            fallthrough
        case .queued, .running, .paused:
            if let engine {
                let progress = engine.task.currentProgress
                if Self.engineHasCounted(progress) {
                    info.bytes = progress.bytesDone
                    info.total = progress.total ?? info.total
                }
                if engine.phase != .paused {
                    info.bytesPerSecond = Int64(progress.bytesPerSecond.rounded())
                    info.connections = progress.activeConnections
                }
                if info.path == nil, let destination = WorkingFileNames.destination(ofPartial: progress.partialPath) { info.path = destination }
            } else if let path = task.knownPath, let journal = JournalProgress.read(partPath: WorkingFileNames.partial(of: path)) {
                info.bytes = journal.bytes
                info.total = journal.total
            }
        case .cancelled:
            info.bytes = 0
        }
        return info
    }
}
