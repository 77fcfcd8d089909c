import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// curl's network habits against a real nginx: `--resolve` and `--connect-to` reach a name at a loopback
/// address (TLS still verifies and sends that name), `-4`/`-6`, `--interface`, and client certificates.
@Suite(.serialized) struct NetworkHabitsTests {
    static let name = TestCertificateAuthority.virtualHostName
    static let fileSize = 3 << 20

    /// nginx serving `/f.bin` with the `example.test` certificate; `/sni` answers with the TLS server name it
    /// was sent. `configure` changes the rest.
    func server(_ configure: (inout NginxConfiguration) throws -> Void = { _ in }) throws -> NginxServer {
        var configuration = NginxConfiguration()
        configuration.certificate = try TestCertificateAuthority.shared().virtualHost
        configuration.extraServerDirectives = "location = /sni { return 200 \"$ssl_server_name\"; }"
        try configure(&configuration)
        let nginx = try NginxServer(configuration: configuration)
        try TestFiles.create(at: nginx.dataDirectory + "/f.bin", size: Self.fileSize, seed: 26)
        return nginx
    }

    func options(_ change: (inout DownloadOptions) throws -> Void = { _ in }) throws -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10, retry: .none)
        options.tls.caFile = try TestCertificateAuthority.shared().caCertificatePath
        try change(&options)
        return options
    }

    func download(_ url: String, _ options: DownloadOptions, from nginx: NginxServer) async throws -> DownloadResult {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await HaulClient(options: options).download(url, to: directory + "/f.bin")
        #expect(try TestFiles.sha256(ofFile: directory + "/f.bin") == TestFiles.sha256(ofFile: nginx.dataDirectory + "/f.bin"))
        return result
    }

    @Test func resolveReachesANameOverHTTPAndHTTPSWhereTLSUsesTheName() async throws {
        let nginx = try server()
        defer { nginx.stop() }
        let https = nginx.httpsPort!
        let options = try options {
            $0.network.resolve = [
                try ResolveRule(parsing: "\(Self.name):\(nginx.httpPort):127.0.0.1"),
                try ResolveRule(parsing: "\(Self.name):\(https):127.0.0.1"),
            ]
        }
        let plain = try await download("http://\(Self.name):\(nginx.httpPort)/f.bin", options, from: nginx)
        #expect(plain.bytes == Int64(Self.fileSize) && plain.connections > 1)
        let secure = try await download("https://\(Self.name):\(https)/f.bin", options, from: nginx)
        #expect(secure.bytes == Int64(Self.fileSize))
        let sni = try await HaulClient(options: options).bytes(from: "https://\(Self.name):\(https)/sni")
        #expect(String(decoding: sni, as: UTF8.self) == Self.name)
    }

    @Test func theCertificateIsCheckedAgainstTheURLsNameNotTheAddress() async throws {
        let nginx = try server()
        defer { nginx.stop() }
        // localhost pinned to the same server: its certificate names example.test only.
        let options = try options { $0.network.resolve = [try ResolveRule(parsing: "localhost:\(nginx.httpsPort!):127.0.0.1")] }
        await #expect {
            _ = try await HaulClient(options: options).bytes(from: "https://localhost:\(nginx.httpsPort!)/sni")
        } throws: { error in
            guard case .tls? = (error as? HaulError)?.reason else { return false }
            return String(describing: error).contains("hostname mismatch")
        }
    }

    @Test func connectToReachesTheServerForAnotherHostAndPort() async throws {
        let nginx = try server()
        defer { nginx.stop() }
        let options = try options {
            $0.network.connectTo = [
                try ConnectToRule(parsing: "\(Self.name):443:127.0.0.1:\(nginx.httpsPort!)"),
                try ConnectToRule(parsing: "\(Self.name):80::\(nginx.httpPort)"),
            ]
            // The second rule keeps the name: it resolves by this rule.
            $0.network.resolve = [try ResolveRule(parsing: "\(Self.name):\(nginx.httpPort):127.0.0.1")]
        }
        let secure = try await download("https://\(Self.name)/f.bin", options, from: nginx)
        #expect(secure.bytes == Int64(Self.fileSize))
        let sni = try await HaulClient(options: options).bytes(from: "https://\(Self.name)/sni")
        #expect(String(decoding: sni, as: UTF8.self) == Self.name)
        let plain = try await download("http://\(Self.name)/f.bin", options, from: nginx)
        #expect(plain.bytes == Int64(Self.fileSize))
    }

    @Test func throughAProxyResolveAppliesToTheProxyAndConnectToToTheTunnel() async throws {
        let nginx = try server()
        defer { nginx.stop() }
        let squid = try SquidProxy()
        defer { squid.stop() }
        let options = try options {
            $0.proxy = ProxySettings(all: try ProxyURL("http://proxy.test:\(squid.port)"))
            $0.network.resolve = [try ResolveRule(parsing: "proxy.test:\(squid.port):127.0.0.1")]
            $0.network.connectTo = [try ConnectToRule(parsing: "\(Self.name):443:127.0.0.1:\(nginx.httpsPort!)")]
        }
        let result = try await download("https://\(Self.name)/f.bin", options, from: nginx)
        #expect(result.bytes == Int64(Self.fileSize))
        let sni = try await HaulClient(options: options).bytes(from: "https://\(Self.name)/sni")
        #expect(String(decoding: sni, as: UTF8.self) == Self.name)
        let log = squid.accessLog(waitingUntil: { $0.contains { $0.method == "CONNECT" } })
        #expect(!log.isEmpty && log.allSatisfy { $0.method == "CONNECT" && $0.url == "127.0.0.1:\(nginx.httpsPort!)" }, "\(log)")
    }

    @Test func ipv4OnlyFailsAgainstAnIPv6OnlyServerAndIPv6OnlyReachesIt() async throws {
        let nginx = try server {
            $0.enableIPv4 = false
            $0.enableIPv6 = true
            $0.enableTLS = false
        }
        defer { nginx.stop() }
        let url = "http://dual.test:\(nginx.httpPort)/f.bin"
        let both = [try ResolveRule(parsing: "dual.test:\(nginx.httpPort):127.0.0.1,::1")]
        await #expect {
            _ = try await download(url, try options { $0.network.resolve = both; $0.network.addressFamily = .ipv4 }, from: nginx)
        } throws: { error in
            String(describing: error).contains("connect to dual.test:\(nginx.httpPort): Connection refused")
        }
        await #expect {
            _ = try await download("http://[::1]:\(nginx.httpPort)/f.bin", try options { $0.network.addressFamily = .ipv4 }, from: nginx)
        } throws: { error in
            String(describing: error).contains("no IPv4 address (-4/--ipv4); it has ::1")
        }
        let result = try await download(url, try options { $0.network.resolve = both; $0.network.addressFamily = .ipv6 }, from: nginx)
        #expect(result.bytes == Int64(Self.fileSize))
    }

    @Test func anInterfaceByNameOrAddressIsUsedAndAMissingOneIsNamed() async throws {
        let nginx = try server { $0.enableTLS = false }
        defer { nginx.stop() }
        let url = nginx.url("/f.bin")
        for interface in [NetworkInterface.device("lo"), .address("127.0.0.1")] {
            let result = try await download(url, try options { $0.network.interface = interface }, from: nginx)
            #expect(result.bytes == Int64(Self.fileSize))
        }
        await #expect {
            _ = try await download(url, try options { $0.network.interface = .device("nosuch0") }, from: nginx)
        } throws: { error in
            String(describing: error).contains("cannot use interface nosuch0: no such network interface")
        }
    }

    @Test func aServerThatRequiresAClientCertificateGetsIt() async throws {
        let ca = try TestCertificateAuthority.shared()
        let nginx = try server { $0.clientCertificateAuthority = ca.caCertificatePath }
        defer { nginx.stop() }
        let url = nginx.url("/f.bin", tls: true).replacingOccurrences(of: "localhost", with: Self.name)
        let resolve = [try ResolveRule(parsing: "\(Self.name):\(nginx.httpsPort!):127.0.0.1")]
        await #expect {
            _ = try await download(url, try options { $0.network.resolve = resolve }, from: nginx)
        } throws: { error in
            guard case .httpStatus(let status, _, _)? = (error as? HaulError)?.reason else { return false }
            return status == 400
        }
        let withCertificate = try options {
            $0.network.resolve = resolve
            $0.tls.clientCertificate = TLSSettings.ClientCertificate(certificateFile: ca.client.certificatePath, keyFile: ca.client.keyPath)
        }
        let result = try await download(url, withCertificate, from: nginx)
        #expect(result.bytes == Int64(Self.fileSize) && result.connections > 1)
    }

    @Test func aClientCertificateThatCannotBeUsedIsNamed() async throws {
        let ca = try TestCertificateAuthority.shared()
        let nginx = try server { $0.clientCertificateAuthority = ca.caCertificatePath }
        defer { nginx.stop() }
        let url = nginx.url("/f.bin", tls: true).replacingOccurrences(of: "localhost", with: Self.name)
        let resolve = [try ResolveRule(parsing: "\(Self.name):\(nginx.httpsPort!):127.0.0.1")]
        var cases: [(TLSSettings.ClientCertificate, String)] = [
            (.init(certificateFile: ca.client.certificatePath, keyFile: ca.server.keyPath),
             "the client key \(ca.server.keyPath) does not match the certificate in \(ca.client.certificatePath)"),
            (.init(certificateFile: ca.directory + "/missing.pem", keyFile: ca.client.keyPath),
             "cannot read the client certificate \(ca.directory)/missing.pem: No such file or directory"),
            (.init(certificateFile: ca.client.keyPath, keyFile: ca.client.keyPath),
             "the client certificate \(ca.client.keyPath) holds no usable PEM certificate"),
        ]
        // An encrypted key is refused at once: OpenSSL's default would ask for its pass phrase on the terminal.
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let encrypted = directory + "/encrypted.key"
        try ChildProcess.runChecked("/usr/bin/openssl", ["pkey", "-in", ca.client.keyPath, "-aes256", "-passout", "pass:secret", "-out", encrypted])
        cases += [(TLSSettings.ClientCertificate(certificateFile: ca.client.certificatePath, keyFile: encrypted),
                              "the client key \(encrypted) is encrypted, and haul reads unencrypted keys only")]
        for (certificate, message) in cases {
            await #expect {
                _ = try await download(url, try options { $0.network.resolve = resolve; $0.tls.clientCertificate = certificate }, from: nginx)
            } throws: { error in
                guard case .tlsSetup? = (error as? HaulError)?.reason else { return false }
                return String(describing: error).contains(message)
            }
        }
    }
}
