import Glibc
import Haul
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

    /// A download the engine is running (or holds paused) for a task; its phase and the client's intent are
    /// the scheduler's (``SessionScheduler/Slot``).
    final class Engine: Sendable {
        let task: DownloadTask
        init(task: DownloadTask) { self.task = task }
    }

    var state: SessionState
    /// The decisions: which task starts, what an outcome does, when a stop may finish.
    var scheduler = SessionScheduler()
    var engines: [Int: Engine] = [:]
    var clients: [Int: DaemonConnection] = [:]
    var nextClientID = 1
    /// The listening socket (closed when the daemon lets go of it) and its registration with the loop.
    final class Listener {
        let socket: OwnedFileDescriptor
        var registration: FileDescriptorRegistration?
        init(_ socket: consuming OwnedFileDescriptor) { self.socket = socket }
    }
    var listener: Listener?
    var profiles: [TaskOptions: HaulClient] = [:]
    var hooksRunning = 0
    /// Set once a stop has begun: the exit status, the stop requests to answer, the pauses still running.
    var stopping: (status: Int32, replies: [(DaemonConnection, Int64)], pausesLeft: Int)?
    var finished: CheckedContinuation<Int32, Never>?
    var idleSince = MonotonicInstant.now()
    /// Called when a task's outcome (end, pause) has been committed.
    var taskWaiters: [Int: [() -> Void]] = [:]
    /// Clients whose pending lines are being handled (a reply can lead back into handling them).
    var processing: Set<Int> = []

    private init(configuration: DaemonConfiguration, lock: SessionLock, log: SessionLogFile, state: SessionState, loop: EventLoop) {
        self.configuration = configuration
        paths = configuration.paths
        self.lock = lock
        store = log
        self.state = state
        self.loop = loop
    }

    func say(_ message: String) { configuration.log("session \(paths.identifier): " + message) }

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
    /// destination (``SessionScheduler/completedBeforeRestart(_:destination:partialExists:)``) is recorded as
    /// completed now, never fetched again.
    private func recoverCompletions() throws(SessionError) {
        for task in state.tasks where SessionScheduler.mayHaveCompletedBeforeRestart(task) {
            guard let part = task.part else { continue }
            let destination = PathStatus.of(part.path).map {
                SessionScheduler.FileFacts(isRegularFile: $0.isRegularFile, device: $0.device, inode: $0.inode, size: $0.size)
            }
            let partialExists = PathStatus.of(WorkingFileNames.partial(of: part.path)) != nil
            guard SessionScheduler.completedBeforeRestart(task, destination: destination, partialExists: partialExists),
                  let size = destination?.size else { continue }
            let digest = Self.digest(of: part.path, checksum: task.spec.checksum)
            try commit([.event(event(task.id, .completed(path: part.path, bytes: size, digest: digest, recovered: true)),
                               spec: nil, part: nil)])
            say("task \(task.id): found its finished file \(part.path); recorded the completion")
        }
    }

    static func digest(of path: String, checksum: Checksum?) -> String {
        // The engine verified a given checksum before the rename: the file has it.
        if let checksum { return checksum.description }
        do { return "sha256=" + (try FileDigest.hex(of: path, algorithm: .sha256)) } catch { return "sha256=unknown" }
    }

    func event(_ task: Int, _ kind: SessionEvent.Kind) -> SessionEvent {
        SessionEvent(sequence: state.lastSequence + 1, time: WallClock.milliseconds(), task: task, kind: kind)
    }

    /// Appends records durably, then makes them the state and pushes their events to subscribers.
    func commit(_ records: [LogRecord]) throws(SessionError) {
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
    func commitOrStop(_ records: [LogRecord]) -> Bool {
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
        if let install = configuration.installStopHandler {
            do {
                try install { [self] reason in
                    loop.execute { [self] in
                        say(reason)
                        beginStop(status: 0)
                    }
                }
            } catch {
                say("cannot install the stop handler: \(error)")
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

    // MARK: Stopping

    /// Stops taking requests, pauses every running download (each writes its journal), waits for
    /// completions being recorded, answers the stop requests, and ends ``run(_:)``.
    func beginStop(status: Int32, reply: (DaemonConnection, Int64)? = nil) {
        if stopping != nil {
            if let reply { stopping!.replies.append(reply) }
            return continueStop()
        }
        stopping = (status, reply.map { [$0] } ?? [], 0)
        if let registration = listener?.registration { loop.deregister(registration) }
        if listener != nil {
            listener = nil  // the last reference to it: closes the socket
            do { try OutputFile.remove(paths.socket) } catch { say("cannot remove the socket: \(error)") }
        }
        for id in scheduler.beginStop() {
            guard let engine = engines[id] else { continue }
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

    func continueStop() {
        guard let stop = stopping, scheduler.stopMayFinish(pausesLeft: stop.pausesLeft), let finished else { return }
        self.finished = nil
        // Whatever the engines report from now on is not recorded: the paused downloads end with
        // `clientShutDown` when their clients shut down after this, and stay resumable as the log says.
        engines = [:]
        for (client, id) in stop.replies {
            var body = ReplyBody()
            body.sequence = state.lastSequence
            _ = client.send(ProtocolCodec.encode(.reply(id: id, .success(body))), loop: loop)
        }
        for client in clients.values { client.close(loop: loop) }
        clients = [:]
        finished.resume(returning: stop.status)
    }
}
