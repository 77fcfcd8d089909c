import Glibc
import SystemPackage

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
    /// The descriptor's owner until ``close()``: nil once closed.
    private var owner: OwnedFileDescriptor?
    /// The descriptor while open; ``FileDescriptor/invalid`` once closed, so a late call fails with `EBADF`
    /// instead of reaching whatever file has since received the number.
    private(set) var fileDescriptor: FileDescriptor
    /// The family the socket was created for.
    let family: SocketAddress.Family

    /// Creates an unconnected socket for `family` and applies `options`.
    init(family: SocketAddress.Family, options: SocketOptions) throws(SystemError) {
        let owner = try FileDescriptor.openingSocket(family: family.rawValue, type: Int32(SOCK_STREAM.rawValue), protocol: Int32(IPPROTO_TCP))
        // Options are set while `owner` is still local, so a failure closes the socket with it.
        if options.noDelay {
            try owner.descriptor.setSocketOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1, call: "setsockopt(TCP_NODELAY)")
        }
        if let size = options.receiveBufferSize {
            try owner.descriptor.setSocketOption(level: SOL_SOCKET, name: SO_RCVBUF, value: Int32(clamping: size), call: "setsockopt(SO_RCVBUF)")
        }
        fileDescriptor = owner.descriptor
        self.owner = consume owner
        self.family = family
    }

    /// Binds the socket to a device (`SO_BINDTODEVICE`) or a local address (port 0) before it connects.
    func bind(to interface: NetworkInterface) throws(SystemError) {
        switch interface {
        case .device(let name):
            try fileDescriptor.bindToDevice(name)
        case .address(let text):
            guard let local = SocketAddress(ipAddress: text, port: 0) else { throw SystemError(call: "bind", errno: EINVAL) }
            try local.withSockAddr { (pointer, length) throws(SystemError) in
                try fileDescriptor.bind(to: pointer, length: length)
            }
        }
    }

    /// Starts connecting. Returns `true` if the connection is already established, `false` if it is in progress
    /// (wait for writability, then check ``takePendingError()``).
    func connect(to address: SocketAddress) throws(SystemError) -> Bool {
        let result = try address.withSockAddr { (pointer, length) throws(SystemError) in
            try fileDescriptor.connect(to: pointer, length: length)
        }
        if case .processed = result { return true }
        return false
    }

    /// Reads and clears `SO_ERROR`: the outcome of a non-blocking connect. 0 means connected.
    func takePendingError() throws(SystemError) -> Int32 {
        try fileDescriptor.takeSocketError()
    }

    /// Reads into `buffer`. `.processed(0)` means the peer closed its side.
    @inline(__always)
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try fileDescriptor.readAvailable(into: buffer)
    }

    /// Writes as much of `buffer` as the send buffer takes; a partial count is normal.
    /// `MSG_NOSIGNAL` turns a write to a reset connection into `EPIPE` instead of killing the process.
    @inline(__always)
    func write(from buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try fileDescriptor.send(buffer)
    }

    /// Peeks at one byte without taking it: `.processed(0)` when the peer has closed, `.processed(1)` when
    /// bytes wait, `.wouldBlock` when there are none.
    func peekByte() throws(SystemError) -> IOResult<Int> {
        try fileDescriptor.peekByte()
    }

    /// The local port, for diagnostics and tests.
    func localPort() throws(SystemError) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try fileDescriptor.localAddress(into: address, length: &length)
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0)?.port ?? 0 }
        }
    }

    /// Closes the descriptor; safe to call twice. The owner must deregister it from its loop first.
    func close() {
        fileDescriptor = .invalid
        // A close error leaves nothing to retry or report: the descriptor is released either way.
        try? owner.take()?.close()
    }
}
