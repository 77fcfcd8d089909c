import Foundation
import Glibc
import Synchronization

/// A certificate authority and server certificates generated with the `openssl` CLI at test time.
///
/// Generation takes about a second, so it happens once per test process: use ``shared()``. The files live
/// in a temporary directory that is removed when the process exits. All keys are EC P-256 (fast to make).
public final class TestCertificateAuthority: Sendable {
    /// A certificate and its private key, both PEM files.
    public struct CertificateFiles: Sendable, Hashable {
        /// The PEM certificate.
        public let certificatePath: String
        /// The PEM private key (unencrypted).
        public let keyPath: String
    }

    /// The directory holding every generated file.
    public let directory: String

    /// The CA certificate: what clients pass as trust anchor (`curl --cacert`, Haul's CA file option).
    public var caCertificatePath: String { directory + "/ca.pem" }
    /// The CA's private key.
    public var caKeyPath: String { directory + "/ca.key" }

    /// Signed by the CA, valid now, for DNS:localhost, IP:127.0.0.1 and IP:::1.
    public var server: CertificateFiles { files("server") }
    /// The server certificate path (shorthand for `server.certificatePath`).
    public var serverCertificatePath: String { server.certificatePath }
    /// The server key path (shorthand for `server.keyPath`).
    public var serverKeyPath: String { server.keyPath }

    /// Self-signed with the right names: a client that trusts only the CA must reject it.
    public var selfSigned: CertificateFiles { files("self-signed") }
    /// Signed by the CA and valid now, but only for DNS:wrong.example: hostname verification must fail.
    public var wrongHostname: CertificateFiles { files("wrong-hostname") }
    /// Signed by the CA with the right names, but valid only from 2020-01-01 to 2020-01-02.
    public var expired: CertificateFiles { files("expired") }

    /// Signed by the CA and valid now for DNS:example.test only: a server reached by that name at a
    /// loopback address (`--resolve`, `--connect-to`), where the name alone passes verification.
    public var virtualHost: CertificateFiles { files("virtual-host") }
    /// The name ``virtualHost`` is issued for.
    public static let virtualHostName = "example.test"
    /// Signed by the CA for client authentication (extendedKeyUsage clientAuth), CN=haul-test-client: what
    /// a server with `ssl_verify_client on` and ``caCertificatePath`` as its client CA accepts.
    public var client: CertificateFiles { files("client") }

    /// The names every "right name" certificate carries.
    public static let serverSubjectAlternativeNames = "DNS:localhost,IP:127.0.0.1,IP:::1"

    private static let sharedResult = Result { try TestCertificateAuthority() }

    /// The process-wide authority, generated on first use; throws the generation error on every call if it failed.
    public static func shared() throws -> TestCertificateAuthority {
        try sharedResult.get()
    }

    /// Generates a new authority and all certificates in a new temporary directory.
    ///
    /// Prefer ``shared()``; a private instance is only worth its cost when a test needs a second, unrelated CA.
    public init() throws {
        var template = Array("\(TemporaryDirectory.root)/haul-ca-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw TestSupportError("mkdtemp failed") }
        directory = String(cString: created)
        TemporaryPathsRemovedAtExit.register(directory)
        try generate()
    }

    private func files(_ name: String) -> CertificateFiles {
        CertificateFiles(certificatePath: "\(directory)/\(name).pem", keyPath: "\(directory)/\(name).key")
    }

    private func generate() throws {
        let newECKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try openssl(["req", "-x509"] + newECKey + [
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "3650", "-subj", "/CN=Haul Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        // `openssl ca` rather than `x509 -req`: OpenSSL 3.0's x509 cannot set a validity period in the past,
        // and the expired certificate needs one. Using it for every signed certificate keeps one code path.
        try Self.caConfiguration.write(toFile: directory + "/ca.cnf", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory + "/index.txt", contents: nil)
        try issue("server", subject: "/CN=localhost", extensions: "server_ext", validity: ["-days", "3650"])
        try issue("wrong-hostname", subject: "/CN=wrong.example", extensions: "wrong_hostname_ext", validity: ["-days", "3650"])
        try issue("virtual-host", subject: "/CN=\(Self.virtualHostName)", extensions: "virtual_host_ext", validity: ["-days", "3650"])
        try issue("client", subject: "/CN=haul-test-client", extensions: "client_ext", validity: ["-days", "3650"])
        try issue("expired", subject: "/CN=localhost", extensions: "server_ext",
                  validity: ["-startdate", "20200101000000Z", "-enddate", "20200102000000Z"])
        try openssl(["req", "-x509"] + newECKey + [
            "-keyout", "self-signed.key", "-out", "self-signed.pem", "-days", "3650", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=\(Self.serverSubjectAlternativeNames)",
        ])
    }

    private func issue(_ name: String, subject: String, extensions: String, validity: [String]) throws {
        try openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
        try openssl(["ca", "-batch", "-notext", "-config", "ca.cnf", "-extensions", extensions,
                     "-in", "\(name).csr", "-out", "\(name).pem"] + validity)
    }

    private func openssl(_ arguments: [String]) throws {
        try ChildProcess.runChecked("/usr/bin/openssl", arguments, in: directory)
    }

    /// A minimal `openssl ca` setup: no subject policy beyond a CN, random serials, no copied extensions.
    private static let caConfiguration = """
        [ca]
        default_ca = test_ca

        [test_ca]
        database = index.txt
        new_certs_dir = .
        certificate = ca.pem
        private_key = ca.key
        default_md = sha256
        policy = policy_any
        unique_subject = no
        copy_extensions = none
        rand_serial = yes

        [policy_any]
        commonName = supplied

        [server_ext]
        basicConstraints = CA:FALSE
        extendedKeyUsage = serverAuth
        subjectAltName = \(serverSubjectAlternativeNames)

        [virtual_host_ext]
        basicConstraints = CA:FALSE
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:\(virtualHostName)

        [client_ext]
        basicConstraints = CA:FALSE
        extendedKeyUsage = clientAuth

        [wrong_hostname_ext]
        basicConstraints = CA:FALSE
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:wrong.example

        """
}

/// Paths deleted when the test process exits, for fixtures that live as long as the process (the shared CA).
enum TemporaryPathsRemovedAtExit {
    private static let paths = Mutex<[String]>([])

    static func register(_ path: String) {
        let isFirst = paths.withLock { paths in
            paths.append(path)
            return paths.count == 1
        }
        if isFirst {
            atexit {
                for path in TemporaryPathsRemovedAtExit.paths.withLock({ $0 }) {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
        }
    }
}
