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
        /// `proxy == nil`, answered once: asking an optional `ProxyURL` copied it.
        let isDirect: Bool

        init(origin: HTTPOrigin, proxy: ProxyURL?, identity: ConnectionIdentity) {
            self.origin = origin
            self.proxy = proxy
            self.identity = identity
            isDirect = proxy == nil
        }

        /// Only the origin is hashed: a client's keys differ in it almost always, and hashing the network
        /// settings (resolve and connect-to lists, interface) twice per request cost more than the rest of the
        /// checkout. Equality still compares every part, so no connection is handed out across identities.
        func hash(into hasher: inout Hasher) {
            hasher.combine(origin)
        }

        /// Every part compared, the cheap ones first; two keys without a proxy (the usual case) skip comparing
        /// the optional proxies, which copied both.
        static func == (lhs: Key, rhs: Key) -> Bool {
            guard lhs.origin == rhs.origin, lhs.identity == rhs.identity, lhs.isDirect == rhs.isDirect else { return false }
            return lhs.isDirect || lhs.proxy == rhs.proxy
        }
    }

    /// Idle connections, one list per key, each with the moment it came back, the most recent last. A key
    /// whose connections were all taken keeps its empty list (and its capacity): the next return needs no
    /// new one.
    private var idle: [[(connection: HTTPConnection, returned: MonotonicInstant)]] = []
    /// Where each key's list is in `idle`.
    private var slots: [Key: Int] = [:]
    /// The key asked for last and its slot: a client nearly always asks for one origin many times in a row,
    /// and comparing keys costs a fraction of hashing one (host name, network settings) per checkout.
    private var recentKey: Key?
    private var recentSlot = 0
    /// Counts the times every slot was forgotten (`closeAllOnLoop()`): a connection's remembered slot
    /// (`HTTPConnection.poolSlot`) holds only while this is the count it was remembered at.
    private var slotGeneration = 0

    public init(loop: EventLoop, maxIdlePerOrigin: Int = 16) {
        self.loop = loop
        self.maxIdlePerOrigin = maxIdlePerOrigin
    }

    /// The most recently used idle connection to `origin` (through `proxy`, if given), if any is still open.
    /// Only a connection made with the same `identity` (resolve and connect-to rules, address family,
    /// interface, client certificate) is handed out.
    func takeIdleOnLoop(_ origin: HTTPOrigin, proxy: ProxyURL? = nil, identity: ConnectionIdentity = ConnectionIdentity()) -> HTTPConnection? {
        precondition(loop.inEventLoop)
        guard let slot = slot(for: Key(origin: origin, proxy: proxy, identity: identity), adding: false) else { return nil }
        // Popped in place: copying the list out and storing it back made a new array per checkout.
        while let entry = idle[slot].popLast() {
            let connection = entry.connection
            // Always checked, however recently it came back (by the loop's readiness reports or a
            // `recv(MSG_PEEK)`, see `Connection.isReusableOnLoop`; curl polls): bytes a server sent after its
            // response unasked — a response sent twice, a body longer than its `Content-Length` — would
            // otherwise be read as the answer to the next request, and a copy of one file's response passes
            // every check made of the next file's.
            if connection.transport.isReusableOnLoop() { return connection }
            connection.closeOnLoop()
        }
        return nil
    }

    /// Keeps `connection` for reuse, or closes it when the origin already has enough idle ones.
    func returnOnLoop(_ connection: HTTPConnection) {
        precondition(loop.inEventLoop)
        // A connection's key never changes, nor its slot until every slot is forgotten: found once, remembered
        // by the connection, rather than its key made and compared every time it comes back.
        let slot: Int
        if connection.poolSlot.generation == slotGeneration, let remembered = connection.poolSlot.index {
            slot = remembered
        } else {
            slot = self.slot(for: Key(origin: connection.origin, proxy: connection.proxy, identity: connection.identity),
                             adding: true)!
            connection.poolSlot = (slot, slotGeneration)
        }
        guard idle[slot].count < maxIdlePerOrigin, !connection.isClosedOnLoop else {
            connection.closeOnLoop()
            return
        }
        idle[slot].append((connection, MonotonicInstant.now()))
    }

    /// The index in `idle` of `key`'s list; with `adding`, a new empty list is made for a key not seen before.
    private func slot(for key: Key, adding: Bool) -> Int? {
        if recentKey?.isSameKey(as: key) == true { return recentSlot }
        let slot: Int
        if let known = slots[key] {
            slot = known
        } else {
            guard adding else { return nil }
            slot = idle.count
            idle.append([])
            slots[key] = slot
        }
        recentKey = key
        recentSlot = slot
        return slot
    }

    func noteOpenedOnLoop() {
        connectionsOpened += 1
    }

    /// Closes every idle connection.
    public func closeAllOnLoop() {
        precondition(loop.inEventLoop)
        for (connection, _) in idle.joined() { connection.closeOnLoop() }
        idle.removeAll()
        slots.removeAll()
        recentKey = nil
        slotGeneration += 1
    }
}

extension ConnectionPool.Key {
    /// `self == key`, called through optional chaining so that the stored key is compared in place (binding
    /// the optional first copied the whole key).
    fileprivate func isSameKey(as key: ConnectionPool.Key) -> Bool { self == key }
}

/// What else, besides its origin and proxy, decides whether a connection may carry a request: where it was
/// connected (``NetworkSettings``: resolve and connect-to rules, address family, interface) and which client
/// certificate it presented. A connection made under other settings is never reused, even for the same origin.
public struct ConnectionIdentity: Sendable, Hashable {
    /// The parts behind one reference: an identity goes into the pool key of every request (taken and returned),
    /// and copying the settings' rule lists, interface and certificate paths retained each of them.
    private final class Parts: Sendable {
        let network: NetworkSettings
        let clientCertificate: TLSSettings.ClientCertificate?

        init(network: NetworkSettings, clientCertificate: TLSSettings.ClientCertificate?) {
            self.network = network
            self.clientCertificate = clientCertificate
        }
    }

    private let parts: Parts

    /// The network settings the connection was made with.
    public var network: NetworkSettings { parts.network }
    /// The client certificate it offered (https only; recorded for plain HTTP too, so keys stay simple).
    public var clientCertificate: TLSSettings.ClientCertificate? { parts.clientCertificate }

    /// The identity of connections made with `network` and `clientCertificate`; the defaults are plain DNS,
    /// no certificate.
    public init(network: NetworkSettings = NetworkSettings(), clientCertificate: TLSSettings.ClientCertificate? = nil) {
        parts = Parts(network: network, clientCertificate: clientCertificate)
    }

    /// Equal settings and certificate; one client's identity (the same parts) without comparing them.
    public static func == (lhs: ConnectionIdentity, rhs: ConnectionIdentity) -> Bool {
        lhs.parts === rhs.parts
            || (lhs.parts.network == rhs.parts.network && lhs.parts.clientCertificate == rhs.parts.clientCertificate)
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(parts.network)
        hasher.combine(parts.clientCertificate)
    }
}
