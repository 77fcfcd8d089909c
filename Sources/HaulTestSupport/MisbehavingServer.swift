import Foundation
import Glibc
import Synchronization

/// A scripted HTTP/1.1 server on loopback for fault-injection tests, plain or TLS.
///
/// It serves one in-memory ``Resource`` at every target, correctly (ranges, 416, `If-Range`, keep-alive,
/// HEAD), unless its ``Script`` tells it to misbehave for a request: cut, stalled, dripped or overrunning bodies,
/// wrong or missing `Content-Range`, bad statuses, broken heads, endless interim responses, or a seeded mix of
/// all of these (``Script/chaos(seed:faultRate:faults:)``). It records every request and how many body
/// bytes it sent for it, so tests can check what a client fetched and re-fetched. One thread per connection;
/// ``stop()`` (also run by deinit) closes everything, ends every stall and joins the threads.
///
/// ```swift
/// let server = try MisbehavingServer(resource: .pattern(size: 1 << 20),
///                                    script: .sequence([.closeMidBody(afterBytes: 300_000)]))
/// defer { server.stop() }
/// // ... download server.url("/file") with Haul, then:
/// #expect(server.exchanges.map(\.bodyBytesSent).reduce(0, +) <= (1 << 20) + 300_000)
/// ```
public final class MisbehavingServer: Sendable {
    /// A request and what the server sent back for it.
    public struct Exchange: Sendable, Hashable {
        /// The request.
        public let request: ReceivedRequest
        /// The response status, `nil` if the server sent no parseable head (garbage, closed without response).
        public internal(set) var status: Int?
        /// The offset in the resource of the first body byte sent (0 for a 200), `nil` without a resource body.
        public internal(set) var bodyOffset: Int?
        /// Body bytes actually sent for this request (short if the script cut the body; with an overrun
        /// the bytes past the range count too).
        public internal(set) var bodyBytesSent: Int = 0
        /// Interim (`100 Continue`) responses sent before the final one.
        public internal(set) var interimResponsesSent: Int = 0
        /// Pieces of a ``Substitute/raw(_:ending:)`` answer written so far (a write the client's close made
        /// fail counts: the piece's time has come and gone).
        public internal(set) var rawPiecesSent: Int = 0
        /// The fault ``Script/chaos(seed:faultRate:faults:)`` chose for this request; `nil` for a correct
        /// response (and for every request of other scripts).
        public internal(set) var chaosFault: ChaosFault?

        /// The resource byte offsets this response delivered, `nil` if none (with an overrun it runs past the
        /// requested range, and past the resource's end where filler was sent).
        public var deliveredRange: Range<Int>? {
            guard let bodyOffset, bodyBytesSent > 0 else { return nil }
            return bodyOffset..<(bodyOffset + bodyBytesSent)
        }
    }

    /// The loopback address the server listens on, `127.0.0.1` or `::1`.
    public let host: String
    /// The port it listens on (chosen by the kernel).
    public let port: UInt16
    /// Whether connections speak TLS (with the test CA's server certificate by default).
    public let usesTLS: Bool

    let core: Core

