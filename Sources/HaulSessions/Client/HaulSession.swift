import Haul
import HaulIO
import Logging
import Synchronization

/// A background session, seen from a client: downloads handed to the session's daemon outlive this
/// process, and a later ``connect(_:configuration:logger:)`` with the same identifier — in this process or another,
/// after any crash — finds them again with what happened meanwhile.
///
/// ```swift
/// let session = try await HaulSession.connect("backups")         // starts the daemon when none runs
/// let task = try await session.add(DownloadRequest(url: "https://example.org/big.iso", destination: .file("/data/big.iso")))
/// // ... this process may exit here; the download goes on ...
///
/// let again = try await HaulSession.connect("backups")            // later, anywhere
/// for await event in again.events {                               // missed events first, then new ones
///     if case .completed(let path, _, let digest, _) = event.kind { print(path, digest) }
///     try await again.acknowledge(event)                           // delivered until acknowledged
/// }
/// ```
///
/// ``allTasks()`` gives every task of the session, each a ``SessionTask`` shaped like Haul's `DownloadTask`:
/// progress, pause, resume, cancel, and its result. When the connection is lost the session connects
/// again, starting a new daemon if the old one died (unless ``SessionConfiguration/reconnects`` is off).
///
/// Given a `Logger` (apple/swift-log), the session logs its side at `debug`: connecting to the daemon,
/// requests sent, events received, connections lost and made again; records carry `haul.session`.
public final class HaulSession: Sendable {
    public let paths: SessionPaths
    public let configuration: SessionConfiguration
    /// Where the session logs (a logger that drops everything unless ``connect(_:configuration:logger:)`` got one).
    public let logger: Logger
    /// The session identifier.
    public var identifier: String { paths.identifier }

    private let loop: EventLoop
    private let shared = Mutex(Shared())
    private let eventStream: AsyncStream<SessionEvent>
    private let eventContinuation: AsyncStream<SessionEvent>.Continuation

    private struct Shared {
        var connection: SessionConnection?
        /// A reconnection in progress, which requests wait for.
        var reconnection: Task<SessionConnection, any Error>?
        var tasks: [Int: SessionTask] = [:]
        /// The latest event whose effect on the tasks is known (from a snapshot or a push).
        var stateSequence: UInt64 = 0
        /// The latest event delivered to ``events``.
        var delivered: UInt64 = 0
        var closed = false
        /// The daemon's pid, as of the latest connect.
        var daemonPID: Int32?
    }

    private init(paths: SessionPaths, configuration: SessionConfiguration, loop: EventLoop, logger: Logger) {
        self.paths = paths
        self.configuration = configuration
        self.logger = logger
        self.loop = loop
        (eventStream, eventContinuation) = AsyncStream.makeStream(of: SessionEvent.self, bufferingPolicy: .unbounded)
    }

    deinit {
        eventContinuation.finish()
        shared.withLock { $0.connection }?.close()
        let loop = self.loop
        BlockingWork.start { loop.shutdown() }
    }

    /// Connects to the daemon of session `identifier` (starting one when none runs), re-attaches to all
    /// its tasks, and starts delivering the events the configured consumer has not acknowledged.
    ///
    /// `logger` receives the session's client-side records (the daemon's downloads run in the daemon); without
    /// one nothing is logged.
    public static func connect(_ identifier: String = SessionPaths.defaultIdentifier,
                               configuration: SessionConfiguration = SessionConfiguration(),
                               logger: Logger? = nil) async throws(SessionError) -> HaulSession {
        let paths = try SessionPaths(identifier: identifier, stateDirectory: configuration.stateDirectory)
        if let consumer = configuration.consumer, !SessionPaths.isValidName(consumer) { throw .invalidIdentifier(consumer) }
        let loop: EventLoop
        do { loop = try EventLoop(name: "haul-session-c") } catch { throw .io(path: paths.directory, error) }
        var logger = logger ?? Logger(label: "haul.session.disabled", factory: { _ in SwiftLogNoOpLogHandler() })
        logger[metadataKey: "haul.session"] = "\(paths.identifier)"
        let session = HaulSession(paths: paths, configuration: configuration, loop: loop, logger: logger)
        _ = try await session.establish()
        return session
    }

