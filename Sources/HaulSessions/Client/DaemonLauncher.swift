import Glibc
import Haul
import HaulIO

/// How a client finds (or starts) its session's daemon.
public struct SessionConfiguration: Sendable {
    /// The state directory; nil for the default (`HAUL_STATE_DIR`, `$XDG_STATE_HOME/haul`, `~/.local/state/haul`).
    public var stateDirectory: String?
    /// The path of the `haul` executable that runs the daemon (`haul daemon --session ID --detach`) when none
    /// answers; nil for `$HAUL_EXECUTABLE`, else `haul` on `PATH` (``resolvedDaemonExecutable``).
    ///
    /// It must be a `haul` of this library's protocol version (``SessionProtocol/version``; the same release
    /// is the sure way): a daemon of another version is refused with
    /// ``SessionError/incompatibleDaemon(_:)``, naming both versions and the daemon's executable.
    public var daemonExecutable: String?
    /// Whether to start a daemon when none answers (otherwise that is an error).
    public var startsDaemon: Bool = true
    /// Whether a lost connection is made again (starting a daemon again when it died), so that tasks'
    /// results and events keep coming.
    public var reconnects: Bool = true
    /// How long to wait for a daemon to answer after starting one.
    public var startTimeout: Duration = .seconds(20)
    /// Whose acknowledgements ``HaulSession/events`` follows: events after this consumer's last
    /// acknowledged one are delivered, on every connect, until acknowledged. With nil, ``HaulSession/events``
    /// starts after ``eventsAfter`` (or at the newest event) and acknowledgements are not used.
    public var consumer: String? = "default"
    /// Without a ``consumer``: deliver events after this sequence number (nil: only new ones).
    public var eventsAfter: UInt64?
    /// Whether to receive the running tasks' progress (``SessionTask/progress``).
    public var receivesProgress: Bool = true

    public init() {}

    /// The executable daemons are started with: ``daemonExecutable``, else `$HAUL_EXECUTABLE`, else the
    /// first `haul` on `PATH`; nil when there is none.
    public var resolvedDaemonExecutable: String? { daemonExecutable ?? DaemonLauncher.defaultExecutable() }

    /// The running program's own executable (`/proc/self/exe`): what a `haul` binary passes as
    /// ``daemonExecutable``.
    public static func currentExecutable() -> String? { ChildProcesses.currentExecutable() }
}

enum DaemonLauncher {
    /// A connection to the daemon of `paths`, starting one (in the background, detached) when none answers,
    /// and waiting for it up to `configuration.startTimeout`.
    static func connect(_ paths: SessionPaths, configuration: SessionConfiguration, loop: EventLoop,
                        onPush: @escaping @Sendable (DaemonMessage) -> Void,
                        onClose: @escaping @Sendable (SessionError) -> Void) async throws(SessionError) -> (SessionConnection, ReplyBody) {
        let start = MonotonicInstant.now()
        let executable = configuration.resolvedDaemonExecutable
        var lastSpawn: MonotonicInstant?
        var lastError = SessionError.daemonUnavailable("no daemon answered")
        while true {
            do {
                return try await SessionConnection.open(path: paths.socket, executable: executable, loop: loop, onPush: onPush, onClose: onClose)
            } catch {
                switch error {
                case .daemonUnavailable, .disconnected, .stopping: lastError = error
                default: throw error
                }
            }
            guard configuration.startsDaemon else { throw lastError }
            let now = MonotonicInstant.now()
            if now.nanoseconds(since: start) > UInt64(configuration.startTimeout.milliseconds) * 1_000_000 {
                let lastLine = await BlockingWork.run {
                    SmallFile.read(paths.daemonLog)?.split(separator: "\n").last.map(String.init)
                }
                let log = lastLine.map { ": daemon.log says: \($0)" } ?? ""
                throw .daemonUnavailable("no daemon answered at \(paths.socket) within \(configuration.startTimeout.milliseconds / 1000) s\(log)")
            }
            // A daemon that is starting (or stopping) holds the lock: give it time rather than start another,
            // which would only find the lock taken.
            let sinceSpawn = lastSpawn.map { now.nanoseconds(since: $0) } ?? UInt64.max
            var mayStart = sinceSpawn > 3_000_000_000
            if mayStart, lastSpawn != nil {
                mayStart = await !BlockingWork.run { SessionLock.isHeld(paths) }
            }
            if mayStart {
                try await spawn(paths, configuration: configuration)
                lastSpawn = MonotonicInstant.now()
            }
            try? await Task.sleep(for: .milliseconds(25))
        }
    }

    /// Runs `haul daemon --session ID --state-dir DIR --detach`, which starts the daemon in a new session
    /// (no terminal, output to `daemon.log`) and exits at once.
    static func spawn(_ paths: SessionPaths, configuration: SessionConfiguration) async throws(SessionError) {
        guard let executable = configuration.resolvedDaemonExecutable else {
            throw .daemonUnavailable("no haul executable to start a daemon with (set HAUL_EXECUTABLE or put haul on PATH)")
        }
        let arguments = [executable, "daemon", "--session", paths.identifier, "--state-dir", paths.stateDirectory, "--detach"]
        let result: Result<Void, SessionError> = await BlockingWork.run {
            do throws(SessionError) {
                try paths.prepareDirectory()
                let pid: pid_t
                do {
                    pid = try ChildProcesses.spawn(arguments, outputPath: paths.daemonLog, newSession: true)
                } catch {
                    throw .daemonUnavailable("cannot start \(executable): \(error)")
                }
                // `--detach` starts the daemon and exits at once; reaping it leaves no zombie behind.
                _ = ChildProcesses.wait(for: pid)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// `$HAUL_EXECUTABLE`, else the first `haul` on `PATH`.
    static func defaultExecutable() -> String? {
        if let explicit = getenv("HAUL_EXECUTABLE").map({ String(cString: $0) }), !explicit.isEmpty { return explicit }
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = String(directory) + "/haul"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }
}
