import Glibc
import Haul
import HaulIO

/// The credentials of the process at the other end of a Unix socket, as the kernel recorded them when it
/// connected (`SO_PEERCRED`): they cannot be forged by the peer.
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The peer of the connected Unix socket `fileDescriptor`.
    public static func of(_ fileDescriptor: Int32) throws(SystemError) -> PeerCredentials {
        // `struct ucred` (pid, uid, gid) is hidden behind _GNU_SOURCE in Glibc's Swift module; its layout is
        // fixed by the kernel ABI: three 32-bit fields.
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fileDescriptor, SOL_SOCKET, SO_PEERCRED, &raw, &length) == 0 else {
            throw SystemError(call: "getsockopt(SO_PEERCRED)", errno: errno)
        }
        return PeerCredentials(pid: raw.0, uid: raw.1, gid: raw.2)
    }
}

/// Who may talk to a session's daemon: processes of the user who owns it, no one else — not even root, which
/// has its own sessions. (The socket is mode 0600 in a 0700 directory as well; this check holds even if
/// those permissions were loosened.)
public enum PeerPolicy {
    /// Whether a peer with `peer` credentials may use a daemon running as `owner`; nil when it may, else why
    /// not, in words for the refused client.
    public static func refusal(peer: PeerCredentials, owner: uid_t) -> String? {
        guard peer.uid == owner else {
            return "this session belongs to uid \(owner); process \(peer.pid) runs as uid \(peer.uid)"
        }
        return nil
    }
}

/// Unix stream sockets: the daemon's listener and a client's connection.
enum UnixSocket {
    /// `O_PATH` (Linux); not in Glibc's Swift module.
    private static let openPathFlag: Int32 = 0o10000000

    /// Runs `body` with a `sockaddr_un` for `path`. A path longer than `sun_path` (108 bytes) is reached
    /// through `/proc/self/fd/N/NAME` with `N` a descriptor of its directory, which is short whatever the
    /// directory's path.
    static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) throws(SystemError) -> T {
        var directoryFD: Int32 = -1
        defer { if directoryFD >= 0 { _ = close(directoryFD) } }
        var target = path
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        if target.utf8.count >= capacity {
            let directory = OutputFile.directory(containing: path)
            let name = path.split(separator: "/").last.map(String.init) ?? path
            directoryFD = open(directory, openPathFlag | O_DIRECTORY | O_CLOEXEC)
            guard directoryFD >= 0 else { throw SystemError(call: "open", errno: errno) }
            target = "/proc/self/fd/\(directoryFD)/\(name)"
            guard target.utf8.count < capacity else { throw SystemError(call: "bind", errno: ENAMETOOLONG) }
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(target.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A listening socket at `path` (an old socket file there is replaced), mode 0600.
    static func listen(at path: String) throws(SystemError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SystemError(call: "socket", errno: errno) }
        do throws(SystemError) {
            if unlink(path) != 0 && errno != ENOENT { throw SystemError(call: "unlink", errno: errno) }
            // Created with no permission for anyone but the owner from the first moment (umask), then made 0600.
            let previous = umask(0o177)
            let bound = try withAddress(path) { bind(fd, $0, $1) }
            let bindErrno = errno
            umask(previous)
            guard bound == 0 else { throw SystemError(call: "bind", errno: bindErrno) }
            guard chmod(path, 0o600) == 0 else { throw SystemError(call: "chmod", errno: errno) }
            guard Glibc.listen(fd, 64) == 0 else { throw SystemError(call: "listen", errno: errno) }
        } catch {
            _ = close(fd)
            throw error
        }
        return fd
    }

    /// A connected, blocking socket to `path`.
    static func connect(to path: String) throws(SystemError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemError(call: "socket", errno: errno) }
        var result: Int32 = -1
        var code: Int32 = 0
        do {
            repeat {
                result = try withAddress(path) { Glibc.connect(fd, $0, $1) }
                code = errno
            } while result != 0 && code == EINTR
        } catch {
            _ = close(fd)
            throw error
        }
        guard result == 0 else {
            _ = close(fd)
            throw SystemError(call: "connect", errno: code)
        }
        return fd
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }
}
