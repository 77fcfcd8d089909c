import Glibc
import HaulHTTP

/// A connected byte stream to one server, plain TCP or TLS behind the same interface.
///
/// All state lives on one ``EventLoop`` thread. There are two ways to use it:
///
/// - **Hot path, on the loop thread**: ``startReadingOnLoop(_:)`` installs a handler that the loop calls with each
///   chunk read into the loop's receive buffer (one for all its connections), so a read → parse → write-to-disk cycle
///   never leaves the loop thread and never allocates. ``writeOnLoop(_:completion:)`` and ``closeOnLoop()``
///   complete the set. Get onto the loop with ``EventLoop/execute(_:)``.
/// - **Async conveniences**, callable from any task: ``write(_:)``, ``read(into:)``, ``readLoop(_:)`` and
///   ``close()``. Each suspends on a continuation; none blocks a cooperative thread.
///
/// One read and one write may be outstanding at a time. The connection must be closed explicitly
/// (``close()``); a failure closes it automatically.
public final class Connection: @unchecked Sendable {
    // @unchecked Sendable: the `let`s are immutable; `tlsDetails` is written on the loop before `connect` returns
    // the connection (the continuation orders that write before any reader); every other stored property is
    // loop-confined and only touched from methods that run on `loop` (asserted by the `OnLoop` entry points).

    enum Reader {
        case idle
        /// `splice`, if given, is asked before each read how many bytes may go socket → pipe instead of
        /// into the receive buffer (0: read as usual).
        case handler((ConnectionReadEvent) -> ReadDecision, splice: (() -> Int64)?)
        case into(UnsafeMutableRawBufferPointer, (Result<ReadResult, ConnectionError>) -> Void)
    }

    struct PendingWrite {
        var bytes: [UInt8]
        var offset: Int
        let completion: (ConnectionError?) -> Void
    }

    struct Handshake {
        let completion: (Result<Void, ConnectionError>) -> Void
        var timer: TimerID?
        var waitsFor: IOEvents = []
    }

    /// The loop every operation of this connection runs on.
    public let loop: EventLoop
    /// The host as given to ``connect(to:port:tls:options:on:)``: the server's, also when the connection goes
    /// through a proxy.
    public let host: String
    /// The port.
    public let port: UInt16
    /// The proxy the connection goes through, and the server beyond it; `nil` for a direct connection.
    public let proxyRoute: ProxyRoute?
    /// The options in force.
    public let options: ConnectionOptions
    /// TLS facts once the handshake is done; `nil` for plain TCP.
    public private(set) var tlsDetails: TLSDetails?

    let socket: TCPSocket
    var tls: TLSConnection?

    var registration: FileDescriptorRegistration?
    var registeredInterest: IOEvents = []
    var handshake: Handshake?
    var reader: Reader = .idle
    /// Bumped whenever `reader` changes, so a loop over reads notices a handler that stopped, closed or replaced
    /// itself from inside its own callback.
    var readerGeneration: UInt64 = 0
    var readNeedsWritable = false
    /// Set while `performReads` runs, so that a handler starting a new read on this connection does not read
    /// re-entrantly while its caller is still looking at the bytes it was given.
    var isPerformingReads = false
    var writer: PendingWrite?
    var writeNeedsReadable = false
    /// Set once, when the connection fails or is closed; later operations report it.
    private(set) var terminalError: ConnectionError?
    /// Whether ``terminalError`` is set. The hot paths ask this several times per request; testing the
    /// optional error itself copied it (its strings retained and released) each time.
    private(set) var isTerminated = false
    /// The peer finished sending (FIN or close_notify was delivered to a reader).
    var peerFinished = false
    /// Whether the latest read from the socket (plain TCP) returned less than it asked for, which leaves no
    /// unread byte in the socket at that moment. False before the first read, after a splice (it takes the
    /// body's bytes only, whatever follows stays in the socket) and on TLS connections.
    var latestReadDrainedSocket = false
    /// ``EventLoop/completedWaits`` at the latest read: the same count at a checkout means no `epoll_wait`
    /// has looked at the socket since, so bytes that arrived after that read (a second response sent right
    /// after the first) have not been reported and only a peek can see them.
    var latestReadWaitCount: UInt64 = 0
    /// How many times ``isReusableOnLoop()`` asked the socket with `recv(MSG_PEEK)` (for tests).
    private(set) var reusePeeks = 0
    var lastProgress = MonotonicInstant.now()
    /// The pipe bodies are spliced through (plain TCP only): made on the first splice, kept for the
    /// connection's life, dropped with any bytes still in it when a handler leaves some behind.
    var bodyPipe: BodyPipe?
    /// Set when a pipe could not be made (descriptors or pipe memory exhausted): the connection reads instead.
    var spliceUnavailable = false
    var idleTimer: TimerID?

