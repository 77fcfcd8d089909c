import Glibc
import COpenSSL
import Synchronization

/// Shared TLS state for many connections: the OpenSSL `SSL_CTX` (trust store, protocol limits) and the session
/// cache used for resumption.
///
/// Create one per configuration and reuse it: loading the system CA store costs milliseconds, and sessions can only
/// be resumed by connections made from the same context. A session is offered only to a connection to the same
/// server name and port over the same route as the one that made it; the newest 8 sessions are kept for at most
/// 64 of those, and a TLS 1.3 session is offered once.
public final class TLSContext: Sendable {
    /// OpenSSL's per-connection receive buffer with read-ahead: four maximum-size records per read().
    static let readAheadBufferSize = 64 * 1024

    /// The configuration this context was built from.
    public let configuration: TLSSettings

    // `nonisolated(unsafe)`: OpenSSL documents an SSL_CTX as safe to share once configured, and nothing here
    // changes it after `init`.
    nonisolated(unsafe) let context: OpaquePointer

    /// An `SSL_SESSION` reference. @unchecked Sendable: OpenSSL reference-counts sessions atomically and a session
    /// is not modified once a handshake has produced it, so passing one between threads is safe.
    private struct CachedSession: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// The most server names (per port and route) whose sessions are kept.
    static let sessionCacheCapacity = 64
    /// The most sessions kept per server name, port and route: TLS 1.3 tickets are offered once each, and
    /// connections that open together (a `-j 8` run reconnecting after the server closed its connections)
    /// resume only as many as there are tickets. Servers send two per full handshake (OpenSSL's default).
    static let sessionsPerKey = 8

    /// The newest sessions per ``TLSSessionKey``, each holding one OpenSSL reference.
    private let sessions = Mutex(TLSSessionStore<CachedSession>(capacity: TLSContext.sessionCacheCapacity,
                                                                perKey: TLSContext.sessionsPerKey))
    /// TLS connections (SSL objects) made from this context, each of which starts a handshake: for tests and
    /// statistics.
    let connectionsMade = Atomic<Int>(0)
    /// Handshakes completed, and how many of them resumed a cached session: for tests and statistics.
    let handshakesCompleted = Atomic<Int>(0)
    let handshakesResumed = Atomic<Int>(0)
    /// Reads of application data that found nothing to decrypt, each a `read` that met an empty socket: for
    /// tests that hold the HTTPS read path to one read per short response (a read that finds the socket empty
    /// after every small file costs a system call per file). Counted off the path that returns data.
    let emptyReads = Atomic<Int>(0)

    /// Builds an `SSL_CTX` for `configuration`; fails if the CA file or directory cannot be loaded.
    public init(configuration: TLSSettings = TLSSettings()) throws(TLSSetupError) {
        self.configuration = configuration
        // libssl and libcrypto are loaded here, on the first TLS context, not at process start.
        var reason = [CChar](repeating: 0, count: 512)
        guard haul_openssl_load(&reason, UInt(reason.count)) == 1 else {
            throw TLSSetupError(reason: String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        TLSErrorQueue.clear()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSSetupError(reason: "SSL_CTX_new failed: \(TLSErrorQueue.drain().joined(separator: ": "))")
        }
        self.context = context

        let minimum = configuration.minimumVersion == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION
        _ = haul_SSL_CTX_set_min_proto_version(context, minimum)
        // Partial writes let a large write make progress record by record; the moving buffer flag allows our
        // retry after WANT_WRITE to pass the same bytes from a different address (arrays may move).
        _ = haul_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        // Without read-ahead OpenSSL issues two read() calls per 16 KiB record (header, then body). With it, one
        // read() fetches as many records as fit the buffer; the connection checks SSL_has_pending so bytes held
        // here, invisible to epoll, are never stranded.
        _ = haul_SSL_CTX_set_read_ahead(context, 1)
        SSL_CTX_set_default_read_buffer_len(context, TLSContext.readAheadBufferSize)

        if !configuration.insecure {
            if configuration.usesSystemTrustStore {
                guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                    throw TLSSetupError(reason: "cannot load the system CA store: \(TLSErrorQueue.drain().joined(separator: ": "))")
                }
            } else if SSL_CTX_load_verify_locations(context, configuration.caFile, configuration.caDirectory) != 1 {
                let source = [configuration.caFile, configuration.caDirectory].compactMap { $0 }.joined(separator: ", ")
                throw TLSSetupError(reason: "cannot load CA certificates from \(source): \(TLSErrorQueue.drain().joined(separator: ": "))")
            }
        }

        if let client = configuration.clientCertificate {
            try Self.use(client, in: context)
        }

        if configuration.resumesSessions {
            // Client-side caching with our own store: OpenSSL's internal cache is keyed by session ID, which a
            // client cannot look up by host. The callback hands us each session as soon as it arrives, which for
            // TLS 1.3 is after the handshake, in a NewSessionTicket message.
            _ = haul_SSL_CTX_set_session_cache_mode(context, Int(SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE))
            SSL_CTX_sess_set_new_cb(context) { ssl, session in
                guard let ssl, let session, let owner = SSL_get_ex_data(ssl, 0) else { return 0 }
                let connection = Unmanaged<TLSConnection>.fromOpaque(owner).takeUnretainedValue()
                connection.context.storeSession(session, for: connection.sessionKey)
                return 1  // We keep OpenSSL's reference.
            }
        }
    }

