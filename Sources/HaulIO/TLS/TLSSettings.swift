/// How TLS connections are set up: protocol floor, trust, verification and ALPN.
///
/// The default verifies the server certificate against the system CA store and checks the host name.
///
/// Named `TLSSettings`, not `TLSConfiguration`: `import Haul` exports it, and server apps that embed Haul
/// usually import SwiftNIO SSL's `TLSConfiguration` too.
public struct TLSSettings: Sendable, Hashable {
    /// TLS protocol versions a connection may negotiate.
    public enum ProtocolVersion: Sendable, Hashable {
        /// TLS 1.2 (RFC 5246).
        case tls12
        /// TLS 1.3 (RFC 8446).
        case tls13
    }

    /// The oldest protocol accepted. TLS 1.2 by default; nothing older is offered at all.
    public var minimumVersion: ProtocolVersion = .tls12

    /// A PEM file of trusted CA certificates. When this or ``caDirectory`` is set, the system store is not used,
    /// the way `curl --cacert` behaves.
    public var caFile: String?

    /// A directory of hashed CA certificates (`openssl rehash`). See ``caFile`` for the effect on the system store.
    public var caDirectory: String?

    /// Skips certificate and host-name verification entirely. Only for testing against servers one controls:
    /// an insecure connection can be intercepted without any sign.
    public var insecure: Bool = false

    /// ALPN protocols offered, most preferred first. HTTP/1.1 only, since that is all Haul speaks.
    public var applicationProtocols: [String] = ["http/1.1"]

    /// Whether sessions are cached and offered again by later connections to the same server name and port over
    /// the same route (direct, or through the same proxy), for an abbreviated handshake. A TLS 1.2 session is
    /// offered again and again; a TLS 1.3 ticket is offered once (RFC 8446, appendix C.4), and the context keeps
    /// the newest few per server, so that connections opened together each have one. Each context keeps its own
    /// sessions, so a session is never resumed under other trust settings.
    public var resumesSessions: Bool = true

    /// A certificate and private key to present when a server asks for one (curl's `--cert`/`--key`).
    public struct ClientCertificate: Sendable, Hashable {
        /// A PEM file with the certificate, then any intermediate certificates (and the key, when
        /// ``keyFile`` is nil).
        public var certificateFile: String
        /// A PEM file with the unencrypted private key; nil when it is in ``certificateFile``.
        public var keyFile: String?

        /// The certificate in `certificateFile`, its key in `keyFile` (or in the same file).
        public init(certificateFile: String, keyFile: String? = nil) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// The client certificate presented to servers that ask for one; nil for none. Loaded with the
    /// context: a file that cannot be read, an encrypted key or a key of another certificate fails
    /// ``TLSContext/init(configuration:)`` with an error naming the file.
    public var clientCertificate: ClientCertificate?

    /// Verification against the system trust store, TLS 1.2 minimum, ALPN `http/1.1`.
    public init() {}

    /// The default configuration but trusting only the CAs in `caFile`.
    public init(caFile: String) {
        self.caFile = caFile
    }

    /// A configuration that does not verify the server at all; see ``insecure``.
    public static var insecure: TLSSettings {
        var configuration = TLSSettings()
        configuration.insecure = true
        return configuration
    }

    /// Whether the system CA store is loaded.
    var usesSystemTrustStore: Bool { caFile == nil && caDirectory == nil }
}
