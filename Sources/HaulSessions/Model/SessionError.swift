import Haul

/// Why a session operation failed, or why a queued task did not complete: the one error type of
/// HaulSessions. Each case names what a person needs to act on it.
///
/// A task's own failure is ``taskFailed(_:)``, holding the engine's `HaulError` as a direct download would
/// have thrown it; the shortcuts match it the same way:
///
/// ```swift
/// do {
///     let result = try await task.value
/// } catch where error.httpStatus == 404 {
///     // the server has no such file
/// } catch where error.isCancelled {
///     // cancelled by a client
/// } catch where error.haulError?.reason == .outputClosed { ... }
/// ```
public enum SessionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A session identifier must be 1–64 characters of `A-Z a-z 0-9 . _ -`, not starting with `.`.
    case invalidIdentifier(String)
    /// No state directory: neither `HAUL_STATE_DIR`, `XDG_STATE_HOME` nor `HOME` is set.
    case noStateDirectory
    /// The session directory cannot be used (cannot be created, belongs to another user, others can write it).
    case unusableDirectory(path: String, reason: String)
    /// The session's state on disk is damaged: the log is reported, never partly trusted.
    case corruptState(path: String, offset: Int, reason: String)
    /// The state was written by a newer Haul (or is not a session log at all).
    case unsupportedFormat(path: String, reason: String)
    /// A system call on a session file failed.
    case io(path: String, SystemError)
    /// Another daemon owns the session (it holds the lock on the session directory).
    case daemonAlreadyRunning(path: String, pid: Int32?)
    /// No daemon could be reached or started.
    case daemonUnavailable(String)
    /// The daemon refused this client (another user), or the peer at the socket is not the session's daemon.
    case refused(String)
    /// The peer sent something that is not the protocol.
    case protocolViolation(String)
    /// The session's daemon speaks another protocol version than this library (a `haul` executable of
    /// another release): both versions and the daemon's executable, to act on. Not retried.
    case incompatibleDaemon(DaemonVersionMismatch)
    /// The daemon answered the request with an error (`code` as in `docs/sessions.md`).
    case rejected(code: String, message: String)
    /// The connection to the daemon ended before an answer came.
    case disconnected
    /// The daemon is stopping and takes no more requests.
    case stopping
    /// The queued task failed: the engine's error, its class and the exit code `haul` gives it.
    case taskFailed(TaskFailure)
    /// The queued task was cancelled by a client; its partial file and journal are gone.
    case taskCancelled

    /// The failure of a queued task (``taskFailed(_:)``), else nil.
    public var taskFailure: TaskFailure? {
        if case .taskFailed(let failure) = self { return failure }
        return nil
    }

    /// The engine's error of a failed task (``TaskFailure/error``), to match its `reason` as for a direct
    /// download; nil for every other error.
    public var haulError: HaulError? { taskFailure?.error }

    /// The HTTP status of a task the server refused (`HaulError.httpStatus`), else nil.
    public var httpStatus: Int? { haulError?.httpStatus }

    /// Whether the task was cancelled (``taskCancelled``).
    public var isCancelled: Bool { self == .taskCancelled }

    public var description: String {
        switch self {
        case .invalidIdentifier(let text):
            "invalid session identifier \"\(text)\": use 1-64 characters from A-Z a-z 0-9 . _ - (not starting with .)"
        case .noStateDirectory: "no state directory: set HAUL_STATE_DIR, XDG_STATE_HOME or HOME"
        case .unusableDirectory(let path, let reason): "\(path): \(reason)"
        case .corruptState(let path, let offset, let reason):
            "\(path) is damaged at byte \(offset): \(reason); the session is not used (move the file away to start a new one)"
        case .unsupportedFormat(let path, let reason): "\(path): \(reason)"
        case .io(let path, let error): "\(path): \(error)"
        case .daemonAlreadyRunning(let path, let pid):
            "a daemon already runs session \(path)" + (pid.map { " (process \($0))" } ?? "")
        case .daemonUnavailable(let reason): "cannot reach the session daemon: \(reason)"
        case .refused(let reason): "refused: \(reason)"
        case .protocolViolation(let reason): "protocol error: \(reason)"
        case .incompatibleDaemon(let mismatch): "incompatible session daemon: \(mismatch)"
        case .rejected(_, let message): message
        case .disconnected: "the connection to the session daemon was lost"
        case .stopping: "the session daemon is stopping"
        case .taskFailed(let failure): failure.message
        case .taskCancelled: "cancelled"
        }
    }
}