    /// Starts listening on a free port of `host` and returns once it accepts connections.
    ///
    /// - Parameters:
    ///   - resource: What every target serves unless the script substitutes something.
    ///   - script: The per-request misbehavior; can be changed later with ``setScript(_:)``.
    ///   - host: `127.0.0.1` or `::1`.
    ///   - tlsCertificate: Serve TLS with this certificate (e.g. `TestCertificateAuthority.shared().server`).
    public init(
        resource: Resource, script: Script = .normal, host: String = "127.0.0.1",
        tlsCertificate: TestCertificateAuthority.CertificateFiles? = nil
    ) throws {
        // A TLS write to a peer that has gone raises SIGPIPE (OpenSSL writes with plain write()); the test
        // process must survive clients that hang up mid-response.
        signal(SIGPIPE, SIG_IGN)
        guard var address = SocketAddressStorage(host: host, port: 0) else {
            throw TestSupportError("MisbehavingServer listens on loopback only, not \(host)")
        }
        let tls = try tlsCertificate.map { try ServerTLSContext(certificate: $0) }
        let listener = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestSupportError("socket failed: \(TestSupportError.describe(errno: errno))") }
        var one: Int32 = 1
        _ = setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard address.withSockAddr({ bind(listener, $0, $1) }) == 0, listen(listener, 128) == 0 else {
            let message = TestSupportError.describe(errno: errno)
            close(listener)
            throw TestSupportError("bind/listen on \(host) failed: \(message)")
        }
        let port: UInt16
        do {
            port = try LoopbackPorts.boundPort(of: listener)
        } catch {
            close(listener)
            throw error
        }
        self.host = host
        self.port = port
        self.usesTLS = tls != nil
        self.core = Core(listener: listener, resource: resource, script: script, tls: tls)
        core.startAccepting()
    }

    deinit {
        core.stop()
    }

    /// `http://127.0.0.1:PORT/path`; with TLS `https://localhost:PORT/path` (the certificate's name); IPv6 in brackets.
    public func url(_ path: String = "/") -> String {
        let authority = host == "::1" ? "[::1]" : (usesTLS ? "localhost" : host)
        return "\(usesTLS ? "https" : "http")://\(authority):\(port)\(path.hasPrefix("/") ? path : "/" + path)"
    }

    /// Replaces the script for all requests that arrive from now on.
    public func setScript(_ script: Script) {
        core.state.withLock { $0.script = script }
    }

    /// Replaces the resource served from now on (for a change between requests without a script).
    public func setResource(_ resource: Resource) {
        core.state.withLock { $0.resource = resource }
    }

    /// Every request so far with what was sent for it, in arrival order.
    public var exchanges: [Exchange] { core.state.withLock { $0.exchanges } }
    /// Every request so far, in arrival order.
    public var requests: [ReceivedRequest] { exchanges.map(\.request) }
    /// Resource body bytes sent over all responses.
    public var bodyBytesSent: Int { exchanges.reduce(0) { $0 + $1.bodyBytesSent } }
    /// Connections accepted so far.
    public var connectionsAccepted: Int { core.state.withLock { $0.connectionsAccepted } }

    /// Sends at most `bytes` body bytes from now on, over all connections together, until ``release()``:
    /// a download then cannot finish before the test lets it, however it splits or retries its requests and
    /// however late the test gets to run. For tests that must act on a download that is still running (pause
    /// it, cancel it, start a second one): they wait for the bytes they need (which the hold lets through),
    /// act, then release. Unlike a time-based pace it does not depend on scheduling.
    public func hold(afterBodyBytes bytes: Int) {
        core.state.withLock { state in
            state.holdBudget = max(0, bytes)
            state.isReleased = false
        }
    }

    /// Ends the hold (``hold(afterBodyBytes:)``) and every drip: bodies go at full speed from now on,
    /// including those being dripped or held right now.
    public func release() {
        core.state.withLock { $0.isReleased = true }
        core.wakeWaiters()
    }

    /// Closes the listener and every connection, ends all stalls, and waits for the server's threads.
    /// Calling it again does nothing.
    public func stop() {
        core.stop()
    }
}

extension MisbehavingServer {
    /// The mutable state, shared by the accept thread, the connection threads and the test.
    struct State: Sendable {
        var script: Script
        var resource: Resource
        var exchanges: [Exchange] = []
        var connectionsAccepted = 0
        /// Open connection sockets by connection id; a socket leaves this table (under the lock) before it is
        /// closed, so `stop()` never shuts down a descriptor number that has been reused.
        var openSockets: [Int: Int32] = [:]
        var isStopped = false
        /// Body bytes that may still be sent before ``MisbehavingServer/release()``; nil when nothing is held.
        var holdBudget: Int?
        /// Whether ``MisbehavingServer/release()`` was called (holds and drips end).
        var isReleased = false
    }

