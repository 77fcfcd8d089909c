import CHaulSystem
import Glibc
import SystemPackage

// The socket and epoll side of the syscall layer: the calls swift-system 1.8.1 does not have (socket,
// connect, send, recv, getsockopt, epoll, eventfd), run through ``syscall(_:_:_:)`` on a `FileDescriptor`.
// This is where a descriptor's `rawValue` meets Glibc; outside this directory sockets, the epoll set and the
// loop's eventfd are `FileDescriptor`s owned by an ``OwnedFileDescriptor``.
//
// Hot-path calls are `@inline(__always)` and take the descriptor by value (a `CInt` in a struct), so they
// compile to the same code as the raw calls they replace.

extension FileDescriptor {
    /// -1, the number no descriptor has: what a closed socket holds, so that a late call on it fails with
    /// `EBADF` instead of reaching whatever file has since received its old number.
    package static var invalid: FileDescriptor { FileDescriptor(rawValue: -1) }

    // MARK: Sockets

    /// `socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol)`: a new non-blocking socket owned by
    /// the caller.
    package static func openingSocket(family: Int32, type: Int32, protocol: Int32) throws(SystemError) -> OwnedFileDescriptor {
        let flags = type | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return OwnedFileDescriptor(FileDescriptor(rawValue: try blockingSyscall("socket") { socket(family, flags, `protocol`) }))
    }

    /// `connect` on a non-blocking socket: `.processed` when connected at once, `.wouldBlock` while in
    /// progress (wait for writability, then read ``takeSocketError()``).
    package func connect(to address: UnsafePointer<sockaddr>, length: socklen_t) throws(SystemError) -> IOResult<Int32> {
        try syscall("connect", .nonBlocking) { Glibc.connect(rawValue, address, length) }
    }

    /// Reads and clears `SO_ERROR`: the outcome of a non-blocking connect. 0 means connected.
    package func takeSocketError() throws(SystemError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try blockingSyscall("getsockopt(SO_ERROR)") { getsockopt(rawValue, SOL_SOCKET, SO_ERROR, &value, &length) }
        return value
    }

    /// `setsockopt` of an `int` option, with the error naming `call`.
    package func setSocketOption(level: Int32, name: Int32, value: Int32, call: StaticString) throws(SystemError) {
        var value = value
        _ = try blockingSyscall(call) { setsockopt(rawValue, level, name, &value, socklen_t(MemoryLayout<Int32>.size)) }
    }

    /// `setsockopt(SOL_SOCKET, SO_BINDTODEVICE, name)`: only packets of that device reach the socket.
    package func bindToDevice(_ name: String) throws(SystemError) {
        var bytes = Array(name.utf8)
        bytes.append(0)
        _ = try blockingSyscall("setsockopt(SO_BINDTODEVICE)") {
            setsockopt(rawValue, SOL_SOCKET, SO_BINDTODEVICE, bytes, socklen_t(bytes.count))
        }
    }

    /// `bind` to `address` (`length` bytes): the local end of a socket that connects later.
    package func bind(to address: UnsafePointer<sockaddr>, length: socklen_t) throws(SystemError) {
        _ = try blockingSyscall("bind") { Glibc.bind(rawValue, address, length) }
    }

    /// `getsockname` into `address` (`length` bytes available; the address's length on return).
    package func localAddress(into address: UnsafeMutablePointer<sockaddr>, length: inout socklen_t) throws(SystemError) {
        _ = try blockingSyscall("getsockname") { getsockname(rawValue, address, &length) }
    }

    /// `getpeername` into `address` (`length` bytes available; the address's length on return).
    package func peerAddress(into address: UnsafeMutablePointer<sockaddr>, length: inout socklen_t) throws(SystemError) {
        _ = try blockingSyscall("getpeername") { getpeername(rawValue, address, &length) }
    }

