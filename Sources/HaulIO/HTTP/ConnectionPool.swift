import HaulHTTP

/// Idle keep-alive connections, per origin (scheme, host, port) and proxy, on one event loop.
///
/// A connection comes back only when its last response ended cleanly and the server allowed reuse (see
/// ``ExchangeSummary/connectionReusable``). A connection through a proxy (a tunnel, or a connection to an HTTP
/// proxy carrying absolute-form requests) is reused only for the same origin through the same proxy.
/// Loop-confined.
public final class ConnectionPool: @unchecked Sendable {
    // @unchecked Sendable: all state is touched only on `loop` (asserted).

    /// The loop the pooled connections belong to.
    public let loop: EventLoop
    /// Most idle connections kept per origin; more are closed when returned.
    public let maxIdlePerOrigin: Int
    /// TCP (and TLS) connections opened through this pool, for tests and statistics.
    public private(set) var connectionsOpened = 0

    /// What a pooled connection can be reused for: one origin, directly or through one proxy, made under one
    /// set of network settings and with one client certificate.
    struct Key: Hashable {
        let origin: HTTPOrigin
        let proxy: ProxyURL?
        let identity: ConnectionIdentity
    }

    /// Idle connections by key, each with the moment it came back, the most recent last.
    private var idle: [Key: [(connection: HTTPConnection, returned: MonotonicInstant)]] = [:]

    /// How recently a connection must have come back for it to be reused without the `recv(MSG_PEEK)` that
    /// asks whether the server closed it meanwhile (100 ms): servers close idle keep-alive connections after
    /// seconds (nginx 75 s, Apache 5 s), and a list of small files takes a connection back within
    /// milliseconds, where the peek was one syscall per file that found nothing. Should a server close one in
    /// that moment all the same, the request fails before any response and ``HTTPClient`` sends it once more
    /// on a new connection, as for any stale connection (the peek cannot see a close still in flight either).
    /// The peek also saw bytes a server sent after its response unasked; within the window such bytes are
    /// read as the start of the next response on the same connection, from the same server: garbage fails
    /// before a head and is sent again on a new connection, anything else is checked as every response is.
    /// (Bytes that arrive just after the next request was sent were never seen by the peek either.)
    public static let unpeekedReuseWindow: Duration = .milliseconds(100)

    public init(loop: EventLoop, maxIdlePerOrigin: Int = 16) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
    }

    /// The most recently used idle connection to `origin` (through `proxy`, if given), if any is still open.
    /// Only a connection made with the same `identity` (resolve and connect-to rules, address family,
    /// interface, client certificate) is handed out.
    func takeIdleOnLoop(_ origin: HTTPOrigin, proxy: ProxyURL? = nil, identity: ConnectionIdentity = ConnectionIdentity()) -> HTTPConnection? {
        precondition(loop.inEventLoop)
        let key = Key(origin: origin, proxy: proxy, identity: identity)
        let now = MonotonicInstant.now()
        while var connections = idle[key], let entry = connections.popLast() {
            idle[key] = connections.isEmpty ? nil : connections
            let connection = entry.connection
            let recent = now < entry.returned.advanced(by: Self.unpeekedReuseWindow)
            if connection.transport.isReusableOnLoop(peeking: !recent) { return connection }
            connection.transport.closeOnLoop()
        }
        return nil
    }

    /// Keeps `connection` for reuse, or closes it when the origin already has enough idle ones.
    func returnOnLoop(_ connection: HTTPConnection) {
        precondition(loop.inEventLoop)
        let key = Key(origin: connection.origin, proxy: connection.proxy, identity: connection.identity)
        var connections = idle[key, default: []]
        guard connections.count < maxIdlePerOrigin, !connection.isClosedOnLoop else {
            connection.transport.closeOnLoop()
            return
        }
        connections.append((connection, MonotonicInstant.now()))
        idle[key] = connections
    }

    func noteOpenedOnLoop() {
        connectionsOpened += 1
    }

    /// Closes every idle connection.
    public func closeAllOnLoop() {
        precondition(loop.inEventLoop)
        for (connection, _) in idle.values.joined() { connection.transport.closeOnLoop() }
        idle.removeAll()
    }
}

/// What else, besides its origin and proxy, decides whether a connection may carry a request: where it was
/// connected (``NetworkSettings``: resolve and connect-to rules, address family, interface) and which client
/// certificate it presented. A connection made under other settings is never reused, even for the same origin.
public struct ConnectionIdentity: Sendable, Hashable {
    /// The network settings the connection was made with.
    public let network: NetworkSettings
    /// The client certificate it offered (https only; recorded for plain HTTP too, so keys stay simple).
    public let clientCertificate: TLSSettings.ClientCertificate?

    /// The identity of connections made with `network` and `clientCertificate`; the defaults are plain DNS,
    /// no certificate.
    public init(network: NetworkSettings = NetworkSettings(), clientCertificate: TLSSettings.ClientCertificate? = nil) {
        self.network = network
        self.clientCertificate = clientCertificate
    }
}
