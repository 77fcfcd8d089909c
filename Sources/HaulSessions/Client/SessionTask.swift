import Haul
import HaulIO
import Synchronization

/// A session a task refers to without keeping it alive (the session keeps its tasks).
final class WeakSession: @unchecked Sendable {
    // @unchecked Sendable: a weak reference set once; reading one is thread-safe.
    weak var value: HaulSession?
    init(_ value: HaulSession) { self.value = value }
}

/// What a completed task produced.
public struct SessionTaskResult: Sendable, Hashable {
    public var path: String
    public var bytes: Int64
    /// `ALGO=HEX` of the file.
    public var digest: String
}

/// Why a task did not complete, as ``SessionTask/value`` threw it before session errors were one type.
///
/// ``SessionTask/value`` throws ``SessionError`` now: ``SessionError/taskFailed(_:)`` holds the engine's
/// `HaulError`, ``SessionError/taskCancelled`` a cancel. ``init(_:)`` turns one into this shape for code
/// written against it.
@available(*, deprecated, message: "SessionTask.value throws SessionError: match .taskFailed(let failure), .taskCancelled, error.httpStatus")
public enum SessionTaskError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The download failed: the engine's message, its class and the exit code `haul` gives it.
    case failed(message: String, className: String, exitCode: Int32)
    case cancelled
    /// The session could not tell (it was closed, or the daemon could not be reached).
    case session(SessionError)

    /// The old shape of `error`.
    public init(_ error: SessionError) {
        switch error {
        case .taskFailed(let failure):
            self = .failed(message: failure.message, className: failure.failureClass.rawValue, exitCode: failure.exitCode)
        case .taskCancelled: self = .cancelled
        default: self = .session(error)
        }
    }

    public var description: String {
        switch self {
        case .failed(let message, _, _): message
        case .cancelled: "cancelled"
        case .session(let error): error.description
        }
    }
}

/// One task of a ``HaulSession``, shaped like Haul's `DownloadTask`: ``progress``, ``pause()``, ``resume()``,
/// ``cancel()`` and ``value``. The download itself runs in the session's daemon.
public final class SessionTask: Sendable {
    /// The task's id, stable for the life of the session.
    public let id: Int
    private let session: WeakSession
    private let published: Mutex<Published>
    /// Progress and the outcome, delivered the way Haul's `DownloadTask` delivers them (the same type).
    private let broadcast: ProgressBroadcaster<DownloadProgress, Result<SessionTaskResult, SessionError>>

    private struct Published {
        var spec: TaskSpec?
        var info: TaskInfo
    }

    init(id: Int, spec: TaskSpec?, info: TaskInfo, session: HaulSession) {
        self.id = id
        self.session = WeakSession(session)
        published = Mutex(Published(spec: spec, info: info))
        broadcast = ProgressBroadcaster(Self.progress(for: info), outcome: Self.outcome(for: info))
    }

    /// The task as the daemon last described it: state, path, bytes, how it ended.
    public var info: TaskInfo { published.withLock { $0.info } }

    /// The spec, when this process added the task (the daemon does not send specs back: they may hold
    /// credentials).
    public var spec: TaskSpec? { published.withLock { $0.spec } }

    public var state: TaskState { info.state }

    /// The latest progress. A queued task reports `.connecting`; the segments and ranges are not sent
    /// over the session socket and stay empty.
    public var currentProgress: DownloadProgress { broadcast.latest }

    /// Progress snapshots until the task ends (the last one completed, failed or cancelled); a consumer
    /// that falls behind gets the newest. Each call is its own subscription.
    public var progress: AsyncStream<DownloadProgress> { broadcast.stream }

    /// The result once the task has ended: the finished file, or why not — ``SessionError/taskFailed(_:)``
    /// with the engine's `HaulError` (`error.httpStatus == 404`), ``SessionError/taskCancelled``, or a session
    /// error when this session was closed. Keeps waiting across daemon restarts (the session reconnects); a
    /// pause is not an end.
    public var value: SessionTaskResult {
        get async throws(SessionError) {
            let result = await broadcast.outcome()
            return try result.get()
        }
    }