    /// One `read` from a non-blocking socket into `buffer`. `.processed(0)` means the peer closed its side.
    @inline(__always)
    package func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("read", .nonBlocking) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// One `send` on a non-blocking socket: as much of `buffer` as the send buffer takes, a partial count
    /// being normal. `MSG_NOSIGNAL` turns a send on a reset connection into `EPIPE` instead of killing the
    /// process.
    @inline(__always)
    package func send(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("send", .nonBlocking) { Glibc.send(rawValue, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
    }

    /// `recv(MSG_PEEK | MSG_DONTWAIT)` of one byte, left in the socket: `.processed(0)` when the peer has
    /// closed, `.processed(1)` when bytes wait, `.wouldBlock` when there are none.
    package func peekByte() throws(SystemError) -> IOResult<Int> {
        var byte: UInt8 = 0
        return try syscall("recv", .nonBlocking) { recv(rawValue, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) }
    }

    /// `shutdown(SHUT_WR)`: sends FIN; the socket can still read.
    package func shutdownSending() throws(SystemError) {
        _ = try blockingSyscall("shutdown") { Glibc.shutdown(rawValue, Int32(SHUT_WR)) }
    }

    // MARK: epoll and eventfd

    /// `epoll_create1(EPOLL_CLOEXEC)`: a new epoll set owned by the caller.
    package static func creatingEpollSet() throws(SystemError) -> OwnedFileDescriptor {
        OwnedFileDescriptor(FileDescriptor(rawValue: try blockingSyscall("epoll_create1") { haul_epoll_create() }))
    }

    /// `eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)`: a new wake-up counter owned by the caller.
    package static func creatingEventCounter() throws(SystemError) -> OwnedFileDescriptor {
        OwnedFileDescriptor(FileDescriptor(rawValue: try blockingSyscall("eventfd") { haul_eventfd(0) }))
    }

    /// `epoll_ctl(operation)` on this epoll set for `target`, with `token` as the event's data.
    package func epollControl(_ operation: Int32, _ target: FileDescriptor, events: UInt32, token: UInt64) throws(SystemError) {
        _ = try blockingSyscall("epoll_ctl") { haul_epoll_ctl(rawValue, operation, target.rawValue, events, token) }
    }

    /// `epoll_wait` on this epoll set: the number of events stored in `masks` and `tokens` (`capacity` of each).
    @inline(__always)
    package func epollWait(
        masks: UnsafeMutablePointer<UInt32>, tokens: UnsafeMutablePointer<UInt64>, capacity: Int32, timeoutMilliseconds: Int32
    ) throws(SystemError) -> Int32 {
        try blockingSyscall("epoll_wait") { haul_epoll_wait(rawValue, masks, tokens, capacity, timeoutMilliseconds) }
    }

    /// Adds one to this eventfd's counter, waking whoever waits for it. `EAGAIN` (the counter is full) means
    /// a wake-up is already pending, so it is not an error.
    package func signalEventCounter() {
        var one: UInt64 = 1
        _ = try? syscall("write", .nonBlocking) { Glibc.write(rawValue, &one, 8) }
    }

    /// Reads and resets this (non-blocking) eventfd's counter; nothing happens when it is already zero.
    package func drainEventCounter() {
        var counter: UInt64 = 0
        _ = try? syscall("read", .nonBlocking) { Glibc.read(rawValue, &counter, 8) }
    }
}

/// One `recv` from a non-blocking socket into `buffer`: the byte count (0: the peer closed), would-block, or
/// the failure. For the session protocol's sockets, which read lines outside the HTTP connection types.
package func receive(from socket: FileDescriptor, into buffer: inout [UInt8]) -> Result<IOResult<Int>, SystemError> {
    buffer.withUnsafeMutableBytes { raw in
        Result { () throws(SystemError) in try syscall("recv", .nonBlocking) { recv(socket.rawValue, raw.baseAddress, raw.count, 0) } }
    }
}