    /// Loads the client certificate chain and its key into `context`, with errors naming the file and
    /// what is wrong with it. An encrypted key is refused rather than prompted for: OpenSSL's default
    /// would read a pass phrase from the terminal, on the event loop.
    private static func use(_ client: TLSSettings.ClientCertificate, in context: OpaquePointer) throws(TLSSetupError) {
        let keyFile = client.keyFile ?? client.certificateFile
        for (what, path) in [("client certificate", client.certificateFile), ("client key", keyFile)] where access(path, R_OK) != 0 {
            throw TLSSetupError(reason: "cannot read the \(what) \(path): \(SystemError.describe(errno: errno))")
        }
        TLSErrorQueue.clear()
        guard SSL_CTX_use_certificate_chain_file(context, client.certificateFile) == 1 else {
            throw TLSSetupError(reason: "the client certificate \(client.certificateFile) holds no usable PEM certificate: \(TLSErrorQueue.drain().joined(separator: ": "))")
        }
        // The pass phrase callback answers nothing and notes that it was asked: only an encrypted key makes
        // OpenSSL ask. The note decides, not the error texts: OpenSSL 3 tries several decoders, and its error
        // queue keeps the last 16 entries, so "bad decrypt" is not always among them (a test saw only
        // "decode error" once).
        var askedForPassPhrase = false
        let loaded = withUnsafeMutablePointer(to: &askedForPassPhrase) { asked in
            SSL_CTX_set_default_passwd_cb_userdata(context, asked)
            SSL_CTX_set_default_passwd_cb(context) { _, _, _, asked in
                asked?.assumingMemoryBound(to: Bool.self).pointee = true
                return 0
            }
            defer { SSL_CTX_set_default_passwd_cb_userdata(context, nil) }
            return SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1
        }
        guard loaded else {
            let reasons = TLSErrorQueue.drain()
            // OpenSSL compares the key with the certificate as it loads it (X509_R_KEY_VALUES_MISMATCH).
            if reasons.contains(where: { $0.contains("key values mismatch") }) {
                throw TLSSetupError(reason: "the client key \(keyFile) does not match the certificate in \(client.certificateFile)")
            }
            if askedForPassPhrase || reasons.contains(where: { $0.contains("bad decrypt") || $0.contains("bad password read") }) {
                throw TLSSetupError(reason: "the client key \(keyFile) is encrypted, and haul reads unencrypted keys only (openssl pkey -in KEY -out PLAIN-KEY decrypts it)")
            }
            throw TLSSetupError(reason: "the client key \(keyFile) holds no usable unencrypted PEM private key: \(reasons.joined(separator: ": "))")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSSetupError(reason: "the client key \(keyFile) does not match the certificate in \(client.certificateFile): \(TLSErrorQueue.drain().joined(separator: ": "))")
        }
    }

    deinit {
        for session in sessions.withLock({ $0.removeAll() }) { SSL_SESSION_free(session.pointer) }
        SSL_CTX_free(context)
    }

    /// Keeps `session` (taking over one reference) as the one to offer for `key`, releasing the one it replaces
    /// (or evicts).
    func storeSession(_ session: OpaquePointer, for key: TLSSessionKey) {
        let released = sessions.withLock { $0.store(CachedSession(pointer: session), for: key) }
        for old in released { SSL_SESSION_free(old.pointer) }
    }

    /// Offers the newest resumable cached session for `key` to `ssl`, if there is one, dropping the ones that can
    /// no longer be resumed on the way. A TLS 1.3 session leaves the cache as it is offered: a ticket is used
    /// once (RFC 8446 §C.4, reuse lets an observer link the connections), and OpenSSL marks it used when the
    /// handshake ends. A TLS 1.2 session stays for the next connection.
    func offerSession(for key: TLSSessionKey, to ssl: OpaquePointer) {
        let released: [CachedSession] = sessions.withLock { cache in
            var released: [CachedSession] = []
            while let session = cache.session(for: key)?.pointer {
                guard SSL_SESSION_is_resumable(session) == 1 else {
                    if let used = cache.takeNewest(for: key) { released.append(used) }
                    continue
                }
                // SSL_set_session takes its own reference: the cache's may be released at once.
                _ = SSL_set_session(ssl, session)
                if SSL_SESSION_get_protocol_version(session) == TLS1_3_VERSION, let offered = cache.takeNewest(for: key) {
                    released.append(offered)
                }
                break
            }
            return released
        }
        for session in released { SSL_SESSION_free(session.pointer) }
    }

    /// Counts a completed handshake.
    func noteHandshake(resumed: Bool) {
        handshakesCompleted.wrappingAdd(1, ordering: .relaxed)
        if resumed { handshakesResumed.wrappingAdd(1, ordering: .relaxed) }
    }

    /// Whether a session is cached for a direct connection to `host`:`port` (for tests and diagnostics).
    public func hasCachedSession(host: String, port: UInt16) -> Bool {
        hasCachedSession(for: TLSSessionKey(serverName: host, port: port))
    }

    /// Whether a session is cached for `key`.
    func hasCachedSession(for key: TLSSessionKey) -> Bool {
        sessions.withLock { $0.session(for: key) != nil }
    }

    /// How many sessions are cached for `key` (for tests).
    func cachedSessionCount(for key: TLSSessionKey) -> Int {
        sessions.withLock { $0.sessionCount(for: key) }
    }
}

/// A ``TLSContext`` could not be created, e.g. because the CA file is missing.
public struct TLSSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed and why.
    public let reason: String
    /// `TLS setup failed: REASON`.
    public var description: String { "TLS setup failed: \(reason)" }
}
