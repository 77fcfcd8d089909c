import Glibc
import Synchronization
@testable import HaulIO
import SystemPackage

/// A blocking TCP listener on a loopback address, served by its own thread; only for tests.
final class LoopbackServer: Sendable {
    enum Behaviour: Sendable {
        /// Echo everything back until the client closes.
        case echo
        /// Accept and hold the connection open without sending anything.
        case silent
        /// Never accept: the backlog fills and further connection attempts hang.
        case neverAccept
        /// Run `script` with each accepted connection, on a thread of its own, then close the connection.
        /// ``stop()`` shuts the connection down under a running script, whose next read or send then fails.
        case scripted(@Sendable (Int32) -> Void)
    }

    let port: UInt16
    let host: String
    private let listener: Int32
    private let acceptsConnections: Bool
    /// Connections held open until ``stop()``; scripted and echoing ones are closed by their own thread
    /// instead, so that such a thread never touches a descriptor number that `stop` released (and a new
    /// socket may have reused).
    private struct Held {
        var connections: [Int32] = []
        var scripted: Set<Int32> = []
    }
    private let held = Mutex(Held())

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
        if case .neverAccept = behaviour { acceptsConnections = false } else { acceptsConnections = true }
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
        held.withLock { held in
            for fd in held.connections { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
            for fd in held.scripted { shutdown(fd, Int32(SHUT_RDWR)) }
            held.connections = []
        }
    }

    private func acceptLoop(_ behaviour: Behaviour) {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                close(listener)
                return
            }
            switch behaviour {
            case .echo:
                // Owned by its thread like a scripted one: if `stop()` closed it, the thread's last
                // `shutdown` could land on a socket of the next test that got the same number.
                held.withLock { _ = $0.scripted.insert(client) }
                try? PosixThread.spawnDetached(name: "test-echo") { [self] in
                    LoopbackServer.echo(client)
                    held.withLock { held in
                        held.scripted.remove(client)
                        shutdown(client, Int32(SHUT_WR))
                        close(client)
                    }
                }
            case .scripted(let script):
                held.withLock { _ = $0.scripted.insert(client) }
                try? PosixThread.spawnDetached(name: "test-script") { [self] in
                    script(client)
                    held.withLock { held in
                        held.scripted.remove(client)
                        close(client)
                    }
                }
            case .silent, .neverAccept:
                held.withLock { $0.connections.append(client) }
            }
        }
    }

    // MARK: For scripts

    /// Reads until the end of a request head (an empty line); false if the client closed first.
    static func readRequestHead(_ fd: Int32) -> Bool {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(4).elementsEqual("\r\n\r\n".utf8) {
            guard read(fd, &byte, 1) == 1 else { return false }
            received.append(byte)
        }
        return true
    }

    /// Sends all of `text`; false once the client has gone.
    @discardableResult
    static func sendText(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }

    /// Reads until the client closes (or resets) its side, for scripts that must see the client leave; returns
    /// the bytes read.
    static func drainUntilClosed(_ fd: Int32) -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var total = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return total }
            total += count
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

    /// The remote port of a connected client socket.
    static func peerPort(_ socket: FileDescriptor) throws -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try socket.peerAddress(into: address, length: &length)
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