    init(loop: EventLoop, host: String, port: UInt16, options: ConnectionOptions, socket: TCPSocket,
         proxyRoute: ProxyRoute? = nil) {
        self.loop = loop
        self.host = host
        self.port = port
        self.proxyRoute = proxyRoute
        self.options = options
        self.socket = socket
    }

    // MARK: Connecting

    /// Resolves `host`, connects with Happy Eyeballs and, if `tls` is given, completes a verified TLS handshake.
    ///
    /// Errors name the host and cause, e.g. `connect to 127.0.0.1:1: Connection refused` or
    /// `TLS handshake with 127.0.0.1:8443 failed: certificate verify failed: self-signed certificate`.
    /// Cancelling the task abandons the attempt with a ``ConnectionError/Kind/closed`` error.
    public static func connect(
        to host: String,
        port: UInt16,
        tls: TLSContext? = nil,
        options: ConnectionOptions = ConnectionOptions(),
        on loop: EventLoop
    ) async throws(ConnectionError) -> Connection {
        let attempt = ConnectAttempt(host: host, port: port)
        let result: Result<Connection, ConnectionError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.execute {
                    attempt.start(tls: tls, options: options, on: loop) { continuation.resume(returning: $0) }
                }
            }
        } onCancel: {
            loop.execute { attempt.cancel() }
        }
        return try result.get()
    }

    /// Loop-thread form of ``connect(to:port:tls:options:on:)``: `completion` runs on the loop thread, exactly once.
    /// The returned attempt can be cancelled (on the loop thread) to abandon it.
    @discardableResult
    public static func connectOnLoop(
        to host: String,
        port: UInt16,
        tls: TLSContext?,
        options: ConnectionOptions,
        on loop: EventLoop,
        completion: @escaping (Result<Connection, ConnectionError>) -> Void
    ) -> ConnectAttempt {
        connectOnLoop(to: host, port: port, tls: tls, proxy: nil, options: options, on: loop, completion: completion)
    }

    /// ``connectOnLoop(to:port:tls:options:on:completion:)`` through a proxy: `host`:`port` is the server, reached
    /// as `proxy` says (TLS to the proxy, a tunnel), and `tls`, if given, is the session with the server.
    static func connectOnLoop(
        to host: String,
        port: UInt16,
        tls: TLSContext?,
        proxy: ProxyPlan?,
        options: ConnectionOptions,
        on loop: EventLoop,
        completion: @escaping (Result<Connection, ConnectionError>) -> Void
    ) -> ConnectAttempt {
        precondition(loop.inEventLoop, "Connection.connectOnLoop must be called on the loop thread")
        let attempt = ConnectAttempt(host: host, port: port, proxy: proxy)
        attempt.start(tls: tls, options: options, on: loop, completion: completion)
        return attempt
    }

    /// Starts a TLS handshake with `serverHost`:`serverPort` (SNI and certificate checks use that name): on the
    /// socket, or, when a session is already established (with an HTTPS proxy), inside that session.
    /// `proxyTunnel`: the proxy whose tunnel leads to the server, if any (sessions are resumed only over the
    /// same route).
    func startHandshake(context: TLSContext, serverHost: String, serverPort: UInt16, proxyTunnel: ProxyURL? = nil,
                        completion: @escaping (Result<Void, ConnectionError>) -> Void) {
        do {
            let transport: TLSConnection.Transport = tls.map { .tunnel($0) } ?? .socket(socket.fileDescriptor)
            tls = try TLSConnection(context: context, transport: transport, host: serverHost, port: serverPort,
                                    proxyTunnel: proxyTunnel)
        } catch {
            terminate(with: error)
            completion(.failure(error))
            return
        }
        let limit = options.timeouts.tlsHandshake
        handshake = Handshake(completion: completion)
        handshake?.timer = loop.scheduleTimer(after: limit) { [self] in
            handshake?.timer = nil
            fail(ConnectionError(kind: .tlsHandshakeTimedOut, host: serverHost, port: serverPort, detail: limit.compactDescription))
        }
        driveHandshake()
    }

    private func driveHandshake() {
        guard let tls, handshake != nil else { return }
        do {
            switch try tls.handshake() {
            case .done:
                let finished = handshake!
                handshake = nil
                if let timer = finished.timer { loop.cancelTimer(timer) }
                tlsDetails = TLSDetails(
                    protocolVersion: tls.protocolVersion, applicationProtocol: tls.negotiatedProtocol,
                    sessionReused: tls.sessionReused)
                updateInterest()
                finished.completion(.success(()))
            case .wantRead:
                handshake?.waitsFor = .readable
                updateInterest()
            case .wantWrite:
                handshake?.waitsFor = .writable
                updateInterest()
            }
        } catch {
            fail(error)
        }
    }

    // MARK: Closing

    /// Whether the connection has been closed or has failed.
    public var isClosedOnLoop: Bool {
        precondition(loop.inEventLoop, "Connection.isClosedOnLoop must be read on the loop thread")
        return isTerminated
    }

    /// Whether an idle connection (no read or write pending) still looks reusable: the peer has not closed or
    /// reset it and sent nothing unsolicited. A pool should ask this before reusing one.
    ///
    /// A plain TCP connection whose latest read drained its socket, which has stayed registered with the
    /// loop for reading since, and on which an `epoll_wait` has returned since that read, is answered without
    /// a system call: any byte, FIN or reset that arrived before the loop's latest `epoll_wait` was reported
    /// then, and the first event while idle drops the registration (`updateInterest(releasingIdle:)`), so a
    /// still-registered connection that has no report waiting in the current batch got none. What arrives
    /// after that `epoll_wait` is not seen, as what arrives after a `recv(MSG_PEEK)` is not. A checkout in the
    /// same turn of the loop as the latest read peeks: bytes a server sends right after its response (a second
    /// copy of it) arrive in exactly that window, and a connection reused without looking read them as the
    /// answer to the next request (a list's next file, exit 0). A close fails the request before any response
    /// byte, which ``HTTPClient`` sends again on a new connection. Every other connection (never read, ended
    /// by a splice or by a read that filled the buffer, no longer registered, TLS) costs one non-blocking
    /// `recv(MSG_PEEK)` (plus an `SSL_peek` if bytes arrived). Loop thread only.
    public func isReusableOnLoop() -> Bool {
        precondition(loop.inEventLoop, "Connection.isReusableOnLoop must be called on the loop thread")
        guard !isTerminated, handshake == nil, !peerFinished, !hasPendingOperation else { return false }
        if tls == nil, latestReadDrainedSocket, loop.completedWaits != latestReadWaitCount, let registration,
           registeredInterest == .readable, !loop.hasUndispatchedEvent(for: registration) {
            return true
        }
        let peeked: IOResult<Int>
        reusePeeks &+= 1
        do {
            peeked = try socket.peekByte()
        } catch {
            return false
        }
        switch peeked {
        case .wouldBlock:
            return tls.map { !$0.hasBufferedData || $0.isUsableWhileIdle() } ?? true
        case .processed(0):
            return false
        case .processed:
            // Plain HTTP has no business sending bytes between responses; TLS may deliver late tickets.
            return tls?.isUsableWhileIdle() ?? false
        }
    }

    /// Closes the connection (sending TLS close_notify first) and fails pending operations with
    /// ``ConnectionError/Kind/closed``. Callable from any thread; closing twice is harmless.
    public func close() {
        loop.execute { self.closeOnLoop() }
    }

    /// ``close()`` for callers already on the loop thread; takes effect immediately.
    public func closeOnLoop() {
        precondition(loop.inEventLoop, "Connection.closeOnLoop must be called on the loop thread")
        guard !isTerminated else { return }
        if handshake == nil { tls?.shutdown() }
        fail(ConnectionError(kind: .closed, host: host, port: port))
    }

    /// Makes `error` terminal: releases the socket and reports `error` to every pending operation.
    func fail(_ error: ConnectionError) {
        guard !isTerminated else { return }
        terminate(with: error)
        let pendingHandshake = handshake
        let pendingReader = reader
        let pendingWriter = writer
        handshake = nil
        reader = .idle
        readerGeneration &+= 1
        writer = nil
        pendingHandshake?.completion(.failure(error))
        switch pendingReader {
        case .idle: break
        case .handler(let handler, _): _ = handler(.failed(error))
        case .into(_, let completion): completion(.failure(error))
        }
        pendingWriter?.completion(error)
    }

    private func terminate(with error: ConnectionError) {
        terminalError = error
        isTerminated = true
        if let timer = handshake?.timer { loop.cancelTimer(timer) }
        if let timer = idleTimer { loop.cancelTimer(timer) }
        idleTimer = nil
        if let registration { loop.deregister(registration) }
        registration = nil
        registeredInterest = []
        socket.close()
        bodyPipe = nil
        // OpenSSL's state goes now, on the loop thread, rather than wherever and whenever the last reference to
        // this connection is dropped (perhaps on a thread that is running the process's exit handlers).
        tls = nil
    }

    // MARK: Readiness

    /// Brings the epoll registration in line with what pending operations wait for.
    ///
    /// With nothing pending, a registration for `.readable` alone is kept: a pooled connection goes idle
    /// and back to reading once per request, and dropping and re-adding it cost two `epoll_ctl` calls per
    /// request. A quiet idle connection gets no events from it. The first event it does get while idle (a
    /// peer's reset or close, unread bytes) removes the descriptor from epoll (`releasingIdle`), since
    /// level-triggered epoll would report it over and over while nobody is listening. Any other interest
    /// (`.writable`, which is nearly always ready) is removed as soon as nothing waits for it.
    func updateInterest(releasingIdle: Bool = false) {
        guard !isTerminated else { return }
        var wanted: IOEvents = []
        if let handshake {
            wanted = handshake.waitsFor
        } else {
            if case .idle = reader {} else { wanted.insert(readNeedsWritable ? .writable : .readable) }
            if writer != nil { wanted.insert(writeNeedsReadable ? .readable : .writable) }
        }
        guard wanted != registeredInterest || (registration == nil && !wanted.isEmpty) else { return }
        do {
            if wanted.isEmpty {
                if !releasingIdle && registeredInterest == .readable { return }
                if let registration { loop.deregister(registration) }
                registration = nil
            } else if let registration {
                try loop.setInterest(wanted, for: registration)
            } else {
                registration = try loop.register(socket.fileDescriptor, interest: wanted) { [self] events in
                    handle(events)
                }
            }
            registeredInterest = wanted
        } catch {
            fail(ConnectionError(kind: .ioFailure, host: host, port: port, systemError: error))
        }
    }

    private func handle(_ events: IOEvents) {
        if handshake != nil {
            driveHandshake()
            return
        }
        let wasIdle: Bool
        if case .idle = reader { wasIdle = writer == nil } else { wasIdle = false; performReads() }
        if writer != nil { performWrites() }
        // An event for a connection that had nothing pending: stop watching it (see updateInterest).
        updateInterest(releasingIdle: wasIdle)
    }

    // MARK: Idle timeout

    /// Records that bytes moved, postponing the idle timeout. A clock read, not a timer operation, per read.
    @inline(__always)
    func noteProgress() { lastProgress = .now() }

    /// Starts the idle watchdog when an operation begins waiting. The timer is re-armed lazily from
    /// `lastProgress` instead of being rescheduled on every read, which would cost a heap operation per read.
    func armIdleTimer(operationWasIdle: Bool) {
        guard let limit = options.timeouts.idle, !isTerminated else { return }
        if operationWasIdle { noteProgress() }
        guard idleTimer == nil else { return }
        idleTimer = loop.scheduleTimer(at: lastProgress.advanced(by: limit)) { [self] in idleTimerFired(limit) }
    }

    private func idleTimerFired(_ limit: Duration) {
        idleTimer = nil
        guard hasPendingOperation else { return }
        let deadline = lastProgress.advanced(by: limit)
        if MonotonicInstant.now() >= deadline {
            failStalled(limit)
        } else {
            idleTimer = loop.scheduleTimer(at: deadline) { [self] in idleTimerFired(limit) }
        }
    }

    /// Fails the connection as stalled (nothing moved for `limit`) and returns the error pending operations saw.
    @discardableResult
    func failStalled(_ limit: Duration) -> ConnectionError {
        let error = ConnectionError(kind: .idleTimedOut, host: host, port: port, detail: limit.compactDescription)
        fail(error)
        return error
    }

    var hasPendingOperation: Bool {
        if writer != nil { return true }
        if case .idle = reader { return false }
        return true
    }
}
