import Glibc
import Haul
import HaulIO
import SystemPackage

/// The exclusive lock on a session directory that makes a process its one daemon: `flock(LOCK_EX)` on the
/// directory itself, held for the life of the returned value (the kernel drops it when the process dies,
/// however it dies). The descriptor is close-on-exec, so hooks and other children never inherit it.
public final class SessionLock: Sendable {
    public let paths: SessionPaths
    /// The directory, open while the lock is held; closing it (with this object) releases the lock.
    private let directory: OwnedFileDescriptor

    private init(paths: SessionPaths, directory: consuming OwnedFileDescriptor) {
        self.paths = paths
        self.directory = directory
    }

    /// The session directory, opened for `flock`.
    private static func openDirectory(_ paths: SessionPaths) throws(SystemError) -> OwnedFileDescriptor {
        try FileDescriptor.openingSessionFile(paths.directory, .readOnly, options: .directory)
    }

    /// `flock(operation | LOCK_NB)` on `directory`: true when taken, false when another process holds a
    /// conflicting lock.
    private static func tryLock(_ directory: borrowing OwnedFileDescriptor, _ operation: Int32) throws(SystemError) -> Bool {
        switch try syscall("flock", .nonBlocking, { flock(directory.descriptor.rawValue, operation | LOCK_NB) }) {
        case .processed: true
        case .wouldBlock: false
        }
    }

    /// Takes the lock without waiting; throws ``SessionError/daemonAlreadyRunning(path:pid:)`` naming the
    /// holder (from `daemon.pid`) when another process has it.
    public static func acquire(_ paths: SessionPaths) throws(SessionError) -> SessionLock {
        let directory = try SessionError.at(paths.directory) { () throws(SystemError) in try openDirectory(paths) }
        let locked = try SessionError.at(paths.directory) { () throws(SystemError) in try tryLock(directory, LOCK_EX) }
        guard locked else { throw .daemonAlreadyRunning(path: paths.directory, pid: paths.recordedDaemonPID()) }
        return SessionLock(paths: paths, directory: directory)
    }

    /// Whether some process holds the lock right now (a daemon runs), tested without keeping it.
    public static func isHeld(_ paths: SessionPaths) -> Bool {
        // Closing the descriptor drops the shared lock taken to test.
        guard let directory = try? openDirectory(paths), let locked = try? tryLock(directory, LOCK_SH) else { return false }
        return !locked
    }

    /// Writes `daemon.pid` (this process): to a temp file, then renamed over the old one.
    public func writePID() throws(SessionError) {
        let path = paths.pidFile
        let temporary = path + ".tmp"
        do {
            try OutputFile.remove(temporary)
            let file = try FileDescriptor.openingSessionFile(temporary, .writeOnly, options: [.create, .exclusiveCreate], permissions: [.ownerReadWrite])
            try file.descriptor.writeAll(Array("\(getpid())\n".utf8), at: 0)
        } catch {
            throw .io(path: temporary, error)
        }
        do { try OutputFile.rename(temporary, to: path) } catch { throw .io(path: path, error) }
    }

    /// Removes `daemon.pid` if it still names this process (a clean exit). A pid file that cannot be removed
    /// only misnames the holder until the next daemon writes its own: the lock, not the file, says who runs.
    public func removePID() {
        if paths.recordedDaemonPID() == getpid() { try? OutputFile.remove(paths.pidFile) }
    }
}
