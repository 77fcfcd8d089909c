import Glibc

/// Socket options applied to every outgoing TCP connection.
public struct SocketOptions: Sendable, Hashable {
    /// `TCP_NODELAY`: on by default, since requests are written in one piece and must not wait for Nagle.
    public var noDelay: Bool = true

    /// `SO_RCVBUF` in bytes, or `nil` (the default) to leave the kernel's receive-buffer autotuning alone.
    ///
    /// Setting `SO_RCVBUF` switches autotuning off for the socket and pins the TCP window, which caps throughput
    /// at `size / RTT`; autotuning grows the buffer up to `net.ipv4.tcp_rmem[2]` (6 MiB by default) as the
    /// connection proves it needs it. Set a value only to *limit* memory or throughput per connection.
    public var receiveBufferSize: Int? = nil

    /// Options with `TCP_NODELAY` and kernel-tuned buffers.
    public init(noDelay: Bool = true, receiveBufferSize: Int? = nil) {
        self.noDelay = noDelay
        self.receiveBufferSize = receiveBufferSize
    }
}

/// A non-blocking TCP socket owning its descriptor (`SOCK_NONBLOCK | SOCK_CLOEXEC`).
///
/// Not thread-safe: it belongs to whoever drives it, normally one event loop thread.
final class TCPSocket {
    /// The descriptor, or -1 once closed.
    private(set) var fileDescriptor: Int32
    /// The family the socket was created for.
    let family: SocketAddress.Family

    /// Creates an unconnected socket for `family` and applies `options`.
    init(family: SocketAddress.Family, options: SocketOptions) throws(SystemError) {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        fileDescriptor = try blockingSyscall("socket") { socket(family.rawValue, type, Int32(IPPROTO_TCP)) }
        self.family = family
        do {
            if options.noDelay { try setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1, call: "setsockopt(TCP_NODELAY)") }
            if let size = options.receiveBufferSize {
                try setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: Int32(clamping: size), call: "setsockopt(SO_RCVBUF)")
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Starts connecting. Returns `true` if the connection is already established, `false` if it is in progress
    /// (wait for writability, then check ``takePendingError()``).
    func connect(to address: SocketAddress) throws(SystemError) -> Bool {
        let result = try address.withSockAddr { (pointer, length) throws(SystemError) in
            try syscall("connect", .nonBlocking) { Glibc.connect(fileDescriptor, pointer, length) }
        }
        if case .processed = result { return true }
        return false
    }

    /// Reads and clears `SO_ERROR`: the outcome of a non-blocking connect. 0 means connected.
    func takePendingError() throws(SystemError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try blockingSyscall("getsockopt(SO_ERROR)") { getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &value, &length) }
        return value
    }

    /// Reads into `buffer`. `.processed(0)` means the peer closed its side.
    @inline(__always)
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("read", .nonBlocking) { Glibc.read(fileDescriptor, buffer.baseAddress, buffer.count) }
    }

    /// Writes as much of `buffer` as the send buffer takes; a partial count is normal.
    /// `MSG_NOSIGNAL` turns a write to a reset connection into `EPIPE` instead of killing the process.
    @inline(__always)
    func write(from buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("send", .nonBlocking) { send(fileDescriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    /// The local port, for diagnostics and tests.
    func localPort() throws(SystemError) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try blockingSyscall("getsockname") { getsockname(fileDescriptor, address, &length) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0)?.port ?? 0 }
        }
    }

    /// Closes the descriptor; safe to call twice. The owner must deregister it from its loop first.
    func close() {
        guard fileDescriptor >= 0 else { return }
        // A close error leaves nothing to retry or report: the descriptor is released either way.
        try? closeDescriptor(fileDescriptor)
        fileDescriptor = -1
    }

    private func setOption(level: Int32, name: Int32, value: Int32, call: StaticString) throws(SystemError) {
        var value = value
        _ = try blockingSyscall(call) {
            setsockopt(fileDescriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }
}
