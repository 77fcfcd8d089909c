import HaulHTTP

/// Runs HTTP/1.1 exchanges over pooled keep-alive connections on one event loop.
///
/// Exchanges run with ``executeOnLoop(_:handler:completion:)``, everything on the loop thread (the engine's
/// segment workers live there).
///
/// With ``proxy`` settings, the client decides per request origin how to reach it
/// (``ProxySettings/proxy(for:)``): directly, through an HTTP(S) proxy (plain-HTTP origins by absolute-form
/// requests to the proxy, HTTPS origins through a `CONNECT` tunnel with TLS to the origin inside it), or
/// through a SOCKS5 tunnel. Proxy credentials come from the proxy URL. Pooled connections are reused only for
/// the same origin through the same proxy.
public final class HTTPClient: Sendable {
    /// The loop every exchange of this client runs on.
    public let loop: EventLoop
    /// Keep-alive connections of this client.
    public let pool: ConnectionPool
    /// Socket, timeout and buffer settings for new connections.
    public let connectionOptions: ConnectionOptions
    /// The TLS settings; the context itself is built on the first https request, because loading the
    /// system CA store costs tens of milliseconds that a plain-HTTP download should not pay.
    public let tlsConfiguration: TLSSettings
    /// Which proxy each origin is reached through; `nil` (or empty settings) for direct connections. HTTPS
    /// proxies are verified with ``tlsConfiguration`` against their own names.
    public let proxy: ProxySettings?
    let tls = LoopConfinedTLSContext()

    public init(loop: EventLoop, tls: TLSSettings = TLSSettings(),
                connectionOptions: ConnectionOptions = ConnectionOptions(), maxIdlePerOrigin: Int = 16,
                proxy: ProxySettings? = nil) {
        self.loop = loop
        self.pool = ConnectionPool(loop: loop, maxIdlePerOrigin: maxIdlePerOrigin)
        self.connectionOptions = connectionOptions
        self.tlsConfiguration = tls
        self.proxy = proxy
        identity = ConnectionIdentity(network: connectionOptions.network, clientCertificate: tls.clientCertificate)
    }

    /// Sends `request` on an idle connection to its origin (or a new one) and feeds the response to `handler`.
    /// A reused connection that the server had already closed is detected and the request is sent once more
    /// on a new connection. `completion` runs once, on the loop thread.
    ///
    /// The returned ``ExchangeCancellation`` stops the exchange (closing its connection) from the loop thread.
    @discardableResult
    public func executeOnLoop(_ request: RequestHead, handler: any ResponseHandler,
                              completion: @escaping (Result<ExchangeSummary, HTTPClientError>) -> Void) -> ExchangeCancellation {
        precondition(loop.inEventLoop, "HTTPClient.executeOnLoop must be called on the loop thread")
        let cancellation = ExchangeCancellation()
        let origin = request.url.origin
        let proxyURL = proxy?.proxy(for: origin)
        // Plain HTTP through an HTTP(S) proxy: the request itself goes to the proxy, in absolute form.
        let forwards = proxyURL.map { !$0.scheme.isSOCKS && origin.scheme == .http } ?? false
        let route = proxyURL.map { Self.route(to: origin, through: $0, forwards: forwards, network: connectionOptions.network) }
        let bytes: [UInt8]
        do {
            if forwards {
                var head = request
                head.targetForm = .absolute
                head.proxyAuthorization = proxyURL?.basicAuthorization
                bytes = try head.serialized()
            } else if proxyURL != nil {
                bytes = try request.insideTunnel().serialized()
            } else {
                bytes = try request.serialized()
            }
        } catch {
            completion(.failure(.invalidRequest(error)))
            return cancellation
        }
        // The user agent a proxy's CONNECT request names; without a proxy there is none to look up.
        let userAgent = route == nil ? "" : request.headers.firstString("User-Agent") ?? request.userAgent
        let exchange = ClientExchange(client: self, origin: origin, route: route, forwards: forwards, userAgent: userAgent,
                                      request: bytes, requestWasHead: request.method == .head, handler: handler,
                                      cancellation: cancellation, completion: completion)
        if let connection = pool.takeIdleOnLoop(origin, proxy: proxyURL, identity: identity) {
            exchange.run(on: connection, reused: true)
        } else {
            exchange.connectThenRun()
        }
        return cancellation
    }

