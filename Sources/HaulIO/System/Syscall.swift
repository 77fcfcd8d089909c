import Glibc

/// The outcome of a non-blocking operation: it either made progress or would have had to wait.
public enum IOResult<Value> {
    /// The call completed with this value.
    case processed(Value)
    /// The call reported `EAGAIN`/`EWOULDBLOCK` (or `EINPROGRESS` for `connect`); retry when the descriptor is ready.
    case wouldBlock
}

extension IOResult: Sendable where Value: Sendable {}
extension IOResult: Equatable where Value: Equatable {}

/// How a system call wants `EAGAIN` and `EINTR` treated.
package enum SyscallBehaviour {
    /// The descriptor is non-blocking: `EAGAIN`, `EWOULDBLOCK` and `EINPROGRESS` become ``IOResult/wouldBlock``.
    case nonBlocking
    /// The call cannot legitimately report `EAGAIN`; every failure except `EINTR` is thrown.
    case failOnWouldBlock
    /// Like `failOnWouldBlock`, but `EINTR` is not retried: Linux `close` releases the descriptor even when
    /// interrupted, so retrying could close a descriptor another thread just received.
    case noRetry
}

/// Runs one system call the way every call in the package is run (HaulIO, the journal, sessions).
///
/// Files go through swift-system's `FileDescriptor` where it has the call and through this wrapper where it
/// does not (FileCalls.swift); sockets, epoll and eventfd go through it in SocketCalls.swift. Both take
/// `FileDescriptor`s.
///
/// Retries on `EINTR`, maps the "try again later" errnos to ``IOResult/wouldBlock`` when `behaviour` is
/// `.nonBlocking`, and throws a ``SystemError`` naming `name` for everything else. Modelled on SwiftNIO's
/// `syscall(blocking:where:_:)`; a call counts as failed when it returns `-1`.
@inline(__always)
package func syscall<Result: FixedWidthInteger>(
    _ name: StaticString,
    _ behaviour: SyscallBehaviour = .failOnWouldBlock,
    _ body: () -> Result
) throws(SystemError) -> IOResult<Result> {
    while true {
        let result = body()
        if result != -1 { return .processed(result) }
        let code = Glibc.errno
        if code == EINTR && behaviour != .noRetry { continue }
        if behaviour == .nonBlocking && (code == EAGAIN || code == EWOULDBLOCK || code == EINPROGRESS) {
            return .wouldBlock
        }
        throw SystemError(call: "\(name)", errno: code)
    }
}

/// ``syscall(_:_:_:)`` for calls that never report "would block": returns the call's result directly.
@inline(__always)
package func blockingSyscall<Result: FixedWidthInteger>(
    _ name: StaticString,
    retryOnInterrupt: Bool = true,
    _ body: () -> Result
) throws(SystemError) -> Result {
    switch try syscall(name, retryOnInterrupt ? .failOnWouldBlock : .noRetry, body) {
    case .processed(let value): return value
    case .wouldBlock: fatalError("\(name) reported would-block although it was not run as non-blocking")
    }
}

/// Calls such as `pthread_create` and `getsockopt(SO_ERROR)` return an error number instead of setting `errno`;
/// this turns a non-zero one into the same ``SystemError``.
func checkErrorNumber(_ name: StaticString, _ code: Int32) throws(SystemError) {
    if code != 0 { throw SystemError(call: "\(name)", errno: code) }
}
