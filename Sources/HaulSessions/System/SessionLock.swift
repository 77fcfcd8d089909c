import Glibc
import Haul

/// The exclusive lock on a session directory that makes a process its one daemon: `flock(LOCK_EX)` on the
/// directory itself, held for the life of the returned value (the kernel drops it when the process dies,
/// however it dies). The descriptor is close-on-exec, so hooks and other children never inherit it.
public final class SessionLock: Sendable {
    public let paths: SessionPaths
    private let fileDescriptor: Int32

    private init(paths: SessionPaths, fileDescriptor: Int32) {
        self.paths = paths
        self.fileDescriptor = fileDescriptor
    }

    deinit {
        _ = close(fileDescriptor)
    }

    /// Takes the lock without waiting; throws ``SessionError/daemonAlreadyRunning(path:pid:)`` naming the
    /// holder (from `daemon.pid`) when another process has it.
    public static func acquire(_ paths: SessionPaths) throws(SessionError) -> SessionLock {
        let fd = open(paths.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .io(path: paths.directory, SystemError(call: "open", errno: errno)) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            _ = close(fd)
            if code == EWOULDBLOCK { throw .daemonAlreadyRunning(path: paths.directory, pid: paths.recordedDaemonPID()) }
            throw .io(path: paths.directory, SystemError(call: "flock", errno: code))
        }
        return SessionLock(paths: paths, fileDescriptor: fd)
    }

    /// Whether some process holds the lock right now (a daemon runs), tested without keeping it.
    public static func isHeld(_ paths: SessionPaths) -> Bool {
        let fd = open(paths.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            _ = flock(fd, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }

    /// Writes `daemon.pid` (this process): to a temp file, then renamed over the old one.
    public func writePID() throws(SessionError) {
        let path = paths.pidFile
        let temporary = path + ".tmp"
        _ = unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: temporary, SystemError(call: "open", errno: errno)) }
        let text = Array("\(getpid())\n".utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        _ = close(fd)
        guard written == text.count else { throw .io(path: temporary, SystemError(call: "write", errno: errno)) }
        guard rename(temporary, path) == 0 else { throw .io(path: path, SystemError(call: "rename", errno: errno)) }
    }

    /// Removes `daemon.pid` if it still names this process (a clean exit).
    public func removePID() {
        if paths.recordedDaemonPID() == getpid() { _ = unlink(paths.pidFile) }
    }
}
