import Glibc
import Haul
import HaulJournal

/// How a ``SessionDaemon`` runs.
public struct DaemonConfiguration: Sendable {
    /// The session it owns.
    public var paths: SessionPaths
    /// Changes to the session's settings, stored before running; nil keeps the stored ones (the defaults
    /// for a new session). Stored settings apply to every later daemon of the session, however it is started.
    public var updateSettings: (@Sendable (inout SessionSettings) -> Void)?
    /// Stop after this long with no client connected, nothing queued or running and no hook running; nil
    /// runs until stopped. Daemons that clients start in the background use 60 seconds: nothing is lost by
    /// stopping, since the next client starts one again.
    public var idleExit: Duration?
    /// Installs the program's stop signals, once, as the daemon starts serving: it is given a function that
    /// stops the daemon cleanly (every download paused, as a `stop` request does), to call with a line for
    /// the daemon's log. Signals are the program's, never the library's: `haul daemon` installs SIGINT,
    /// SIGTERM and SIGHUP here; nil (the default) leaves signals alone.
    ///
    /// ```swift
    /// configuration.installStopHandler = { stop in
    ///     try installMySignalHandler { stop("stop signal: pausing every download") }
    /// }
    /// ```
    public var installStopHandler: (@Sendable (_ stop: @escaping @Sendable (_ reason: String) -> Void) throws -> Void)?

    /// Whether the daemon handled SIGINT and SIGTERM itself. It no longer does: signals are the program's
    /// (``installStopHandler``). Setting this has no effect.
    @available(*, deprecated, message: "signals are the program's: set installStopHandler (haul daemon installs its own)")
    public var handlesSignals: Bool {
        get { installStopHandler != nil }
        set {}
    }
    /// How often running tasks' progress is pushed to the clients that asked for it.
    public var progressInterval: Duration = .milliseconds(250)
    /// Where the daemon says what it does (start, recovery, refused clients, errors): one line each.
    public var log: @Sendable (String) -> Void = DaemonConfiguration.standardError

    /// The protocol version the daemon speaks: ``SessionProtocol/version``, another only in tests (a daemon
    /// of another release, to be refused).
    var protocolVersion = SessionProtocol.version

    public init(paths: SessionPaths) {
        self.paths = paths
    }

    /// Writes `haul daemon: MESSAGE` to stderr.
    public static let standardError: @Sendable (String) -> Void = { message in
        var text = "haul daemon: " + message + "\n"
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 { if errno == EINTR { continue }; return }
                offset += count
            }
        }
    }
}

enum WallClock {
    /// Milliseconds since the Unix epoch.
    static func milliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}

/// What a task's journal (`NAME.part.haul`) says: bytes durably written and the file's length.
enum JournalProgress {
    static func read(partPath: String) -> (bytes: Int64, total: Int64?)? {
        guard let bytes = try? SmallFile.readBytes(partPath + ".haul", limit: 256 << 20),
              let state = try? JournalCodec.decodeFile(bytes) else { return nil }
        return (state.durable.count, state.totalLength)
    }
}