    /// The part of the server the threads hold on to, so that dropping the ``MisbehavingServer`` runs its deinit.
    final class Core: Sendable {
        let state: Mutex<State>
        let tls: ServerTLSContext?
        private let listener: Int32
        /// Signalled on stop so that stalls and drips end at once.
        private let stopSignal = NSCondition()
        private let threads = DispatchGroup()

        init(listener: Int32, resource: Resource, script: Script, tls: ServerTLSContext?) {
            self.listener = listener
            self.tls = tls
            self.state = Mutex(State(script: script, resource: resource))
        }

        func startAccepting() {
            spawn { [self] in acceptLoop() }
        }

        func stop() {
            let sockets: [Int32]? = state.withLock { state in
                guard !state.isStopped else { return nil }
                state.isStopped = true
                // shutdown, not close: it wakes threads blocked in accept/recv/send on these sockets; each
                // thread then closes its own descriptor.
                for fd in state.openSockets.values { shutdown(fd, Int32(SHUT_RDWR)) }
                return Array(state.openSockets.values)
            }
            guard sockets != nil else { return }
            shutdown(listener, Int32(SHUT_RDWR))
            stopSignal.lock()
            stopSignal.broadcast()
            stopSignal.unlock()
            _ = threads.wait(timeout: .now() + 10)
        }

        var isStopped: Bool { state.withLock { $0.isStopped } }
        var isReleased: Bool { state.withLock { $0.isReleased } }

        /// Wakes every thread waiting in a stall, a drip or a hold, to look at the state again.
        func wakeWaiters() {
            stopSignal.lock()
            stopSignal.broadcast()
            stopSignal.unlock()
        }

        /// How many of the next `wanted` body bytes may be sent now (at least one), waiting while a hold has
        /// spent its budget; 0 when the server stops meanwhile.
        func bodyAllowance(_ wanted: Int) -> Int {
            stopSignal.lock()
            defer { stopSignal.unlock() }
            while true {
                let granted: Int? = state.withLock { state in
                    if state.isStopped { return 0 }
                    guard let budget = state.holdBudget, !state.isReleased else { return wanted }
                    guard budget > 0 else { return nil }
                    let granted = min(wanted, budget)
                    state.holdBudget = budget - granted
                    return granted
                }
                if let granted { return granted }
                stopSignal.wait()
            }
        }

        /// Sleeps for `stall`, returning early (with `false`) when the server stops.
        func pause(_ stall: Stall) -> Bool {
            stopSignal.lock()
            defer { stopSignal.unlock() }
            switch stall {
            case .seconds(let seconds):
                let deadline = Date().addingTimeInterval(seconds)
                while !isStopped {
                    if !stopSignal.wait(until: deadline) { return !isStopped }
                }
            case .untilStopped:
                // wait() rather than wait(until: .distantFuture), which traps in Foundation on Linux.
                while !isStopped { stopSignal.wait() }
            }
            return false
        }

        private func spawn(_ body: @escaping @Sendable () -> Void) {
            threads.enter()
            let thread = Thread { [threads] in
                body()
                threads.leave()
            }
            thread.name = "misbehaving-server"
            thread.start()
        }

        private func acceptLoop() {
            defer { close(listener) }
            while true {
                // Glibc's accept4 is not visible to Swift, hence accept + FD_CLOEXEC (so that helper processes
                // spawned meanwhile, like nginx or curl, do not inherit the connection).
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                // Every write leaves at once (no Nagle): a script's write that returned is on its way, so a
                // test that waits for it (a copy sent while the client's connection is idle) knows where it is.
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                let connectionID: Int? = state.withLock { state in
                    guard !state.isStopped else { return nil }
                    let id = state.connectionsAccepted
                    state.connectionsAccepted += 1
                    state.openSockets[id] = fd
                    return id
                }
                guard let connectionID else {
                    close(fd)
                    return
                }
                spawn { [self] in
                    serveConnection(fd: fd, id: connectionID)
                    state.withLock { _ = $0.openSockets.removeValue(forKey: connectionID) }
                    close(fd)
                }
            }
        }
    }
}
