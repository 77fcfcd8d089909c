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

/// The sessions a ``TLSContext`` keeps for resumption: the newest `perKey` per ``TLSSessionKey``, for at most
/// `capacity` keys. When a session for a new key would exceed that, the key whose session was stored least
/// recently is dropped, so a list of URLs on thousands of hosts holds a bounded number of sessions (a few KiB
/// each) rather than one per host.
///
/// More than one per key because a TLS 1.3 ticket is offered once (RFC 8446 §C.4; OpenSSL marks a session used
/// when a handshake with it ends): a server sends two after a full handshake, and connections that open
/// together each need one of their own to resume.
///
/// A pure value: `Session` is whatever the owner keeps (an `SSL_SESSION` reference in ``TLSContext``, plain
/// values in tests). Every session it lets go of — replaced, evicted, taken or removed — is handed back to the
/// caller, which releases it.
struct TLSSessionStore<Session> {
    /// The most keys kept.
    let capacity: Int
    /// The most sessions kept per key; a new one beyond that replaces the oldest.
    let perKey: Int
    /// Per key, its sessions oldest first, and when the newest arrived.
    private var entries: [TLSSessionKey: (sessions: [Session], stored: UInt64)] = [:]
    /// Bumped by every store: the order in which sessions arrived.
    private var clock: UInt64 = 0

    init(capacity: Int, perKey: Int = 1) {
        precondition(capacity > 0 && perKey > 0, "a session store needs room for one session")
        self.capacity = capacity
        self.perKey = perKey
    }

    /// How many keys have a session.
    var count: Int { entries.count }

    /// The newest session for `key`, the one to offer, if there is one.
    func session(for key: TLSSessionKey) -> Session? { entries[key]?.sessions.last }

    /// How many sessions `key` has.
    func sessionCount(for key: TLSSessionKey) -> Int { entries[key]?.sessions.count ?? 0 }

    /// Keeps `session` as the newest for `key`; returns the sessions let go of: the oldest of the key's when it
    /// has `perKey` already, or the sessions of the least recently stored key when a new key needs room.
    mutating func store(_ session: Session, for key: TLSSessionKey) -> [Session] {
        clock &+= 1
        if var entry = entries[key] {
            entry.sessions.append(session)
            entry.stored = clock
            let released = Array(entry.sessions.prefix(max(0, entry.sessions.count - perKey)))
            entry.sessions.removeFirst(released.count)
            entries[key] = entry
            return released
        }
        entries[key] = ([session], clock)
        guard entries.count > capacity,
              let oldest = entries.min(by: { $0.value.stored < $1.value.stored })?.key,
              let evicted = entries.removeValue(forKey: oldest) else { return [] }
        return evicted.sessions
    }

    /// Takes the newest session for `key` out of the store (one offered once, or one that can no longer be
    /// resumed), returning it.
    mutating func takeNewest(for key: TLSSessionKey) -> Session? {
        guard var entry = entries[key], let newest = entry.sessions.popLast() else { return nil }
        entries[key] = entry.sessions.isEmpty ? nil : entry
        return newest
    }

    /// Forgets every session for `key`, returning them.
    mutating func remove(_ key: TLSSessionKey) -> [Session] { entries.removeValue(forKey: key)?.sessions ?? [] }

    /// Forgets every session, returning them.
    mutating func removeAll() -> [Session] {
        let sessions = entries.values.flatMap(\.sessions)
        entries.removeAll()
        return sessions
    }
}
