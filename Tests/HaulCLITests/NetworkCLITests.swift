import Foundation
import Glibc
import Testing
import HaulTestSupport

/// curl's network flags on haul's command line: `--resolve`, `--connect-to`, `-4`/`-6`, `--interface`,
/// `--cert`/`--key`, and `-H 'Host: …'` answered with them. Each test starts the nginx it needs.
@Suite(.serialized) struct NetworkCLITests {
    static let name = TestCertificateAuthority.virtualHostName
    static let size = 2 << 20

    /// nginx with the `example.test` certificate serving `/f.bin`.
    func server(_ configure: (inout NginxConfiguration) throws -> Void = { _ in }) throws -> NginxServer {
        var configuration = NginxConfiguration()
        configuration.certificate = try TestCertificateAuthority.shared().virtualHost
        try configure(&configuration)
        let nginx = try NginxServer(configuration: configuration)
        try TestFiles.create(at: nginx.dataDirectory + "/f.bin", size: Self.size, seed: 626)
        return nginx
    }

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-cli-net-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @discardableResult
    func haul(_ arguments: [String]) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync", "-q", "-c", "4"] + arguments, timeout: 60)
    }

    /// Runs haul into a fresh directory and says whether it saved the server's file there, byte for byte.
    func fetches(_ arguments: [String], from nginx: NginxServer) throws -> (ProcessResult, saved: Bool) {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul(["-o", directory + "/f.bin"] + arguments)
        let expected = try TestFiles.sha256(ofFile: nginx.dataDirectory + "/f.bin")
        let saved = run.exitStatus == 0 && (try? TestFiles.sha256(ofFile: directory + "/f.bin")) == expected
        return (run, saved)
    }

    @Test func resolveReachesANameOverHTTPAndHTTPS() throws {
        let nginx = try server()
        defer { nginx.stop() }
        let ca = try TestCertificateAuthority.shared()
        let plain = try fetches(["--resolve", "\(Self.name):\(nginx.httpPort):127.0.0.1", "http://\(Self.name):\(nginx.httpPort)/f.bin"], from: nginx)
        #expect(plain.saved, "\(plain.0.errorText)")
        let https = nginx.httpsPort!
        let secure = try fetches(["--cacert", ca.caCertificatePath, "--resolve", "+\(Self.name):\(https):[::1],127.0.0.1",
                                  "https://\(Self.name):\(https)/f.bin"], from: nginx)
        #expect(secure.saved, "\(secure.0.errorText)")
        let (wrongName, _) = try fetches(["--cacert", ca.caCertificatePath, "--retries", "0", "--resolve", "localhost:\(https):127.0.0.1",
                                          "https://localhost:\(https)/f.bin"], from: nginx)
        #expect(wrongName.exitStatus == 4 && wrongName.errorText.contains("hostname mismatch"),
                "the certificate is checked against the URL's name: \(wrongName.errorText)")
    }

    @Test func connectToSendsTheRequestsForOneHostAndPortElsewhere() throws {
        let nginx = try server()
        defer { nginx.stop() }
        let ca = try TestCertificateAuthority.shared()
        let secure = try fetches(["--cacert", ca.caCertificatePath, "--connect-to", "\(Self.name):443:127.0.0.1:\(nginx.httpsPort!)",
                                  "https://\(Self.name)/f.bin"], from: nginx)
        #expect(secure.saved, "\(secure.0.errorText)")
        let anyHost = try fetches(["--connect-to", "::127.0.0.1:\(nginx.httpPort)", "http://\(Self.name)/f.bin"], from: nginx)
        #expect(anyHost.saved, "\(anyHost.0.errorText)")
    }

    @Test func ipv4AndIPv6Only() throws {
        let nginx = try server {
            $0.enableIPv4 = false
            $0.enableIPv6 = true
            $0.enableTLS = false
        }
        defer { nginx.stop() }
        let port = nginx.httpPort
        let both = ["--resolve", "dual.test:\(port):127.0.0.1,::1", "http://dual.test:\(port)/f.bin"]
        let ipv4 = try fetches(["-4", "--retries", "0"] + both, from: nginx)
        #expect(ipv4.0.exitStatus == 3 && ipv4.0.errorText.contains("connect to dual.test:\(port): Connection refused"), "\(ipv4.0.errorText)")
        let literal = try fetches(["--ipv4", "--retries", "0", "http://[::1]:\(port)/f.bin"], from: nginx)
        #expect(literal.0.exitStatus == 3 && literal.0.errorText.contains("no IPv4 address (-4/--ipv4); it has ::1"), "\(literal.0.errorText)")
        let ipv6 = try fetches(["-6"] + both, from: nginx)
        #expect(ipv6.saved, "\(ipv6.0.errorText)")
        let longForm = try fetches(["--ipv6"] + both, from: nginx)
        #expect(longForm.saved, "\(longForm.0.errorText)")
        let contradiction = try haul(["-4", "-6", "http://[::1]:\(port)/f.bin"])
        #expect(contradiction.exitStatus == 2 && contradiction.errorText.contains("-4/--ipv4 and -6/--ipv6 contradict each other"))
    }

    @Test func interfaceByNameOrAddressAndAMissingOne() throws {
        let nginx = try server { $0.enableTLS = false }
        defer { nginx.stop() }
        for interface in ["lo", "127.0.0.1"] {
            let run = try fetches(["--interface", interface, nginx.url("/f.bin")], from: nginx)
            #expect(run.saved, "--interface \(interface): \(run.0.errorText)")
        }
        let (missing, _) = try fetches(["--interface", "nosuch0", nginx.url("/f.bin")], from: nginx)
        #expect(missing.exitStatus == 2)
        #expect(missing.errorText == "haul: --interface nosuch0: this machine has no network interface of that name (see `ip link`)\n")
        let (notLocal, _) = try fetches(["--interface", "192.0.2.254", "--retries", "0", nginx.url("/f.bin")], from: nginx)
        #expect(notLocal.exitStatus == 3 && notLocal.errorText.contains("cannot use local address 192.0.2.254: no interface of this machine has that address"),
                "\(notLocal.errorText)")
    }

    @Test func clientCertificates() throws {
        let ca = try TestCertificateAuthority.shared()
        let nginx = try server { $0.clientCertificateAuthority = ca.caCertificatePath }
        defer { nginx.stop() }
        let https = nginx.httpsPort!
        let common = ["--cacert", ca.caCertificatePath, "--resolve", "\(Self.name):\(https):127.0.0.1", "--retries", "0"]
        let url = "https://\(Self.name):\(https)/f.bin"
        let without = try fetches(common + [url], from: nginx)
        #expect(without.0.exitStatus == 5 && without.0.errorText.contains("HTTP 400"), "\(without.0.errorText)")
        let with = try fetches(common + ["--cert", ca.client.certificatePath, "--key", ca.client.keyPath, url], from: nginx)
        #expect(with.saved, "\(with.0.errorText)")

        // The key in the certificate's file, as curl reads --cert without --key.
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let combined = directory + "/client-and-key.pem"
        try (String(contentsOfFile: ca.client.certificatePath, encoding: .utf8) + String(contentsOfFile: ca.client.keyPath, encoding: .utf8))
            .write(toFile: combined, atomically: true, encoding: .utf8)
        let oneFile = try fetches(common + ["--cert", combined, url], from: nginx)
        #expect(oneFile.saved, "\(oneFile.0.errorText)")

        let (missing, _) = try fetches(common + ["--cert", directory + "/nope.pem", url], from: nginx)
        #expect(missing.exitStatus == 2 && missing.errorText == "haul: --cert \(directory)/nope.pem: cannot read it: No such file or directory\n",
                "\(missing.errorText)")
        let (mismatch, _) = try fetches(common + ["--cert", ca.client.certificatePath, "--key", ca.server.keyPath, url], from: nginx)
        #expect(mismatch.exitStatus == 4)
        #expect(mismatch.errorText.contains("the client key \(ca.server.keyPath) does not match the certificate in \(ca.client.certificatePath)"),
                "\(mismatch.errorText)")
        let keyAlone = try haul(["--key", ca.client.keyPath, url])
        #expect(keyAlone.exitStatus == 2 && keyAlone.errorText.contains("--key needs --cert"))
    }

    /// `haul queue add` takes the same options; the daemon runs the task with them.
    @Test func aQueuedTaskKeepsItsNetworkSettingsAndClientCertificate() throws {
        let ca = try TestCertificateAuthority.shared()
        let nginx = try server { $0.clientCertificateAuthority = ca.caCertificatePath }
        defer { nginx.stop() }
        let sandbox = try QueueCLITests.Sandbox()
        defer { sandbox.cleanUp() }
        let https = nginx.httpsPort!
        let add = try sandbox.haul(["queue", "add", "--cacert", ca.caCertificatePath, "--connect-to", "\(Self.name):443:localhost:\(https)",
                                    "--resolve", "localhost:\(https):127.0.0.1", "-4", "--interface", "lo",
                                    "--cert", ca.client.certificatePath, "--key", ca.client.keyPath,
                                    "-o", sandbox.output + "/f.bin", "https://\(Self.name)/f.bin"])
        #expect(add.exitStatus == 0 && add.outputText == "1\n", "\(add.outputText) \(add.errorText)")
        let wait = try sandbox.haul(["queue", "wait", "1"])
        #expect(wait.exitStatus == 0, "\(wait.errorText)")
        #expect(try TestFiles.sha256(ofFile: sandbox.output + "/f.bin") == TestFiles.sha256(ofFile: nginx.dataDirectory + "/f.bin"))
        let bad = try sandbox.haul(["queue", "add", "--resolve", "nonsense", "-o", sandbox.output + "/g.bin", "https://\(Self.name)/f.bin"])
        #expect(bad.exitStatus == 2 && bad.errorText.contains("--resolve \"nonsense\""), "\(bad.errorText)")
    }

    @Test(arguments: [
        (["--resolve", "example.test:443"], "haul: --resolve \"example.test:443\" is not [+]HOST:PORT:ADDRESS[,ADDRESS...]: no address after the port\n"),
        (["--resolve", "example.test:443:localhost"],
         "haul: --resolve \"example.test:443:localhost\" is not [+]HOST:PORT:ADDRESS[,ADDRESS...]: \"localhost\" is not an IPv4 or IPv6 address\n"),
        (["--connect-to", "example.test:443:other"],
         "haul: --connect-to \"example.test:443:other\" is not HOST1:PORT1:HOST2:PORT2 (an empty field means any host or port, or the same one): it has fewer than four fields\n"),
        (["--interface", "a/b"], "haul: --interface \"a/b\" is not a network interface name or a local IP address: an interface name has no '/', ':' or spaces\n"),
        (["-H", "Host: example.test"],
         "haul: header \"Host\" cannot be set: haul sends the URL's host. To reach a name at another address, put the name in the URL and add --resolve NAME:PORT:ADDRESS (or --connect-to NAME:PORT:HOST:PORT)\n"),
    ])
    func badValuesAreUsageErrorsThatSayWhy(arguments: [String], message: String) throws {
        let run = try haul(arguments + ["http://127.0.0.1:1/f.bin"])
        #expect(run.exitStatus == 2)
        #expect(run.errorText == message)
    }
}