    /// The daemon's process id as of the latest (re)connection.
    public var daemonPID: Int32? { shared.withLock { $0.daemonPID } }

    /// Every task of the session, by id (the `getAllTasks` of `URLSession`).
    public func allTasks() -> [SessionTask] {
        shared.withLock { $0.tasks.values.sorted { $0.id < $1.id } }
    }

    /// Removes ended tasks (completed, failed, cancelled) from the session's list: they are no longer
    /// listed or waited for. A task not yet ended is refused (cancel it first).
    public func remove(_ ids: [Int]) async throws(SessionError) {
        _ = try await send(.remove(tasks: ids))
        shared.withLock { shared in for id in ids { shared.tasks[id] = nil } }
    }

    /// The task with id `id`, if the session has one.
    public func task(_ id: Int) -> SessionTask? {
        shared.withLock { $0.tasks[id] }
    }

    /// The session's events from the configured consumer's last acknowledged one, in order, each once per
    /// connected session object, then new ones as they happen. One consumer: every call returns the same
    /// sequence. Ends when the session is closed.
    public var events: AsyncStream<SessionEvent> { eventStream }

    /// Queues a download; returns once it is in the session's log. A relative destination is taken from this
    /// process's working directory, as `HaulClient` takes it.
    public func add(_ request: DownloadRequest, options: TaskOptions = TaskOptions(), hook: String? = nil) async throws(SessionError) -> SessionTask {
        try await add(TaskSpec(request, options: options, hook: hook))
    }

    /// Queues a download described by `spec`. Relative paths (the destination, a CA file or directory) are
    /// taken from this process's working directory, as a `DownloadRequest` run here takes them: the daemon
    /// gets them absolute.
    public func add(_ spec: TaskSpec) async throws(SessionError) -> SessionTask {
        let spec = spec.resolvingRelativePaths()
        // A stream or memory destination cannot travel to the daemon (the spec would arrive without a
        // destination): refused here with the daemon's reason.
        switch spec.destination {
        case .stream, .memory: throw .rejected(code: "bad-request", message: spec.problem() ?? "")
        case .file, .directory: break
        }
        let body = try await send(.add(spec))
        guard let info = body.task else { throw .protocolViolation("add answered without the task") }
        return shared.withLock { shared in
            if let existing = shared.tasks[info.id] { return existing }
            let task = SessionTask(id: info.id, spec: spec, info: info, session: self)
            shared.tasks[info.id] = task
            return task
        }
    }

    /// Records that the configured consumer has processed every event up to `event`: they are not
    /// delivered again to a later connection.
    public func acknowledge(_ event: SessionEvent) async throws(SessionError) {
        try await acknowledge(through: event.sequence)
    }

    public func acknowledge(through sequence: UInt64) async throws(SessionError) {
        guard let consumer = configuration.consumer else { return }
        _ = try await send(.acknowledge(consumer: consumer, sequence: sequence))
    }

    /// The session's events after `sequence` (not affected by acknowledgements).
    public func history(after sequence: UInt64 = 0) async throws(SessionError) -> [SessionEvent] {
        var events: [SessionEvent] = []
        var after = sequence
        while true {
            let body = try await send(.events(after: after, limit: SessionProtocol.maximumEventsPerReply))
            let batch = body.events ?? []
            events += batch
            guard body.more == true, let last = batch.last else { return events }
            after = last.sequence
        }
    }