    /// Pauses the download; returns once its journal is durable and the pause is in the session's log.
    public func pause() async throws(SessionError) { try await change(.pause(tasks: [id])) }

    /// Queues a paused (or failed) task again; it continues from its journal.
    public func resume() async throws(SessionError) { try await change(.resume(tasks: [id])) }

    /// Stops the download and removes its partial file and journal; ``value`` then throws
    /// ``SessionError/taskCancelled``.
    public func cancel() async throws(SessionError) { try await change(.cancel(tasks: [id])) }

    private func change(_ request: SessionRequest) async throws(SessionError) {
        guard let session = session.value else { throw .disconnected }
        let body = try await session.send(request)
        if let info = body.tasks?.first(where: { $0.id == id }) { update(info) }
    }

    // MARK: Updates from the session

    /// A snapshot from the daemon.
    func update(_ info: TaskInfo) {
        publish { published in
            published.info = info
            return Self.progress(for: info)
        }
    }

    /// An event about this task, newer than the latest snapshot: folded as the daemon folds it.
    func apply(_ event: SessionEvent) {
        publish { published in
            published.info = published.info.applying(event)
            return Self.progress(for: published.info)
        }
    }

    /// A progress push.
    func apply(_ report: TaskProgress) {
        publish { published in
            guard !published.info.state.hasEnded else { return nil }
            published.info.state = .running
            published.info.bytes = report.bytes
            published.info.total = report.total
            published.info.bytesPerSecond = report.bytesPerSecond
            published.info.connections = report.connections
            if published.info.path == nil, let partial = report.partialPath, let destination = WorkingFileNames.destination(ofPartial: partial) {
                published.info.path = destination
            }
            var progress = Self.progress(for: published.info)
            switch report.phase {
            case "downloading": progress.phase = .downloading
            case "finishing": progress.phase = .finishing
            default: progress.phase = .connecting
            }
            return progress
        }
    }

    /// The session was closed (or gave up reconnecting): waiters learn that no answer will come.
    func sessionClosed() {
        broadcast.end(.failure(.disconnected), final: broadcast.latest)
    }

    /// Applies `change` to the task's info and publishes the progress it returns (nil: nothing to publish);
    /// the task ends once the info says it has. Publishing happens under the info's lock, so that two
    /// updates racing (a reply and a push) reach subscribers in the order they changed the info.
    private func publish(_ change: (inout Published) -> DownloadProgress?) {
        published.withLock { published in
            guard let progress = change(&published) else { return }
            if let outcome = Self.outcome(for: published.info) {
                // The first end wins; later snapshots of an ended task still update `currentProgress`.
                if !broadcast.end(outcome, final: progress) { broadcast.publish(progress) }
            } else {
                broadcast.publish(progress)
            }
        }
    }

    static func outcome(for info: TaskInfo) -> Result<SessionTaskResult, SessionError>? {
        switch info.state {
        case .completed:
            return .success(SessionTaskResult(path: info.path ?? "", bytes: info.bytes, digest: info.digest ?? ""))
        case .failed:
            return .failure(.taskFailed(info.failure ?? .legacy(message: "failed", className: "unexpected", code: 1)))
        case .cancelled:
            return .failure(.taskCancelled)
        default:
            return nil
        }
    }

    static func progress(for info: TaskInfo) -> DownloadProgress {
        let phase: DownloadProgress.Phase
        switch info.state {
        case .queued: phase = .connecting
        case .running: phase = .downloading
        case .paused: phase = .paused
        case .completed: phase = .completed
        case .failed: phase = .failed
        case .cancelled: phase = .cancelled
        }
        let perSecond = Double(info.bytesPerSecond)
        return DownloadProgress(phase: phase, bytesDone: info.bytes, total: info.total, bytesPerSecond: perSecond,
                                estimatedTimeRemaining: DownloadProgress.estimatedTimeRemaining(done: info.bytes, total: info.total, bytesPerSecond: perSecond), activeConnections: info.connections, completedRanges: [],
                                segments: [], elapsed: .zero, partialPath: info.path.map { info.state.hasEnded ? $0 : WorkingFileNames.partial(of: $0) } ?? "")
    }
}
