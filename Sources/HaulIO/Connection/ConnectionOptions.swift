/// Time limits for a ``Connection``, all measured on the monotonic clock.
public struct ConnectionTimeouts: Sendable, Hashable {
    /// Resolution plus TCP connect across all Happy Eyeballs attempts.
    public var connect: Duration
    /// The TLS handshake, once TCP is connected.
    public var tlsHandshake: Duration
    /// The longest a pending read or write may go without any byte moving (a stalled server); `nil` for no limit.
    public var idle: Duration?
    /// The longest an HTTP exchange may take, from its start, to receive the complete final (non-1xx) response
    /// head, however its bytes trickle in: a server dripping one byte at a time, or repeating `100 Continue`,
    /// keeps the idle timeout from ever firing. `nil` (the default) uses the ``idle`` value, and sets no limit
    /// when that is `nil` too.
    public var head: Duration?

    /// The head limit in force: ``head``, or else ``idle``.
    public var effectiveHead: Duration? { head ?? idle }

    /// 10 s to connect, 10 s to handshake, 30 s without progress, and as long as that for a response head.
    public init(connect: Duration = .seconds(10), tlsHandshake: Duration = .seconds(10), idle: Duration? = .seconds(30),
                head: Duration? = nil) {
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.idle = idle
        self.head = head
    }
}

/// Everything configurable about a ``Connection`` apart from TLS.
public struct ConnectionOptions: Sendable, Hashable {
    /// Time limits.
    public var timeouts: ConnectionTimeouts
    /// Socket-level options (`TCP_NODELAY`, `SO_RCVBUF`).
    public var socket: SocketOptions
    /// The most bytes one read hands to a ``Connection/startReadingOnLoop(_:)`` handler. The buffer belongs to the
    /// event loop and is shared by its connections, so this costs memory once per loop, not per connection.
    /// 256 KiB lets one `read` drain a well-filled socket buffer, keeping syscalls per megabyte low.
    public var receiveBufferSize: Int
    /// Delay between Happy Eyeballs attempts.
    public var attemptDelay: Duration
    /// The capacity asked for the pipe a plain-TCP connection splices bodies through (`F_SETPIPE_SZ`; the
    /// kernel's 64 KiB stays when it refuses): the most bytes one splice moves. Made on the first splice
    /// only (``Connection/startReadingOnLoop(splicing:_:)``), kept for the connection's life. 256 KiB, the
    /// receive buffer's size, measured best (docs/benchmarks.md, 2026-11-26): at 8 connections 1 MiB pipes
    /// made the pipe → file copy up to twice as slow per byte, 128 KiB cost more in calls.
    public var splicePipeSize: Int = 256 << 10
    /// Where connections go and from where, beyond the URL: resolve and connect-to rules, one address family,
    /// a device or local address to bind to (``NetworkSettings``). The defaults change nothing.
    public var network: NetworkSettings = NetworkSettings()

    /// The defaults described on each property.
    public init(
        timeouts: ConnectionTimeouts = ConnectionTimeouts(),
        socket: SocketOptions = SocketOptions(),
        receiveBufferSize: Int = 256 * 1024,
        attemptDelay: Duration = HappyEyeballs.defaultAttemptDelay
    ) {
        self.timeouts = timeouts
        self.socket = socket
        self.receiveBufferSize = receiveBufferSize
        self.attemptDelay = attemptDelay
    }
}

/// How a stream ended.
public enum EndOfStream: Sendable, Hashable {
    /// TCP FIN on a plain connection, or TLS close_notify.
    case clean
    /// A TLS peer closed TCP without close_notify. Harmless when the HTTP framing says the body is complete,
    /// a possible truncation attack otherwise; the HTTP layer decides.
    case withoutCloseNotify
}

/// What ``Connection/read(into:)`` produced.
public enum ReadResult: Sendable, Hashable {
    /// This many bytes were written to the start of the buffer (never 0).
    case bytes(Int)
    /// The peer finished sending.
    case endOfStream(EndOfStream)
}

/// A read handler's verdict after seeing a chunk of bytes.
public enum ReadDecision: Sendable, Hashable {
    /// Keep delivering bytes.
    case continueReading
    /// Stop reading (e.g. the response is complete); bytes not yet read stay in the socket.
    case stop
}

/// Why ``Connection/readLoop(_:)`` returned.
public enum ReadLoopEnd: Sendable, Hashable {
    /// The body returned ``ReadDecision/stop``.
    case stopped
    /// The peer finished sending.
    case endOfStream(EndOfStream)
}

/// What a loop-thread read handler receives. Not `Sendable`: it lends memory that is only valid during the call.
public enum ConnectionReadEvent {
    /// Bytes just received, in the connection's own receive buffer. Valid only until the handler returns; the next
    /// read overwrites them. Process or copy them before returning.
    case bytes(UnsafeRawBufferPointer)
    /// The peer finished sending; reading has stopped.
    case endOfStream(EndOfStream)
    /// The connection failed (I/O error, TLS error, idle timeout, closed); it is unusable.
    case failed(ConnectionError)
    /// Bytes spliced from the socket into the connection's pipe (only when the reader asked for it, see
    /// ``Connection/startReadingOnLoop(splicing:_:)``), waiting to be moved into a file with
    /// ``PipedBytes/move(_:into:at:)``. Whatever the handler leaves in the pipe is discarded when it returns.
    case piped(PipedBytes)
}

/// Facts about a TLS connection, fixed once the handshake is done.
public struct TLSDetails: Sendable, Hashable {
    /// E.g. `TLSv1.3`.
    public let protocolVersion: String
    /// The ALPN protocol the server selected, if any.
    public let applicationProtocol: String?
    /// Whether the handshake resumed a cached session (an abbreviated handshake).
    public let sessionReused: Bool
}
