import HaulHTTP

/// How a connection attempt goes through a proxy.
struct ProxyPlan: Sendable {
    /// The proxy and the origin beyond it.
    let route: ProxyRoute
    /// For `https://` proxies: the context for the TLS session with the proxy itself.
    let proxyTLS: TLSContext?
    /// Whether a tunnel is set up (HTTP `CONNECT` or SOCKS5) before the first request. Without one (a plain-HTTP
    /// origin through an HTTP proxy) requests go to the proxy in absolute form.
    let tunnel: Bool
    /// Sent as `User-Agent` with a `CONNECT`.
    let userAgent: String?

    var proxy: ProxyURL { route.proxy }
}

/// Sets up a tunnel on a connection to a proxy: an HTTP `CONNECT` or the SOCKS5 greeting, optional
/// username/password and CONNECT. The replies are decoded, and their meaning decided, by ``ProxyReplyDecoder``;
/// this class only does the I/O and moves between steps. Runs on the connection's loop; completes once,
/// with a ``ConnectionError`` naming the proxy and the step on failure. The whole exchange must finish within
/// `timeout` (the connect timeout).
final class ProxyHandshake: @unchecked Sendable {
    // @unchecked Sendable: all state is loop-confined. The only cross-thread hop is the resolver's completion
    // (socks5:// names), which goes through `loop.execute` before touching anything.
    private let connection: Connection
    private let plan: ProxyPlan
    private let timeout: Duration
    private var completion: ((Result<Void, ConnectionError>) -> Void)?
    private var timer: TimerID?
    private var step: ProxyFailure.Step
    /// Where each read lands; owned here, lent to the connection for one read at a time.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 1)

    init(connection: Connection, plan: ProxyPlan, timeout: Duration) {
        self.connection = connection
        self.plan = plan
        self.timeout = timeout
        self.step = plan.proxy.scheme.isSOCKS ? .socksGreeting : .connectTunnel
    }

    deinit { scratch.deallocate() }

    /// Starts the exchange. Loop thread only.
    func start(completion: @escaping (Result<Void, ConnectionError>) -> Void) {
        self.completion = completion
        let limit = timeout
        timer = connection.loop.scheduleTimer(after: limit) { [self] in
            timer = nil
            fail(.timedOut(limit))
        }
        if plan.proxy.scheme.isSOCKS {
            startSOCKS()
        } else {
            startHTTPConnect()
        }
    }

    /// Abandons the exchange: nothing is reported afterwards. The caller closes the connection.
    func cancel() {
        completion = nil
        if let timer { connection.loop.cancelTimer(timer) }
        timer = nil
    }

    // MARK: HTTP CONNECT

    private func startHTTPConnect() {
        let request = ConnectRequestHead(host: plan.route.targetHost, port: plan.route.targetPort,
                                         userAgent: plan.userAgent, proxyAuthorization: plan.proxy.basicAuthorization)
        let bytes: [UInt8]
        do {
            bytes = try request.serialized()
        } catch {
            fail(.unrepresentable("invalid CONNECT request: \(error)"))
            return
        }
        send(bytes) { [self] in
            receive(.httpConnect(credentialsSent: plan.proxy.basicAuthorization != nil)) { [self] decision in
                expect(decision == .tunnelOpen, decision)
                succeed()
            }
        }
    }

    // MARK: SOCKS5

    private func startSOCKS() {
        let credentials = plan.proxy.userInfo
        send(SOCKS5.greeting(offeringUsernamePassword: credentials != nil)) { [self] in
            receive(.socksMethodSelection(credentialsOffered: credentials != nil)) { [self] decision in
                if decision == .authenticate, let credentials {
                    socksAuthenticate(user: credentials.user, password: credentials.password ?? "")
                } else {
                    expect(decision == .connect, decision)
                    socksConnect()
                }
            }
        }
    }

    private func socksAuthenticate(user: String, password: String) {
        step = .socksAuthentication
        let request: [UInt8]
        do {
            request = try SOCKS5.usernamePasswordRequest(user: user, password: password)
        } catch {
            fail(.unrepresentable(error.message))
            return
        }
        send(request) { [self] in
            receive(.socksAuthentication) { [self] decision in
                expect(decision == .connect, decision)
                socksConnect()
            }
        }
    }