    /// Stops the daemon cleanly (every running download checkpointed first) and returns once it has exited
    /// (the session directory's lock is free). The tasks stay in the log; the next connection starts a
    /// daemon that continues them. Until then this session does not reconnect.
    public func stopDaemon() async throws(SessionError) {
        let connection = try await currentConnection()
        shared.withLock { $0.connection = nil }
        _ = try await connection.request(.stop)
        connection.close()
        let paths = self.paths
        let start = MonotonicInstant.now()
        while await BlockingWork.run({ SessionLock.isHeld(paths) }) {
            guard MonotonicInstant.now().nanoseconds(since: start) < 30_000_000_000 else {
                throw .daemonUnavailable("the daemon answered the stop but still holds \(paths.directory) after 30 s")
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Disconnects. Downloads go on in the daemon; tasks' results pending here end with
    /// ``SessionError/disconnected``.
    public func close() async {
        let (connection, tasks, reconnection) = shared.withLock { shared in
            shared.closed = true
            defer { shared.connection = nil; shared.reconnection = nil }
            return (shared.connection, Array(shared.tasks.values), shared.reconnection)
        }
        reconnection?.cancel()
        connection?.close()
        eventContinuation.finish()
        for task in tasks { task.sessionClosed() }
    }

    // MARK: Requests

    func send(_ request: SessionRequest) async throws(SessionError) -> ReplyBody {
        var attempts = 0
        while true {
            let connection = try await currentConnection()
            logger.debug("sending a request to the session daemon", metadata: ["haul.operation": "\(request.operation)"])
            do {
                return try await connection.request(request)
            } catch {
                logger.debug("the session daemon's reply failed", metadata: [
                    "haul.operation": "\(request.operation)", "haul.reason": "\(error)",
                ])
                // A lost connection is made again for requests that are safe to repeat; an `add` that
                // may have been recorded is not repeated (its task would be queued twice).
                guard error == .disconnected, configuration.reconnects, attempts < 3 else { throw error }
                if case .add = request { throw error }
                attempts += 1
                connectionLost(connection)
            }
        }
    }

    private func currentConnection() async throws(SessionError) -> SessionConnection {
        let (connection, pending, closed) = shared.withLock { ($0.connection, $0.reconnection, $0.closed) }
        if closed { throw .disconnected }
        if let connection { return connection }
        let task = pending ?? startReconnection()
        do {
            return try await task.value
        } catch let error as SessionError {
            throw error
        } catch {
            throw .disconnected
        }
    }

    @discardableResult
    private func startReconnection() -> Task<SessionConnection, any Error> {
        shared.withLock { shared in
            if let existing = shared.reconnection { return existing }
            let task = Task<SessionConnection, any Error> { [self] in
                defer { self.shared.withLock { $0.reconnection = nil } }
                var delay = Duration.milliseconds(100)
                while true {
                    do throws(SessionError) {
                        return try await establish()
                    } catch {
                        logger.debug("reconnecting to the session daemon failed", metadata: [
                            "haul.reason": "\(error)", "haul.delay": "\(delay)",
                        ])
                        if Task.isCancelled || self.shared.withLock({ $0.closed }) { throw SessionError.disconnected }
                        switch error {
                        case .refused, .incompatibleDaemon, .corruptState, .unsupportedFormat, .invalidIdentifier, .unusableDirectory, .noStateDirectory:
                            throw error
                        default:
                            guard configuration.reconnects else { throw error }
                        }
                    }
                    try await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(2))
                }
            }
            shared.reconnection = task
            return task
        }
    }

    private func connectionLost(_ connection: SessionConnection) {
        let (current, reconnect) = shared.withLock { shared -> (Bool, Bool) in
            guard shared.connection === connection else { return (false, false) }
            shared.connection = nil
            return (true, !shared.closed && configuration.reconnects)
        }
        guard current else { return }
        logger.debug("lost the connection to the session daemon", metadata: ["haul.reconnects": "\(reconnect)"])
        if reconnect {
            startReconnection()
        } else {
            for task in allTasks() { task.sessionClosed() }
        }
    }

    /// Connects (starting a daemon if needed), subscribes, and takes the daemon's view of every task.
    private func establish() async throws(SessionError) -> SessionConnection {
        let holder = ConnectionHolder()
        let (connection, hello) = try await DaemonLauncher.connect(
            paths, configuration: configuration, loop: loop,
            onPush: { [weak self] message in self?.received(message) },
            onClose: { [weak self] _ in
                guard let self, let connection = holder.connection else { return }
                self.connectionLost(connection)
            })
        holder.connection = connection
        // A consumer resumes from its acknowledgement; otherwise from the last event delivered here (or
        // where the configuration says, the first time).
        let after: UInt64? = configuration.consumer != nil ? nil
            : shared.withLock { $0.delivered > 0 ? $0.delivered : nil } ?? configuration.eventsAfter
        _ = try await connection.request(
            .subscribe(after: after, consumer: configuration.consumer, progress: configuration.receivesProgress),
            onLoop: { [weak self] body in self?.adopt(body) })
        let closed = shared.withLock { shared in
            if !shared.closed {
                shared.connection = connection
                shared.daemonPID = hello.pid
            }
            return shared.closed
        }
        if closed {
            connection.close()
            throw .disconnected
        }
        logger.debug("connected to the session daemon", metadata: [
            "haul.daemon.pid": "\(hello.pid.map { "\($0)" } ?? "-")", "haul.events.after": "\(after.map { "\($0)" } ?? "-")",
        ])
        return connection
    }

    /// The daemon's snapshot of every task (the `subscribe` reply), taken before any push that follows it.
    private func adopt(_ body: ReplyBody) {
        let infos = body.tasks ?? []
        let updates = shared.withLock { shared -> [(SessionTask, TaskInfo)] in
            shared.stateSequence = body.sequence ?? shared.stateSequence
            // Pushes follow for events after `after`: whatever came before it is not for this consumer.
            if let after = body.after, after > shared.delivered { shared.delivered = after }
            return infos.map { info in
                let task = shared.tasks[info.id] ?? SessionTask(id: info.id, spec: nil, info: info, session: self)
                shared.tasks[info.id] = task
                return (task, info)
            }
        }
        for (task, info) in updates { task.update(info) }
    }

    private func received(_ message: DaemonMessage) {
        switch message {
        case .event(let event):
            let (deliver, task, affectsState) = shared.withLock { shared -> (Bool, SessionTask?, Bool) in
                let deliver = event.sequence > shared.delivered
                if deliver { shared.delivered = event.sequence }
                let affectsState = event.sequence > shared.stateSequence
                if affectsState { shared.stateSequence = event.sequence }
                if case .removed = event.kind { shared.tasks[event.task] = nil }
                var task = shared.tasks[event.task]
                if task == nil, case .added(let url, let path, let directory) = event.kind {
                    let info = TaskInfo(id: event.task, state: .queued, url: url, path: path, directory: directory, bytes: 0, total: nil)
                    task = SessionTask(id: event.task, spec: nil, info: info, session: self)
                    shared.tasks[event.task] = task
                }
                return (deliver, task, affectsState)
            }
            logger.debug("session event", metadata: [
                "haul.event.sequence": "\(event.sequence)", "haul.event.type": "\(event.type)", "haul.task": "\(event.task)",
            ])
            if affectsState { task?.apply(event) }
            if deliver { eventContinuation.yield(event) }
        case .progress(let reports):
            let tasks = shared.withLock { shared in reports.map { shared.tasks[$0.id] } }
            for (report, task) in zip(reports, tasks) { task?.apply(report) }
        case .reply:
            break
        }
    }
}

private final class ConnectionHolder: @unchecked Sendable {
    // @unchecked Sendable: set once, before the connection can report a close that reads it.
    var connection: SessionConnection?
}
