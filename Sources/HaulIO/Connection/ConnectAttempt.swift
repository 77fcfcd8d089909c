/// A connection being established: Happy Eyeballs, then the TLS handshake if any. Cancel it to abandon it.
///
/// Through a proxy the steps are: Happy Eyeballs to the proxy, TLS with the proxy (`https://` proxies), the
/// tunnel (HTTP `CONNECT` or SOCKS5), then TLS with the server inside the tunnel (https origins).
public final class ConnectAttempt: @unchecked Sendable {
    // @unchecked Sendable: every stored property is loop-confined. The async `connect` only moves the reference
    // into loop tasks, and `cancel` is only run on the loop.

    private let host: String
    private let port: UInt16
    private let proxy: ProxyPlan?
    private var completion: ((Result<Connection, ConnectionError>) -> Void)?
    private var connector: HappyEyeballsConnector?
    private var connection: Connection?
    private var proxyHandshake: ProxyHandshake?
    private var cancelled = false
    /// Whether the attempt has completed (or been cancelled).
    private(set) var isFinished = false

    init(host: String, port: UInt16, proxy: ProxyPlan? = nil) {
        self.host = host
        self.port = port
        self.proxy = proxy
    }

    func start(
        tls: TLSContext?,
        options: ConnectionOptions,
        on loop: EventLoop,
        completion: @escaping (Result<Connection, ConnectionError>) -> Void
    ) {
        // A task cancelled before it got here has already run `cancel`.
        guard !cancelled else {
            isFinished = true
            completion(.failure(cancellationError))
            return
        }
        self.completion = completion
        let route = proxy?.route
        // `--connect-to` for a direct connection; through a proxy the route's target already is its target.
        let target = options.network.connectTarget(host: host, port: port)
        let newConnector = HappyEyeballsConnector(
            loop: loop, host: proxy?.proxy.host.name ?? target.host, port: proxy?.proxy.port ?? target.port,
            options: options.socket, network: options.network, attemptDelay: options.attemptDelay, timeout: options.timeouts.connect
        ) { [self] result in
            self.connector = nil
            switch result {
            case .failure(let error):
                finish(.failure(error.through(route)))
            case .success(let socket):
                let connection = Connection(loop: loop, host: host, port: port, options: options, socket: socket,
                                            proxyRoute: route)
                self.connection = connection
                secureProxy(connection, then: { [self] in
                    negotiateTunnel(connection, timeout: options.timeouts.connect, then: { [self] in
                        secureServer(connection, tls: tls)
                    })
                })
            }
        }
        connector = newConnector
        newConnector.start()
    }

    /// TLS with an `https://` proxy, verified against the proxy's own name.
    private func secureProxy(_ connection: Connection, then next: @escaping () -> Void) {
        guard let proxy, let proxyTLS = proxy.proxyTLS else {
            next()
            return
        }
        connection.startHandshake(context: proxyTLS, serverHost: proxy.proxy.host.name, serverPort: proxy.proxy.port) { [self] outcome in
            switch outcome {
            case .success: next()
            case .failure(let error): failed(error.through(proxy.route))
            }
        }
    }

    /// The HTTP `CONNECT` or SOCKS5 exchange, when the plan asks for a tunnel.
    private func negotiateTunnel(_ connection: Connection, timeout: Duration, then next: @escaping () -> Void) {
        guard let proxy, proxy.tunnel else {
            next()
            return
        }
        let handshake = ProxyHandshake(connection: connection, plan: proxy, timeout: timeout)
        proxyHandshake = handshake
        handshake.start { [self] result in
            proxyHandshake = nil
            switch result {
            case .success:
                next()
            case .failure(let error):
                connection.closeOnLoop()
                failed(error)
            }
        }
    }

    /// TLS with the server itself (inside the tunnel, if there is one); SNI and verification use its name.
    private func secureServer(_ connection: Connection, tls: TLSContext?) {
        guard let tls else {
            self.connection = nil
            finish(.success(connection))
            return
        }
        // Through a tunnel the session's route is the proxy; through an HTTP proxy without one there is no TLS
        // with the server here at all.
        let tunnel = proxy.flatMap { $0.tunnel ? $0.proxy : nil }
        connection.startHandshake(context: tls, serverHost: host, serverPort: port, proxyTunnel: tunnel) { [self] outcome in
            switch outcome {
            case .success:
                self.connection = nil
                finish(.success(connection))
            case .failure(let error):
                failed(error.through(proxy?.route))
            }
        }
    }

    private func failed(_ error: ConnectionError) {
        connection = nil
        finish(.failure(error))
    }

    /// Abandons the attempt at once: closes the sockets of every connect attempt still racing, or the connected
    /// socket and its TLS state if the handshake is under way, and completes with a
    /// ``ConnectionError/Kind/closed`` error. Nothing of the attempt runs afterwards (no further connect, no
    /// handshake). Does nothing once the attempt has completed. Loop thread only.
    public func cancel() {
        cancelled = true
        guard let completion else { return }
        self.completion = nil
        isFinished = true
        connector?.cancel()
        connector = nil
        proxyHandshake?.cancel()
        proxyHandshake = nil
        connection?.fail(cancellationError)
        connection = nil
        completion(.failure(cancellationError))
    }

    private var cancellationError: ConnectionError {
        ConnectionError(kind: .closed, host: host, port: port, detail: "connect cancelled")
    }

    private func finish(_ result: Result<Connection, ConnectionError>) {
        guard let completion else {
            if case .success(let connection) = result { connection.closeOnLoop() }
            return
        }
        self.completion = nil
        isFinished = true
        completion(result)
    }
}
