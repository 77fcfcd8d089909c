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

    /// What a pooled connection can be reused for: one origin, directly or through one proxy.
    struct Key: Hashable {
        let origin: HTTPOrigin
        let proxy: ProxyURL?
    }

    private var idle: [Key: [HTTPConnection]] = [:]

    public init(loop: EventLoop, maxIdlePerOrigin: Int = 16) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
    }

    /// The most recently used idle connection to `origin` (through `proxy`, if given), if any is still open.
    func takeIdleOnLoop(_ origin: HTTPOrigin, proxy: ProxyURL? = nil) -> HTTPConnection? {
        precondition(loop.inEventLoop)
        let key = Key(origin: origin, proxy: proxy)
        while var connections = idle[key], let connection = connections.popLast() {
            idle[key] = connections.isEmpty ? nil : connections
            if connection.transport.isReusableOnLoop() { return connection }
            connection.transport.closeOnLoop()
        }
        return nil
    }

    /// Keeps `connection` for reuse, or closes it when the origin already has enough idle ones.
    func returnOnLoop(_ connection: HTTPConnection) {
        precondition(loop.inEventLoop)
        let key = Key(origin: connection.origin, proxy: connection.proxy)
        var connections = idle[key, default: []]
        guard connections.count < maxIdlePerOrigin, !connection.isClosedOnLoop else {
            connection.transport.closeOnLoop()
            return
        }
        connections.append(connection)
        idle[key] = connections
    }

    func noteOpenedOnLoop() {
        connectionsOpened += 1
    }

    /// Closes every idle connection.
    public func closeAllOnLoop() {
        precondition(loop.inEventLoop)
        for connection in idle.values.joined() { connection.transport.closeOnLoop() }
        idle.removeAll()
    }
}