    /// One exchange of ``executeOnLoop(_:handler:completion:)`` on its way: sent on a pooled connection, sent
    /// once more on a new one when that turns out stale, or sent on a new one. Its callbacks capture only this
    /// object (one allocation per exchange, where capturing its parts made a context for each callback).
    private final class ClientExchange: @unchecked Sendable {
        // @unchecked Sendable: made, called and called back only on the client's loop thread.
        let client: HTTPClient
        let origin: HTTPOrigin
        let route: ProxyRoute?
        let forwards: Bool
        let userAgent: String
        let request: [UInt8]
        let requestWasHead: Bool
        let handler: any ResponseHandler
        let cancellation: ExchangeCancellation
        let completion: (Result<ExchangeSummary, HTTPClientError>) -> Void
        /// The connection of the current attempt, and whether it came from the pool.
        var connection: HTTPConnection?
        var reused = false

        init(client: HTTPClient, origin: HTTPOrigin, route: ProxyRoute?, forwards: Bool, userAgent: String, request: [UInt8],
             requestWasHead: Bool, handler: any ResponseHandler, cancellation: ExchangeCancellation,
             completion: @escaping (Result<ExchangeSummary, HTTPClientError>) -> Void) {
            self.client = client
            self.origin = origin
            self.route = route
            self.forwards = forwards
            self.userAgent = userAgent
            self.request = request
            self.requestWasHead = requestWasHead
            self.handler = handler
            self.cancellation = cancellation
            self.completion = completion
        }

        /// Failures of connections through a proxy name it.
        func routed(_ result: Result<ExchangeSummary, HTTPClientError>) -> Result<ExchangeSummary, HTTPClientError> {
            guard let route, case .failure(.connection(let error)) = result else { return result }
            return .failure(.connection(error.through(route)))
        }

        func run(on connection: HTTPConnection, reused: Bool) {
            guard !cancellation.isCancelled else {
                connection.closeOnLoop()
                completion(routed(.failure(.connection(ConnectionError(kind: .closed, host: origin.host.name, port: origin.port, detail: "cancelled")))))
                return
            }
            cancellation.connection = connection
            self.connection = connection
            self.reused = reused
            connection.exchangeOnLoop(request: request, requestWasHead: requestWasHead, handler: handler) { [self] result in
                exchangeEnded(result)
            }
        }

        private func exchangeEnded(_ result: Result<ExchangeSummary, HTTPClientError>) {
            cancellation.connection = nil
            let connection = self.connection!  // set by `run` before the exchange started
            self.connection = nil
            switch result {
            case .success(let summary):
                if summary.connectionReusable { client.pool.returnOnLoop(connection) }
                completion(result)
            // A cancelled exchange closed its connection itself: that is no stale connection to retry.
            case .failure(let error) where reused && !connection.latestExchangeSawHead && !cancellation.isCancelled
                                           && HTTPClient.isStaleConnection(error):
                connectThenRun()
            case .failure:
                completion(routed(result))
            }
        }

        func connectThenRun() {
            cancellation.attempt = client.connect(origin, route: route, forwards: forwards, userAgent: userAgent) { [self] result in
                connected(result)
            }
        }

        private func connected(_ result: Result<HTTPConnection, HTTPClientError>) {
            cancellation.attempt = nil
            switch result {
            case .success(let connection): run(on: connection, reused: false)
            // Reported from inside `cancelOnLoop`: complete on the loop's next turn, after the canceller has
            // returned, as a cancelled exchange does.
            case .failure(let error) where cancellation.isCancelled:
                client.loop.scheduleTimer(after: .zero) { [completion] in completion(.failure(error)) }
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    /// What this client's connections are made with besides origin and proxy (their pool key's rest), made once.
    let identity: ConnectionIdentity

    /// The way to `origin` through `proxy`: a tunnel goes to the connect-to target (`--connect-to`, as curl's
    /// tunnels do), a request forwarded in absolute form names the origin itself.
    static func route(to origin: HTTPOrigin, through proxy: ProxyURL, forwards: Bool, network: NetworkSettings) -> ProxyRoute {
        let target = network.connectTarget(host: origin.host.name, port: origin.port)
        guard !forwards, target.host != origin.host.name || target.port != origin.port,
              let host = try? HTTPURL(target.host.contains(":") ? "http://[\(target.host)]/" : "http://\(target.host)/").host else {
            return ProxyRoute(proxy: proxy, targetHost: origin.host, targetPort: origin.port)
        }
        return ProxyRoute(proxy: proxy, targetHost: host, targetPort: target.port)
    }

    /// Closes the pooled connections.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                self.pool.closeAllOnLoop()
                continuation.resume()
            }
        }
    }

