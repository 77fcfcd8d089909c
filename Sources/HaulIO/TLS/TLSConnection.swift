import COpenSSL
import Glibc
import HaulHTTP
import SystemPackage

/// One client-side TLS session over a non-blocking socket, driven by the event loop.
///
/// Loop-confined: OpenSSL's `SSL` object and the thread-local error queue are only touched on the loop thread.
/// The caller owns readiness: each operation reports whether it needs the socket readable or writable before it
/// can make progress, and the caller retries it when that happens.
final class TLSConnection {
    /// Progress of a handshake or write.
    enum Progress: Equatable {
        /// Finished; for writes, this many bytes of plaintext were accepted.
        case done(Int)
        /// Retry when the socket is readable.
        case wantRead
        /// Retry when the socket is writable.
        case wantWrite
    }

    /// Outcome of a read.
    enum ReadOutcome: Equatable {
        /// This many bytes of plaintext were decrypted into the buffer.
        case bytes(Int)
        case wantRead
        case wantWrite
        /// The stream ended; `clean` is false if the peer closed TCP without sending close_notify.
        case closed(clean: Bool)
    }

    /// What the session's records travel over.
    enum Transport {
        /// A connected socket.
        case socket(FileDescriptor)
        /// Another TLS session (with an HTTPS proxy), whose plaintext carries these records: TLS inside TLS.
        case tunnel(TLSConnection)
    }

    let context: TLSContext
    let sessionKey: TLSSessionKey
    private let ssl: OpaquePointer
    private let host: String
    private let port: UInt16
    /// The session this one runs inside, kept alive (and freed) after this one.
    private let outer: TLSConnection?

    /// Prepares a session on `fileDescriptor` (already connected) for `host`, which is used for SNI (unless it
    /// is an IP literal) and for certificate name checks.
    convenience init(context: TLSContext, fileDescriptor: FileDescriptor, host: String, port: UInt16) throws(ConnectionError) {
        try self.init(context: context, transport: .socket(fileDescriptor), host: host, port: port)
    }

    /// Prepares a session for `host` whose records go through `transport`. Over a ``Transport/tunnel(_:)`` the
    /// records are read and written through an OpenSSL SSL BIO (`BIO_f_ssl`) wrapping the outer session, so
    /// the outer session's need for the socket to be readable or writable surfaces here as this session's
    /// `wantRead`/`wantWrite`, and the event loop drives both with the one socket.
    ///
    /// `proxyTunnel` is the proxy whose tunnel (HTTP `CONNECT` or SOCKS5) the socket runs through, if any: a
    /// cached session is offered, and this one's are kept, only for the same name, port and tunnel
    /// (``TLSSessionKey``).
    init(context: TLSContext, transport: Transport, host: String, port: UInt16,
         proxyTunnel: ProxyURL? = nil) throws(ConnectionError) {
        TLSErrorQueue.clear()
        guard let ssl = SSL_new(context.context) else {
            throw ConnectionError(kind: .tlsHandshakeFailed, host: host, port: port,
                                  detail: "SSL_new failed: \(TLSErrorQueue.drain().joined(separator: ": "))")
        }
        context.connectionsMade.wrappingAdd(1, ordering: .relaxed)
        self.ssl = ssl
        self.context = context
        self.host = host
        self.port = port
        if case .tunnel(let outer) = transport { self.outer = outer } else { self.outer = nil }
        self.sessionKey = TLSSessionKey(serverName: host, port: port, through: proxyTunnel)
        // From here on `self` is fully initialized, so a throw below runs deinit, which frees `ssl` (with the
        // socket BIO that SSL_set_fd gives it): the failure path must not free it as well.
        // Unretained: the SSL is freed in our deinit, so the new-session callback can never outlive us.
        _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())

