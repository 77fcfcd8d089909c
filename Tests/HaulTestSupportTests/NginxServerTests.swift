import Foundation
import HaulTestSupport
import Testing

@Suite("NginxServer")
struct NginxServerTests {
    @Test("serves a file over HTTP and HTTPS, byte-identical")
    func servesFileOverHTTPAndHTTPS() throws {
        let nginx = try NginxServer()
        defer { nginx.stop() }
        let scratch = try TemporaryDirectory()
        let size = 3 << 20 + 12345
        try TestFiles.create(at: nginx.dataDirectory + "/file.bin", size: size, seed: 7)
        let expected = try TestFiles.sha256(ofFile: nginx.dataDirectory + "/file.bin")
        let ca = try TestCertificateAuthority.shared()

        for tls in [false, true] {
            let output = scratch.file("out-\(tls)")
            let result = try Curl.run(["--fail", "--cacert", ca.caCertificatePath, "--output", output, nginx.url("/file.bin", tls: tls)])
            #expect(result.exitStatus == 0, "curl: \(result.errorText)")
            #expect(try TestFiles.sha256(ofFile: output) == expected)
        }
        let entries = nginx.accessLog(waitingForCount: 2)
        #expect(entries.map(\.scheme) == ["http", "https"])
        #expect(entries.allSatisfy { $0.status == 200 && $0.bodyBytesSent == size && $0.target == "/file.bin" })
    }

    @Test("access log shows keep-alive reuse: two URLs in one curl run share a connection")
    func accessLogShowsConnectionReuse() throws {
        let nginx = try NginxServer()
        defer { nginx.stop() }
        try TestFiles.create(at: nginx.dataDirectory + "/a", size: 1 << 20)
        let result = try Curl.run(["--fail", "--output", "/dev/null", "--output", "/dev/null", "--range", "100-199",
                                   nginx.url("/a"), nginx.url("/a")])
        #expect(result.exitStatus == 0, "curl: \(result.errorText)")

        let entries = nginx.accessLog(waitingForCount: 2)
        try #require(entries.count == 2)
        #expect(entries[0].connection == entries[1].connection)
        #expect(entries.map(\.connectionRequests) == [1, 2])
        #expect(entries.map(\.status) == [206, 206])
        #expect(entries.map(\.range) == ["bytes=100-199", "bytes=100-199"])
        #expect(entries.totalBodyBytesSent == 200)
        #expect(entries.byConnection.count == 1)
    }

    @Test("the rate-limited location and configured redirects work")
    func rateLimitAndRedirects() throws {
        var configuration = NginxConfiguration()
        configuration.enableTLS = false
        configuration.rateLimitedLocation = .init(prefix: "/limited/", rate: "1m")
        configuration.redirects = [.init(from: "/redirect-a", to: "/redirect-b"), .init(from: "/redirect-b", to: "/redirect-a")]
        let nginx = try NginxServer(configuration: configuration)
        defer { nginx.stop() }
        try TestFiles.create(at: nginx.dataDirectory + "/f", size: 2 << 20)
        let scratch = try TemporaryDirectory()

        // 2 MiB at 1 MB/s: nginx lets the first second's worth through at once, so this takes about one second.
        let start = Date()
        let limited = try Curl.run(["--fail", "--output", scratch.file("limited"), nginx.url("/limited/f")])
        #expect(limited.exitStatus == 0, "curl: \(limited.errorText)")
        #expect(Date().timeIntervalSince(start) > 0.5)
        #expect(try TestFiles.sha256(ofFile: scratch.file("limited")) == TestFiles.sha256(ofFile: nginx.dataDirectory + "/f"))

        let redirect = try Curl.fetch(nginx.url("/redirect-a"), in: scratch)
        #expect(redirect.head.statusCode == 302)
        #expect(redirect.head.headerValue("Location")?.hasSuffix("/redirect-b") == true)
        // The loop: curl gives up after its redirect limit (exit 47, too many redirects).
        let loop = try Curl.run(["--location", "--max-redirs", "5", "--output", "/dev/null", nginx.url("/redirect-a")])
        #expect(loop.exitStatus == 47)
    }

    @Test("IPv6 loopback", .enabled(if: LoopbackPorts.isIPv6Available))
    func servesOverIPv6() throws {
        let nginx = try NginxServer()
        defer { nginx.stop() }
        try TestFiles.create(at: nginx.dataDirectory + "/f", size: 1000)
        let ca = try TestCertificateAuthority.shared()
        for tls in [false, true] {
            let result = try Curl.run(["--fail", "--cacert", ca.caCertificatePath, "--output", "/dev/null", nginx.url("/f", tls: tls, ipv6: true)])
            #expect(result.exitStatus == 0, "curl: \(result.errorText)")
        }
    }

    @Test("stop ends the nginx processes and removes the directory")
    func stopEndsProcesses() throws {
        let nginx = try NginxServer()
        // nginx listens before it writes its pid file (it creates the file, then writes the number): on a
        // loaded machine the file can still be empty when the port already answers.
        let pidText = poll(reading: { (try? String(contentsOfFile: nginx.directory + "/nginx.pid", encoding: .utf8)) ?? "" },
                           until: { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) != nil })
        let pid = try #require(Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)), "nginx.pid: \(pidText)")
        nginx.stop()
        #expect(kill(pid, 0) == -1)
        #expect(!FileManager.default.fileExists(atPath: nginx.directory))
        #expect(!LoopbackPorts.acceptsConnections(host: "127.0.0.1", port: nginx.httpPort))
        nginx.stop()
    }
}
