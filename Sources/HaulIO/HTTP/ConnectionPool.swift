import HaulHTTP

/// Idle keep-alive connections, per origin (scheme, host, port), on one event loop.
///
/// A connection comes back only when its last response ended cleanly and the server allowed reuse (see
/// ``ExchangeSummary/connectionReused``). Loop-confined.
public final class ConnectionPool: @unchecked Sendable {
    // @unchecked Sendable: all state is touched only on `loop` (asserted).

    /// The loop the pooled connections belong to.
    public let loop: EventLoop
    /// Most idle connections kept per origin; more are closed when returned.
    public let maxIdlePerOrigin: Int
    /// TCP (and TLS) connections opened through this pool, for tests and statistics.
    public private(set) var connectionsOpened = 0

    private var idle: [HTTPOrigin: [HTTPConnection]] = [:]

    public init(loop: EventLoop, maxIdlePerOrigin: Int = 16) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
    }

    /// The most recently used idle connection to `origin`, if any is still open.
    func takeIdleOnLoop(_ origin: HTTPOrigin) -> HTTPConnection? {
        precondition(loop.inEventLoop)
        while var connections = idle[origin], let connection = connections.popLast() {
            idle[origin] = connections.isEmpty ? nil : connections
            if connection.transport.isReusableOnLoop() { return connection }
            connection.transport.closeOnLoop()
        }
        return nil
    }

    /// Keeps `connection` for reuse, or closes it when the origin already has enough idle ones.
    func returnOnLoop(_ connection: HTTPConnection) {
        precondition(loop.inEventLoop)
        var connections = idle[connection.origin, default: []]
        guard connections.count < maxIdlePerOrigin, !connection.isClosedOnLoop else {
            connection.transport.closeOnLoop()
            return
        }
        connections.append(connection)
        idle[connection.origin] = connections
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
