import HaulHTTP

/// Which cached TLS session a new connection may offer: only one made with the same server name, on the same
/// port, over the same route.
///
/// A resumed handshake skips the certificate check (the session carries the verdict of the full handshake that
/// made it), and a session ticket identifies the client to every server and observer it is shown to. So a
/// session is never offered:
/// - under another name, even one for the same address (`localhost` and `127.0.0.1` are two keys, and names
///   are compared exactly as given): SNI and the certificate's name check were made for the name that is in the
///   key;
/// - on another port: another service, perhaps another server;
/// - over another route: a session made directly is not offered inside a proxy's tunnel or the other way
///   round, nor one made through one proxy through another (or with other proxy credentials), which would link
///   the two routes for the server.
///
/// Trust settings are not part of the key because the cache belongs to one ``TLSContext``, built from one
/// ``TLSSettings``: a session verified against one set of CAs, or made with verification off (`insecure`), is
/// never offered by a context with other settings.
struct TLSSessionKey: Hashable, Sendable, CustomStringConvertible {
    /// The name the certificate is checked against, sent as SNI unless it is an IP address.
    let serverName: String
    /// The server's port.
    let port: UInt16
    /// The proxy whose tunnel the TLS session runs inside; `nil` for a session with the host at the other end
    /// of the socket (a direct connection, or the TLS session with an `https://` proxy itself).
    let tunnel: ProxyURL?

    init(serverName: String, port: UInt16, through tunnel: ProxyURL? = nil) {
        self.serverName = serverName
        self.port = port
        self.tunnel = tunnel
    }

    /// `localhost:8443`, `example.org:443 through http://127.0.0.1:3128` (no credentials shown).
    var description: String {
        let endpoint = SocketAddress.endpoint(host: serverName, port: port)
        return tunnel.map { "\(endpoint) through \($0)" } ?? endpoint
    }
}

/// The sessions a ``TLSContext`` keeps for resumption: the newest one per ``TLSSessionKey``, for at most
/// `capacity` keys. When a session for a new key would exceed that, the key whose session was stored least
/// recently is dropped, so a list of URLs on thousands of hosts holds a bounded number of sessions (a few KiB
/// each) rather than one per host.
///
/// A pure value: `Session` is whatever the owner keeps (an `SSL_SESSION` reference in ``TLSContext``, plain
/// values in tests). Every session it lets go of — replaced, evicted or removed — is handed back to the caller,
/// which releases it.
struct TLSSessionStore<Session> {
    /// The most keys kept.
    let capacity: Int
    private var entries: [TLSSessionKey: (session: Session, stored: UInt64)] = [:]
    /// Bumped by every store: the order in which sessions arrived.
    private var clock: UInt64 = 0

    init(capacity: Int) {
        precondition(capacity > 0, "a session store needs room for one key")
        self.capacity = capacity
    }

    /// How many keys have a session.
    var count: Int { entries.count }

    /// The session to offer for `key`, if there is one.
    func session(for key: TLSSessionKey) -> Session? { entries[key]?.session }

    /// Keeps `session` as the one to offer for `key`; returns the sessions let go of: the one it replaces, or
    /// the least recently stored one when a new key needs room.
    mutating func store(_ session: Session, for key: TLSSessionKey) -> [Session] {
        clock &+= 1
        if let previous = entries.updateValue((session, clock), forKey: key) { return [previous.session] }
        guard entries.count > capacity,
              let oldest = entries.min(by: { $0.value.stored < $1.value.stored })?.key,
              let evicted = entries.removeValue(forKey: oldest) else { return [] }
        return [evicted.session]
    }

    /// Forgets the session for `key` (one that can no longer be resumed), returning it.
    mutating func remove(_ key: TLSSessionKey) -> Session? { entries.removeValue(forKey: key)?.session }

    /// Forgets every session, returning them.
    mutating func removeAll() -> [Session] {
        let sessions = entries.values.map(\.session)
        entries.removeAll()
        return sessions
    }
}