    private func socksConnect() {
        let host = plan.route.targetHost
        if plan.proxy.scheme == .socks5, host.kind == .registeredName {
            // socks5:// resolves here and hands the proxy an address (socks5h:// sends the name).
            step = .resolvingTarget
            let loop = connection.loop
            let network = connection.options.network
            if let pinned = network.pinnedAddresses(host: host.name, port: plan.route.targetPort) {
                sendSOCKSConnect(toFirstOf: network.usable(pinned))
                return
            }
            AddressResolver.resolve(host: host.name, port: plan.route.targetPort) { [self] result in
                loop.execute { [self] in
                    guard completion != nil else { return }
                    switch result {
                    case .success(let addresses):
                        sendSOCKSConnect(toFirstOf: network.usable(addresses))
                    case .failure(let error):
                        fail(.targetNotResolved(error.reason))
                    }
                }
            }
            return
        }
        sendSOCKSConnect(to: SOCKS5.Address(host))
    }

    /// The first of the target's addresses (from DNS or a resolve rule, of the allowed family) to the proxy.
    private func sendSOCKSConnect(toFirstOf addresses: [SocketAddress]) {
        guard let address = addresses.first.flatMap({ SOCKS5.Address(ipLiteral: $0.ipAddress) }) else {
            fail(.targetNotResolved("no usable address"))
            return
        }
        sendSOCKSConnect(to: address)
    }

    private func sendSOCKSConnect(to address: SOCKS5.Address) {
        step = .socksConnect
        let request: [UInt8]
        do {
            request = try SOCKS5.connectRequest(to: address, port: plan.route.targetPort)
        } catch {
            fail(.unrepresentable(error.message))
            return
        }
        send(request) { [self] in
            receive(.socksConnect) { [self] decision in
                expect(decision == .tunnelOpen, decision)
                succeed()
            }
        }
    }

    // MARK: Plumbing

    private func send(_ bytes: [UInt8], then next: @escaping () -> Void) {
        guard completion != nil else { return }
        connection.writeOnLoop(bytes) { [self] error in
            guard completion != nil else { return }
            if let error {
                failTransport(error)
            } else {
                next()
            }
        }
    }

    /// Reads once into `scratch` and calls `handle` with the count; the end of the stream and failures end
    /// the handshake.
    private func readSome(_ handle: @escaping (Int) -> Void) {
        guard completion != nil else { return }
        connection.readOnLoop(into: scratch) { [self] result in
            guard completion != nil else { return }
            switch result {
            case .success(.bytes(let count)):
                handle(count)
            case .success(.endOfStream):
                fail(.closedDuringNegotiation)
            case .failure(let error):
                failTransport(error)
            }
        }
    }

    /// Reads until `reply` is whole and calls `handle` with what it means; failures end the handshake
    /// instead, so `handle` sees only the decisions that move it on.
    private func receive(_ reply: ProxyReplyDecoder.Reply, then handle: @escaping (ProxyReplyDecoder.Decision) -> Void) {
        var decoder = ProxyReplyDecoder(expecting: reply)
        func readMore() {
            readSome { [self] count in
                switch decoder.feed(UnsafeRawBufferPointer(rebasing: scratch[..<count])) {
                case .needMoreInput:
                    readMore()
                case .failed(let reason):
                    fail(reason)
                case let decision:
                    handle(decision)
                }
            }
        }
        readMore()
    }

    /// A decision the step cannot act on is a bug in the decoder, not the proxy's fault.
    private func expect(_ condition: Bool, _ decision: ProxyReplyDecoder.Decision) {
        precondition(condition, "unexpected proxy handshake decision \(decision) at \(step)")
    }

    private func succeed() {
        guard let completion else { return }
        cancel()
        completion(.success(()))
    }

    private func fail(_ reason: ProxyFailure.Reason) {
        guard let completion else { return }
        cancel()
        completion(.failure(ConnectionError(proxyFailure: ProxyFailure(route: plan.route, step: step, reason: reason))))
    }

    /// A transport failure during the exchange, with the route named.
    private func failTransport(_ error: ConnectionError) {
        guard let completion else { return }
        cancel()
        completion(.failure(error.through(plan.route)))
    }
}
