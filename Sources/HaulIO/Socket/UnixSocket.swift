import CHaulSystem
import Glibc
import SystemPackage

/// Unix stream sockets: the daemon's listener and a client's connection.
package enum UnixSocket {
    /// `O_PATH` (Linux); not in Glibc's Swift module.
    private static let openPathFlag: Int32 = 0o10000000

    /// Runs `body` with a `sockaddr_un` for `path`. A path longer than `sun_path` (108 bytes) is reached
    /// through `/proc/self/fd/N/NAME` with `N` a descriptor of its directory, which is short whatever the
    /// directory's path; that descriptor stays open until `body` has used the address.
    package static func withAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> T) throws(SystemError) -> T {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard path.utf8.count >= capacity else { return try withAddress(naming: path, body) }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let directory = try systemCall("open") {
            try FileDescriptor.open(FilePath(OutputFile.directory(containing: path)), .readOnly,
                                    options: [.directory, .closeOnExec, FileDescriptor.OpenOptions(rawValue: openPathFlag)])
        }
        let target = "/proc/self/fd/\(directory.rawValue)/\(name)"
        let result = try systemCall("close") {
            try directory.closeAfter {
                Result { () throws(SystemError) in
                    guard target.utf8.count < capacity else { throw SystemError(call: "bind", errno: ENAMETOOLONG) }
                    return try withAddress(naming: target, body)
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` with a `sockaddr_un` holding `target`, which fits.
    private static func withAddress<T>(naming target: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> T) throws(SystemError) -> T {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(target.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { rebound in
                Result { () throws(SystemError) in try body(rebound, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
        return try result.get()
    }

    /// A listening socket at `path` (an old socket file there is replaced), mode 0600.
    package static func listen(at path: String) throws(SystemError) -> OwnedFileDescriptor {
        let socket = try makeSocket(nonBlocking: true)
        let fd = socket.descriptor.rawValue
        try OutputFile.remove(path)
        // Created with no permission for anyone but the owner from the first moment: Linux gives the bound file
        // the socket's own mode (less the umask), set here before `bind`. Not by narrowing the umask around
        // `bind`: the umask is the process's, and a file another thread created meanwhile would get it too.
        _ = try blockingSyscall("fchmod") { fchmod(fd, 0o600) }
        _ = try withAddress(path) { address, length throws(SystemError) in try blockingSyscall("bind") { bind(fd, address, length) } }
        _ = try blockingSyscall("chmod") { chmod(path, 0o600) }
        _ = try blockingSyscall("listen") { Glibc.listen(fd, 64) }
        return socket
    }

    /// A connected, blocking socket to `path`.
    package static func connect(to path: String) throws(SystemError) -> OwnedFileDescriptor {
        let socket = try makeSocket(nonBlocking: false)
        let fd = socket.descriptor.rawValue
        _ = try withAddress(path) { address, length throws(SystemError) in try blockingSyscall("connect") { Glibc.connect(fd, address, length) } }
        return socket
    }

    /// A new Unix stream socket, close-on-exec.
    private static func makeSocket(nonBlocking: Bool) throws(SystemError) -> OwnedFileDescriptor {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        return OwnedFileDescriptor(FileDescriptor(rawValue: try blockingSyscall("socket") { socket(AF_UNIX, type, 0) }))
    }

    /// Accepts one pending connection on the non-blocking `listener`, non-blocking and close-on-exec from
    /// the start (`accept4`: no moment in which a hook spawned meanwhile could inherit it); nil when none is
    /// waiting.
    package static func accept(on listener: FileDescriptor) throws(SystemError) -> OwnedFileDescriptor? {
        switch try syscall("accept4", .nonBlocking, { haul_accept4(listener.rawValue) }) {
        case .processed(let fd): return OwnedFileDescriptor(FileDescriptor(rawValue: fd))
        case .wouldBlock: return nil
        }
    }

    /// Makes the socket non-blocking (`fcntl(F_SETFL, O_NONBLOCK)`), checked.
    package static func setNonBlocking(_ socket: FileDescriptor) throws(SystemError) {
        let flags = try blockingSyscall("fcntl(F_GETFL)") { fcntl(socket.rawValue, F_GETFL) }
        _ = try blockingSyscall("fcntl(F_SETFL)") { fcntl(socket.rawValue, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Sends what of `bytes[from...]` the non-blocking socket takes now (`MSG_NOSIGNAL`: a peer gone is an
    /// error, not a SIGPIPE).
    package static func send(_ bytes: [UInt8], from start: Int, on socket: FileDescriptor) throws(SystemError) -> IOResult<Int> {
        let outcome = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in
                try socket.send(UnsafeRawBufferPointer(rebasing: raw[start...]))
            }
        }
        return try outcome.get()
    }

    /// One `recv` from the non-blocking socket into `buffer`: the byte count (0: the peer closed), would-block,
    /// or the failure.
    package static func read(from socket: FileDescriptor, into buffer: inout [UInt8]) -> Result<IOResult<Int>, SystemError> {
        receive(from: socket, into: &buffer)
    }
}

extension FileDescriptor {
    /// The credentials of the process at the other end of this connected Unix socket, as the kernel
    /// recorded them when it connected (`SO_PEERCRED`): they cannot be forged by the peer.
    package func peerCredentials() throws(SystemError) -> (pid: Int32, uid: UInt32, gid: UInt32) {
        // `struct ucred` (pid, uid, gid) is hidden behind _GNU_SOURCE in Glibc's Swift module; its layout is
        // fixed by the kernel ABI: three 32-bit fields.
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        _ = try blockingSyscall("getsockopt(SO_PEERCRED)") { getsockopt(rawValue, SOL_SOCKET, SO_PEERCRED, &raw, &length) }
        return raw
    }
}
