import Glibc
import Synchronization
@testable import HaulIO

/// A blocking TCP listener on a loopback address, served by its own thread; only for tests.
final class LoopbackServer: Sendable {
    enum Behaviour: Sendable {
        /// Echo everything back until the client closes.
        case echo
        /// Accept and hold the connection open without sending anything.
        case silent
        /// Never accept: the backlog fills and further connection attempts hang.
        case neverAccept
    }

    let port: UInt16
    let host: String
    private let listener: Int32
    private let acceptsConnections: Bool
    private let held = Mutex<[Int32]>([])

    init(host: String = "127.0.0.1", port: UInt16 = 0, behaviour: Behaviour, backlog: Int32 = 16) throws {
        guard let address = SocketAddress(ipAddress: host, port: port) else { throw SystemError(call: "inet_pton", errno: EINVAL) }
        let fd = try blockingSyscall("socket") { socket(address.family.rawValue, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = try address.withSockAddr { (pointer, length) throws(SystemError) in
            try blockingSyscall("bind") { bind(fd, pointer, length) }
        }
        _ = try blockingSyscall("listen") { listen(fd, backlog) }
        self.listener = fd
        self.host = host
        self.port = try LoopbackServer.boundPort(fd)
        acceptsConnections = behaviour != .neverAccept
        if acceptsConnections {
            try PosixThread.spawnDetached(name: "test-server") { [self] in acceptLoop(behaviour) }
        }
    }

    /// Stops accepting and closes every connection the server holds.
    func stop() {
        // The accept thread closes the listener itself once `accept` fails: closing it here could hand its
        // number to a new socket while that thread is about to call `accept` on it again.
        shutdown(listener, Int32(SHUT_RDWR))
        if !acceptsConnections { close(listener) }
        for fd in held.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
    }

    private func acceptLoop(_ behaviour: Behaviour) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            held.withLock { $0.append(client) }
            if behaviour == .echo {
                try? PosixThread.spawnDetached(name: "test-echo") { LoopbackServer.echo(client) }
            }
        }
    }

    private static func echo(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { send(fd, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { return }
                offset += written
            }
        }
        shutdown(fd, Int32(SHUT_WR))
    }

    static func boundPort(_ fd: Int32) throws -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try blockingSyscall("getsockname") { getsockname(fd, address, &length) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0)!.port }
        }
    }

    /// The remote port of a connected socket.
    static func peerPort(_ fd: Int32) throws -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try blockingSyscall("getpeername") { getpeername(fd, address, &length) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0)!.port }
        }
    }

    /// A port on which nothing listens: bound, then released.
    static func unusedPort(host: String = "127.0.0.1") throws -> UInt16 {
        let server = try LoopbackServer(host: host, behaviour: .neverAccept)
        server.stop()
        return server.port
    }
}