    /// Starts connecting to `origin` (through `route`'s proxy, if any; `forwards` when requests will go to an HTTP
    /// proxy in absolute form rather than through a tunnel); returns the attempt while it is in flight (nil if it
    /// already completed).
    fileprivate func connect(_ origin: HTTPOrigin, route: ProxyRoute?, forwards: Bool, userAgent: String,
                         completion: @escaping (Result<HTTPConnection, HTTPClientError>) -> Void) -> ConnectAttempt? {
        var tlsContext: TLSContext? = nil
        if origin.scheme == .https || route?.proxy.scheme == .https {
            do {
                tlsContext = try tls.context(for: tlsConfiguration)
            } catch {
                completion(.failure(.tlsSetup(error)))
                return nil
            }
        }
        let plan = route.map {
            ProxyPlan(route: $0, proxyTLS: $0.proxy.scheme == .https ? tlsContext : nil, tunnel: !forwards, userAgent: userAgent)
        }
        let attempt = Connection.connectOnLoop(to: origin.host.name, port: origin.port,
                                               tls: origin.scheme == .https ? tlsContext : nil, proxy: plan,
                                               options: connectionOptions, on: loop) { [pool, identity] result in
            switch result {
            case .success(let connection):
                pool.noteOpenedOnLoop()
                completion(.success(HTTPConnection(transport: connection, origin: origin, forwardsThroughProxy: forwards, identity: identity)))
            case .failure(let error):
                completion(.failure(.connection(error)))
            }
        }
        return attempt.isFinished ? nil : attempt
    }

    /// A server closing an idle keep-alive connection shows up as EOF or a reset before any response byte.
    static func isStaleConnection(_ error: HTTPClientError) -> Bool {
        switch error {
        case .malformedResponse(let parseError, _, _):
            return parseError.kind == .connectionClosedBeforeResponse
        case .connection(let connectionError):
            return connectionError.kind == .ioFailure || connectionError.kind == .closed
        default:
            return false
        }
    }
}

/// Stops one exchange started with ``HTTPClient/executeOnLoop(_:handler:completion:)``. Loop-confined.
public final class ExchangeCancellation: @unchecked Sendable {
    // @unchecked Sendable: touched only on the client's loop thread.
    fileprivate var connection: HTTPConnection?
    /// The exchange's connection while it is still being established (resolution, TCP, TLS handshake).
    fileprivate var attempt: ConnectAttempt?
    fileprivate private(set) var isCancelled = false

    init() {}

    /// Stops the exchange at once; its completion then reports a ``ConnectionError/Kind/closed`` error (unless
    /// it had already completed). An exchange still connecting has its connect attempts and any TLS handshake
    /// abandoned on the spot (sockets closed, TLS state freed), so no handshake starts after this returns; one
    /// under way has its connection closed.
    public func cancelOnLoop() {
        isCancelled = true
        if let attempt {
            self.attempt = nil
            attempt.cancel()
        }
        connection?.closeOnLoop()
        connection = nil
    }
}

/// The client's TLS context, built on first use on the loop thread and kept.
final class LoopConfinedTLSContext: @unchecked Sendable {
    // @unchecked Sendable: read and written only on the client's loop thread.
    /// The context, once built.
    private(set) var context: TLSContext?

    func context(for configuration: TLSSettings) throws(TLSSetupError) -> TLSContext {
        if let context { return context }
        let made = try TLSContext(configuration: configuration)
        context = made
        return made
    }
}

extension RequestHead {
    /// The head as sent through a tunnel (HTTP `CONNECT`, SOCKS5) to the origin at its far end: without the
    /// `Proxy-Authorization` fields the caller's headers carry. That field identifies the client to a proxy
    /// (RFC 9110 §11.7.2), and the origin beyond a tunnel is none: sent there it would hand the proxy's
    /// credential to the origin server, and the proxy would never see it (a `CONNECT` carries the credentials
    /// of the proxy URL). Forwarded requests keep it (they go to the proxy), and so do direct ones (the server
    /// is whatever the user said it is). Pure.
    func insideTunnel() -> RequestHead {
        guard headers.contains("proxy-authorization") else { return self }
        var kept = HTTPFields()
        for index in 0..<headers.count where !asciiCaseInsensitiveEquals(headers.name(at: index), "proxy-authorization") {
            kept.append(name: headers.name(at: index), value: headers.value(at: index))
        }
        var head = self
        head.headers = kept
        return head
    }
}
