import COpenSSL
import Glibc

/// A server-side OpenSSL context for the ``MisbehavingServer``, loaded from PEM files (the test CA's).
final class ServerTLSContext: @unchecked Sendable {
    // @unchecked Sendable: the SSL_CTX is configured in init and only read (SSL_new) afterwards, which OpenSSL allows
    // from any thread.
    let context: OpaquePointer

    init(certificate: TestCertificateAuthority.CertificateFiles) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw TestSupportError("SSL_CTX_new failed") }
        self.context = context
        guard SSL_CTX_use_certificate_chain_file(context, certificate.certificatePath) == 1,
            SSL_CTX_use_PrivateKey_file(context, certificate.keyPath, SSL_FILETYPE_PEM) == 1
        else {
            throw TestSupportError("could not load \(certificate.certificatePath) / \(certificate.keyPath) into OpenSSL")
        }
        _ = haul_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
    }

    deinit {
        SSL_CTX_free(context)
    }
}

/// The byte stream of one accepted connection, plain or TLS; the socket itself belongs to the server.
protocol ServerTransport: AnyObject {
    /// Reads into `buffer`: the byte count, 0 at end of stream, negative on error.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int
    /// Writes all of `bytes`; false if the peer is gone.
    func write(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Ends the stream: with `graceful`, a TLS close_notify first; without, the socket is simply closed
    /// afterwards, which a TLS client sees as a truncation attack.
    func finish(graceful: Bool)
}

extension ServerTransport {
    func write(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { write($0) }
    }
}

final class PlainTransport: ServerTransport {
    private let fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count < 0 && errno == EINTR { continue }
            return count
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            offset += count
        }
        return true
    }

    func finish(graceful: Bool) {}
}

final class TLSTransport: ServerTransport {
    private let ssl: OpaquePointer

    /// Performs the server handshake on `fd`; `nil` if it fails (client rejected the certificate, went away, or
    /// the server is stopping).
    init?(fd: Int32, context: ServerTLSContext) {
        guard let ssl = SSL_new(context.context) else { return nil }
        self.ssl = ssl
        guard SSL_set_fd(ssl, fd) == 1, SSL_accept(ssl) == 1 else {
            ERR_clear_error()
            return nil
        }
    }

    deinit {
        SSL_free(ssl)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        if count <= 0 {
            ERR_clear_error()
            return SSL_get_error(ssl, count) == SSL_ERROR_ZERO_RETURN ? 0 : -1
        }
        return Int(count)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = SSL_write(ssl, bytes.baseAddress! + offset, Int32(min(bytes.count - offset, 1 << 20)))
            if count <= 0 {
                ERR_clear_error()
                return false
            }
            offset += Int(count)
        }
        return true
    }

    func finish(graceful: Bool) {
        if graceful {
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
        }
    }
}