        let configuration = context.configuration
        let isIPLiteral = SocketAddress.isIPLiteral(host)
        var failure: String?
        switch transport {
        case .socket(let fileDescriptor):
            // OpenSSL's socket BIO runs its own read/write on the number; the socket's owner keeps it open.
            if SSL_set_fd(ssl, fileDescriptor.rawValue) != 1 { failure = "SSL_set_fd failed" }
        case .tunnel(let outer):
            // BIO_NOCLOSE: freeing this session's BIO leaves the outer session alone (`outer` owns it).
            if let bio = BIO_new(BIO_f_ssl()) {
                _ = BIO_ctrl(bio, BIO_C_SET_SSL, Int(BIO_NOCLOSE), UnsafeMutableRawPointer(outer.ssl))
                SSL_set_bio(ssl, bio, bio)
            } else {
                failure = "cannot create the BIO for TLS inside TLS"
            }
        }
        // RFC 6066 forbids IP literals in SNI.
        if failure == nil, !isIPLiteral, haul_SSL_set_tlsext_host_name(ssl, host) != 1 { failure = "cannot set SNI to \(host)" }
        if failure == nil, !configuration.insecure {
            SSL_set_verify(ssl, SSL_VERIFY_PEER, nil)
            if isIPLiteral {
                if X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1 { failure = "cannot verify IP address \(host)" }
            } else {
                // Wildcards only as the whole left-most label, as browsers do.
                SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                if SSL_set1_host(ssl, host) != 1 { failure = "cannot verify host name \(host)" }
            }
        } else if failure == nil {
            SSL_set_verify(ssl, SSL_VERIFY_NONE, nil)
        }
        if failure == nil, !configuration.applicationProtocols.isEmpty {
            var wire: [UInt8] = []
            for name in configuration.applicationProtocols {
                wire.append(UInt8(name.utf8.count))
                wire.append(contentsOf: name.utf8)
            }
            // Unlike almost every other OpenSSL call, this one returns 0 on success.
            if SSL_set_alpn_protos(ssl, wire, UInt32(wire.count)) != 0 { failure = "cannot set ALPN" }
        }
        if let failure {
            let reasons = TLSErrorQueue.drain()
            throw ConnectionError(kind: .tlsHandshakeFailed, host: host, port: port,
                                  detail: ([failure] + reasons).joined(separator: ": "))
        }
        if configuration.resumesSessions { context.offerSession(for: sessionKey, to: ssl) }
    }

    deinit { SSL_free(ssl) }

    /// Whether the handshake resumed a cached session instead of doing a full one.
    var sessionReused: Bool { SSL_session_reused(ssl) == 1 }

    /// The protocol chosen through ALPN, if the server picked one.
    var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The negotiated protocol version, e.g. `TLSv1.3`.
    var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// Whether OpenSSL holds received bytes (decrypted or not) that epoll cannot know about, or a read outcome
    /// is waiting to be reported.
    var hasBufferedData: Bool { deferredEnd != nil || holdsReceivedBytes }

    /// Whether OpenSSL holds received bytes, in this session or the one it runs inside: the next read can make
    /// progress without a system call.
    private var holdsReceivedBytes: Bool {
        SSL_has_pending(ssl) == 1 || outer.map { SSL_has_pending($0.ssl) == 1 } ?? false
    }

    /// The most plaintext one TLS record carries (RFC 8446 §5.1).
    static let maximumRecordPlaintext = 16 * 1024

    /// Advances the handshake.
    func handshake() throws(ConnectionError) -> Progress {
        TLSErrorQueue.clear()
        let result = SSL_connect(ssl)
        if result == 1 {
            context.noteHandshake(resumed: sessionReused)
            return .done(0)
        }
        let savedErrno = Glibc.errno
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: throw handshakeError(code: code, savedErrno: savedErrno)
        }
    }

    /// An end or failure met while filling a buffer that already held bytes; reported by the next read.
    private var deferredEnd: Result<ReadOutcome, ConnectionError>?

    /// Decrypts straight into `buffer`, record after record until it is full or OpenSSL needs the socket, so that
    /// one delivery carries many 16 KiB records instead of one.
    ///
    /// Less than a full record's worth of plaintext with nothing more held by OpenSSL is handed over at once: it
    /// is a short response (a small file, a head), and another record would take a `read` that nearly always
    /// finds the socket empty. The connection's next read, if its reader wants one, makes that call anyway.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(ConnectionError) -> ReadOutcome {
        if let deferredEnd {
            self.deferredEnd = nil
            return try deferredEnd.get()
        }
        var filled = 0
        while filled < buffer.count {
            let outcome: ReadOutcome
            do {
                outcome = try readRecord(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled...]))
            } catch {
                if filled == 0 { throw error }
                deferredEnd = .failure(error)
                break
            }
            if case .bytes(let count) = outcome {
                filled += count
                if filled < TLSConnection.maximumRecordPlaintext && !holdsReceivedBytes { break }
                continue
            }
            if filled == 0 { return outcome }
            if case .closed = outcome { deferredEnd = .success(outcome) }
            break
        }
        return .bytes(filled)
    }

    /// One `SSL_read_ex`: at most one record's worth of plaintext.
    @inline(__always)
    private func readRecord(into buffer: UnsafeMutableRawBufferPointer) throws(ConnectionError) -> ReadOutcome {
        var count = 0
        if SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count) == 1 { return .bytes(count) }
        let savedErrno = Glibc.errno
        let code = SSL_get_error(ssl, 0)
        switch code {
        case SSL_ERROR_WANT_READ:
            context.emptyReads.wrappingAdd(1, ordering: .relaxed)
            return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            return .closed(clean: true)
        case SSL_ERROR_SSL:
            let (unexpectedEOF, reasons) = TLSErrorQueue.drainReportingUnexpectedEOF()
            if unexpectedEOF { return .closed(clean: false) }
            throw ConnectionError(kind: .tlsFailure, host: host, port: port, detail: reasons.joined(separator: ": "))
        case SSL_ERROR_SYSCALL:
            _ = TLSErrorQueue.drain()
            if savedErrno == 0 { return .closed(clean: false) }
            throw ConnectionError(kind: .ioFailure, host: host, port: port,
                                  systemError: SystemError(call: "SSL_read", errno: savedErrno))
        default:
            throw ConnectionError(kind: .tlsFailure, host: host, port: port,
                                  detail: "SSL_read error \(code): \(TLSErrorQueue.drain().joined(separator: ": "))")
        }
    }

    /// Encrypts and sends as much of `buffer` as the socket takes.
    @inline(__always)
    func write(from buffer: UnsafeRawBufferPointer) throws(ConnectionError) -> Progress {
        var count = 0
        if SSL_write_ex(ssl, buffer.baseAddress, buffer.count, &count) == 1 { return .done(count) }
        let savedErrno = Glibc.errno
        let code = SSL_get_error(ssl, 0)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_SYSCALL where savedErrno != 0:
            _ = TLSErrorQueue.drain()
            throw ConnectionError(kind: .ioFailure, host: host, port: port,
                                  systemError: SystemError(call: "SSL_write", errno: savedErrno))
        default:
            throw ConnectionError(kind: .tlsFailure, host: host, port: port,
                                  detail: TLSErrorQueue.drain().joined(separator: ": ").nonEmpty ?? "SSL_write error \(code)")
        }
    }

    /// Whether an idle session can carry another request: processes whatever records arrived meanwhile (late
    /// session tickets are fine; close_notify, an alert or unsolicited application data are not).
    func isUsableWhileIdle() -> Bool {
        if deferredEnd != nil { return false }
        TLSErrorQueue.clear()
        var byte: UInt8 = 0
        var count = 0
        if SSL_peek_ex(ssl, &byte, 1, &count) == 1 { return false }
        let code = SSL_get_error(ssl, 0)
        TLSErrorQueue.clear()
        return code == SSL_ERROR_WANT_READ
    }

    /// Sends close_notify without waiting for the peer's; best effort, since the socket is closed right after.
    func shutdown() {
        TLSErrorQueue.clear()
        _ = SSL_shutdown(ssl)
        TLSErrorQueue.clear()
    }

    /// Explains a failed handshake: OpenSSL's reason, plus the certificate verification result when that is
    /// what failed, e.g. `certificate verify failed: self-signed certificate`.
    private func handshakeError(code: Int32, savedErrno: Int32) -> ConnectionError {
        let reasons = TLSErrorQueue.drain()
        let verifyResult = SSL_get_verify_result(ssl)
        var parts = reasons
        if verifyResult != X509_V_OK, let text = X509_verify_cert_error_string(verifyResult) {
            if parts.isEmpty { parts.append("certificate verify failed") }
            parts.append(String(cString: text))
        }
        if !parts.isEmpty {
            return ConnectionError(kind: .tlsHandshakeFailed, host: host, port: port, detail: parts.joined(separator: ": "))
        }
        if code == SSL_ERROR_SYSCALL && savedErrno != 0 {
            return ConnectionError(kind: .tlsHandshakeFailed, host: host, port: port,
                                   systemError: SystemError(call: "SSL_connect", errno: savedErrno))
        }
        return ConnectionError(kind: .tlsHandshakeFailed, host: host, port: port,
                               detail: "the server closed the connection during the handshake")
    }
}

extension String {
    /// `nil` for the empty string, for `??` fallbacks.
    var nonEmpty: String? { isEmpty ? nil : self }
}
