import Foundation
@testable import Haul
import HaulHTTP
import HaulIO
import HaulTestSupport
import Testing

/// Downloads through real proxies — Squid (HTTP, `CONNECT`, Basic authentication), stunnel in front of Squid
/// (an `https://` proxy, so HTTPS origins are TLS inside TLS) and microsocks (SOCKS5 with a password) — each
/// started for its test on a free loopback port. Every test reads the proxy's own log to show that the traffic
/// went through it (or, for `NO_PROXY`, that it did not).
@Suite(.serialized) struct ProxyTests {
    static let user = "alice"
    static let password = "s3cret"
    static let fileSize = 4 << 20
    static let path = "/proxied.bin"

    /// nginx (HTTP on 127.0.0.1, HTTPS as localhost) with one 4 MiB file.
    final class Origin {
        let nginx: NginxServer
        let sha256: String

        init() throws {
            var configuration = NginxConfiguration()
            configuration.rateLimitedLocation = nil
            nginx = try NginxServer(configuration: configuration)
            for name in [ProxyTests.path, "/bypass.bin", "/marker.bin"] {
                try TestFiles.create(at: nginx.dataDirectory + name, size: ProxyTests.fileSize, seed: 11)
            }
            sha256 = try TestFiles.sha256(ofFile: nginx.dataDirectory + ProxyTests.path)
        }

        /// `http://127.0.0.1:PORT/PATH` or `https://localhost:PORT/PATH`.
        func url(tls: Bool, path: String = ProxyTests.path) -> String { nginx.url(path, tls: tls) }
        /// What a proxy names as the target: `127.0.0.1:PORT` or `localhost:PORT`.
        func authority(tls: Bool) -> String { tls ? "localhost:\(nginx.httpsPort!)" : "127.0.0.1:\(nginx.httpPort)" }
        func stop() { nginx.stop() }
    }

    func options(connections: Int, proxy: ProxySettings?, retry: RetryPolicy = RetryPolicy()) throws -> DownloadOptions {
        var options = DownloadOptions(connections: connections, minimumSegment: 256 << 10, retry: retry)
        options.tls.caFile = try TestCertificateAuthority.shared().caCertificatePath
        options.synchronizesToDisk = false
        options.proxy = proxy
        return options
    }

    /// Downloads `url` with a new client, checks the file, and closes the client's pooled connections (so that
    /// tunnels end and the proxy logs them).
    func download(_ url: String, options: DownloadOptions, to path: String, sha256: String) async throws -> DownloadResult {
        let client = try HaulClient(options: options)
        let task = client.start(DownloadRequest(url: url, destination: .file(path), replacesExisting: true))
        let outcome = try #require(await outcomeWithin(.seconds(60), of: task), "download of \(url) hung")
        await client.lanes[0].httpClient.shutdown()
        let result = try outcome.get()
        #expect(result.bytes == Int64(Self.fileSize))
        #expect(try TestFiles.sha256(ofFile: path) == sha256, "\(url) through \(options.proxy.map { "\($0.https!)" } ?? "-")")
        return result
    }

    /// The failure of a download that must fail (without retries), within a bound.
    func failure(_ url: String, options: DownloadOptions, directory: String) async throws -> HaulError {
        let client = try HaulClient(options: options)
        let task = client.start(DownloadRequest(url: url, destination: .file(directory + "/failed"), replacesExisting: true))
        let outcome = try #require(await outcomeWithin(.seconds(60), of: task), "download of \(url) hung")
        await client.lanes[0].httpClient.shutdown()
        guard case .failure(let error) = outcome else {
            Issue.record("download of \(url) succeeded although it should have failed")
            throw CancellationError()
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/failed"))
        return error
    }

    // MARK: Through each kind of proxy

    enum Kind: String, CaseIterable, Sendable {
        case http, https, socks5, socks5h
    }

    /// The same file, byte-identical, at 1 and 8 connections from an HTTP and an HTTPS origin, through each kind
    /// of proxy with credentials; the proxy's log shows every connection's target and user.
    @Test(arguments: Kind.allCases)
    func downloadsThroughProxy(_ kind: Kind) async throws {
        let origin = try Origin()
        defer { origin.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let credentials = (user: Self.user, password: Self.password)
        var squid: SquidProxy?
        var stunnel: StunnelServer?
        var socks: MicrosocksProxy?
        defer {
            stunnel?.stop()
            squid?.stop()
            socks?.stop()
        }
        let proxyURL: String
        switch kind {
        case .http:
            squid = try SquidProxy(credentials: credentials)
            proxyURL = squid!.url(user: Self.user, password: Self.password)
        case .https:
            squid = try SquidProxy(credentials: credentials)
            stunnel = try StunnelServer(forwardingTo: squid!.port)
            proxyURL = "https://\(Self.user):\(Self.password)@localhost:\(stunnel!.port)"
        case .socks5, .socks5h:
            socks = try MicrosocksProxy(credentials: credentials)
            proxyURL = socks!.url(scheme: kind.rawValue, user: Self.user, password: Self.password)
        }
        let proxy = ProxySettings(all: try ProxyURL(proxyURL))

        for tls in [false, true] {
            for connections in [1, 8] {
                let result = try await download(origin.url(tls: tls), options: options(connections: connections, proxy: proxy),
                                                to: directory + "/\(tls)-\(connections).bin", sha256: origin.sha256)
                #expect(result.connections == connections)
            }
        }

        // Every connection from the 1- and the 8-connection download went through the proxy: 9 per origin.
        if let squid {
            let plain = "http://\(origin.authority(tls: false))\(Self.path)"
            let tunnel = origin.authority(tls: true)
            let log = squid.accessLog(waitingUntil: { entries in
                entries.filter { $0.method == "CONNECT" && $0.url == tunnel }.count >= 9
            })
            let forwarded = log.filter { $0.method == "GET" && $0.url == plain }
            let tunnels = log.filter { $0.method == "CONNECT" && $0.url == tunnel }
            #expect(forwarded.count >= 9, "absolute-form requests in the Squid log:\n\(log.map(\.line).joined(separator: "\n"))")
            #expect(forwarded.allSatisfy { $0.status == 206 && $0.user == Self.user })
            #expect(tunnels.count >= 9, "tunnels in the Squid log:\n\(log.map(\.line).joined(separator: "\n"))")
            #expect(tunnels.allSatisfy { $0.result == "TCP_TUNNEL" && $0.status == 200 && $0.user == Self.user })
            #expect(log.allSatisfy { $0.status != 407 }, "credentials went with every request and CONNECT")
        }
        if let stunnel {
            #expect(stunnel.acceptedConnections() >= 18, "stunnel log:\n\(stunnel.log().joined(separator: "\n"))")
        }
        if let socks {
            let plain = origin.authority(tls: false)
            let httpsPort = ":\(origin.nginx.httpsPort!)"
            let targets = socks.connectedTargets(waitingUntil: { targets in
                targets.filter { $0.hasSuffix(httpsPort) }.count >= 9 && targets.filter { $0 == plain }.count >= 9
            })
            let secure = targets.filter { $0.hasSuffix(httpsPort) }
            #expect(targets.filter { $0 == plain }.count >= 9, "microsocks log: \(targets)")
            #expect(secure.count >= 9, "microsocks log: \(targets)")
            if kind == .socks5h {
                #expect(secure.allSatisfy { $0 == "localhost\(httpsPort)" }, "socks5h sends the name: \(secure)")
            } else {
                // socks5 resolves localhost here and hands the proxy an address.
                #expect(secure.allSatisfy { $0 == "127.0.0.1\(httpsPort)" || $0 == "::1\(httpsPort)" }, "socks5 sends an address: \(secure)")
            }
        }
    }

    // MARK: NO_PROXY

    /// Hosts on the NO_PROXY list are fetched directly: Squid's log shows nothing for them, while the other
    /// origin's traffic in the same run is there.
    @Test func noProxyBypassesTheProxy() async throws {
        let origin = try Origin()
        defer { origin.stop() }
        let squid = try SquidProxy()
        defer { squid.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // As the environment would say it: the HTTPS origin (localhost) bypasses, plain HTTP goes through.
        var environmentSettings = try ProxySettings.fromEnvironment([
            "http_proxy": squid.url(), "HTTPS_PROXY": squid.url(), "NO_PROXY": "example.invalid, .localhost",
        ])
        _ = try await download(origin.url(tls: true, path: "/bypass.bin"), options: options(connections: 4, proxy: environmentSettings),
                               to: directory + "/a.bin", sha256: origin.sha256)
        _ = try await download(origin.url(tls: false, path: "/marker.bin"), options: options(connections: 1, proxy: environmentSettings),
                               to: directory + "/b.bin", sha256: origin.sha256)
        // Then the plain-HTTP origin bypasses by address range, and the HTTPS one goes through.
        environmentSettings.noProxy = NoProxyList("10.0.0.0/8,127.0.0.0/8")
        _ = try await download(origin.url(tls: false, path: "/bypass.bin"), options: options(connections: 4, proxy: environmentSettings),
                               to: directory + "/c.bin", sha256: origin.sha256)
        _ = try await download(origin.url(tls: true, path: "/marker.bin"), options: options(connections: 1, proxy: environmentSettings),
                               to: directory + "/d.bin", sha256: origin.sha256)

        let tunnel = origin.authority(tls: true)
        let marker = "http://\(origin.authority(tls: false))/marker.bin"
        let log = squid.accessLog(waitingUntil: { entries in
            entries.contains { $0.url == marker } && entries.contains { $0.method == "CONNECT" && $0.url == tunnel }
        })
        let text = log.map(\.line).joined(separator: "\n")
        #expect(log.filter { $0.url == marker }.count == 1, "the proxied plain-HTTP download:\n\(text)")
        #expect(log.filter { $0.method == "CONNECT" && $0.url == tunnel }.count == 1, "one tunnel, from the proxied HTTPS download only:\n\(text)")
        #expect(!log.contains { $0.url.contains("/bypass.bin") }, "bypassed requests never reached Squid:\n\(text)")
        #expect(log.count == 2, "nothing else went through Squid:\n\(text)")
        // The origin did serve the bypassed downloads (4 connections each, ranged).
        // Waited for by what is checked, not by a count of lines: the proxied downloads' lines came in between.
        let bypassed = origin.nginx.accessLog(waitingUntil: { log in
            Set(log.filter { $0.target == "/bypass.bin" }.map(\.scheme)) == ["http", "https"]
        }).filter { $0.target == "/bypass.bin" }
        #expect(Set(bypassed.map(\.scheme)) == ["http", "https"])
    }

    // MARK: Authentication failures

    /// Squid with Basic authentication: no credentials is a 407 that names the proxy and asks for them, wrong
    /// ones are "rejected", for absolute-form requests and for CONNECT alike; neither is retried.
    @Test func squidDemandsCredentials() async throws {
        let origin = try Origin()
        defer { origin.stop() }
        let squid = try SquidProxy(credentials: (Self.user, Self.password))
        defer { squid.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        for (proxyURL, expected) in [
            (squid.url(), ProxyFailure.Reason.authenticationRequired(status: 407)),
            (squid.url(user: Self.user, password: "wrong"), .credentialsRejected(status: 407)),
        ] {
            let proxy = ProxySettings(all: try ProxyURL(proxyURL))
            for tls in [false, true] {
                let error = try await failure(origin.url(tls: tls), options: options(connections: 1, proxy: proxy, retry: .none),
                                              directory: directory)
                guard case .network(let connectionError) = error.reason, let proxyFailure = connectionError.proxyFailure else {
                    Issue.record("expected a proxy failure, got \(error)")
                    continue
                }
                #expect(connectionError.kind == .proxyFailed)
                #expect(proxyFailure.reason == expected)
                #expect(proxyFailure.step == (tls ? .connectTunnel : .forwardedRequest))
                #expect(proxyFailure.route.target == origin.authority(tls: tls))
                let text = error.reason.description
                #expect(error.url == origin.url(tls: tls))
                #expect(error.description == "\(origin.url(tls: tls)): \(text)", "the URL, then what the proxy did")
                switch expected {
                case .authenticationRequired:
                    #expect(text.hasPrefix("proxy http://127.0.0.1:\(squid.port) requires authentication (407) to reach \(origin.authority(tls: tls))"), "\(text)")
                default:
                    #expect(text == "proxy http://127.0.0.1:\(squid.port) rejected the credentials for user \"alice\" (407) to reach \(origin.authority(tls: tls))")
                }
                #expect(!text.contains("wrong"))
            }
        }
        let denied = squid.accessLog(waitingUntil: { $0.filter { $0.status == 407 }.count >= 4 }).filter { $0.status == 407 }
        #expect(denied.filter { $0.method == "CONNECT" }.count == 2, "\(denied)")
        #expect(denied.filter { $0.method == "GET" }.count == 2, "\(denied)")
        #expect(origin.nginx.accessLog().isEmpty, "nothing reached the origin")
    }

    /// microsocks with a password: a wrong one, and none at all, are clear errors naming the proxy and the
    /// target; microsocks connected to nothing.
    @Test func socksRejectsBadCredentials() async throws {
        let origin = try Origin()
        defer { origin.stop() }
        let socks = try MicrosocksProxy(credentials: (Self.user, Self.password))
        defer { socks.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let wrong = ProxySettings(all: try ProxyURL(socks.url(user: Self.user, password: "wrong")))
        let wrongError = try await failure(origin.url(tls: true), options: options(connections: 1, proxy: wrong, retry: .none),
                                           directory: directory)
        guard case .network(let rejected) = wrongError.reason else {
            Issue.record("expected a network error, got \(wrongError)")
            return
        }
        // RFC 1929: any status but 0 is a failure (microsocks says 2).
        guard case .socksCredentialsRejected(let status) = rejected.proxyFailure?.reason else {
            Issue.record("expected rejected credentials, got \(wrongError)")
            return
        }
        #expect(status != 0)
        #expect(rejected.proxyFailure?.step == .socksAuthentication)
        #expect(wrongError.url == origin.url(tls: true))
        #expect(wrongError.reason.description == """
            SOCKS5 proxy 127.0.0.1:\(socks.port) rejected the username/password for user "alice" for \(origin.authority(tls: true)) (status \(status))
            """)

        let anonymous = ProxySettings(all: try ProxyURL(socks.url()))
        let anonymousError = try await failure(origin.url(tls: false), options: options(connections: 1, proxy: anonymous, retry: .none),
                                               directory: directory)
        guard case .network(let noMethod) = anonymousError.reason else {
            Issue.record("expected a network error, got \(anonymousError)")
            return
        }
        #expect(noMethod.proxyFailure?.reason == .socksNoAcceptableMethod(credentialsOffered: false))
        #expect(anonymousError.reason.description.hasPrefix("SOCKS5 proxy 127.0.0.1:\(socks.port) accepts none of the offered authentication methods (none)"))
        #expect(socks.connectedTargets().isEmpty)
        #expect(origin.nginx.accessLog().isEmpty)
    }

    /// A SOCKS5 CONNECT the proxy cannot carry out is reported with its reply code.
    @Test func socksReportsARefusedConnection() async throws {
        let socks = try MicrosocksProxy()
        defer { socks.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closedPort = try LoopbackPorts.freePort()
        let proxy = ProxySettings(all: try ProxyURL(socks.url(scheme: "socks5")))
        let error = try await failure("http://127.0.0.1:\(closedPort)/x", options: options(connections: 1, proxy: proxy, retry: .none),
                                      directory: directory)
        #expect(error.description == """
            http://127.0.0.1:\(closedPort)/x: SOCKS5 proxy 127.0.0.1:\(socks.port) refused the connection to 127.0.0.1:\(closedPort): connection refused (reply 5)
            """)
    }

    /// An `https://` proxy is verified against its own name with the client's CA settings.
    @Test func httpsProxyCertificateIsVerified() async throws {
        let origin = try Origin()
        defer { origin.stop() }
        let squid = try SquidProxy()
        defer { squid.stop() }
        let stunnel = try StunnelServer(forwardingTo: squid.port, certificate: TestCertificateAuthority.shared().wrongHostname)
        defer { stunnel.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let proxy = ProxySettings(all: try ProxyURL("https://localhost:\(stunnel.port)"))
        let error = try await failure(origin.url(tls: true), options: options(connections: 1, proxy: proxy, retry: .none),
                                      directory: directory)
        guard case .tls(let tlsError) = error.reason else {
            Issue.record("expected a TLS error, got \(error)")
            return
        }
        #expect(tlsError.host == "localhost" && tlsError.port == stunnel.port, "the proxy, not the origin, failed verification")
        #expect(error.description.contains("hostname mismatch"))
        #expect(error.description.contains("through proxy https://localhost:\(stunnel.port) to \(origin.authority(tls: true))"), "\(error)")
        #expect(squid.accessLog().isEmpty)
    }

    // MARK: Connection reuse

    /// Keep-alive through a proxy: sequential requests to one HTTPS origin share one tunnel, and requests to
    /// the HTTP origin through the same proxy get their own connection.
    @Test func tunnelsAreReusedPerOriginAndProxy() async throws {
        let origin = try Origin()
        defer { origin.stop() }
        let squid = try SquidProxy()
        defer { squid.stop() }
        let loop = try EventLoop(name: "proxy-test-loop")
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, tls: TLSSettings(caFile: try TestCertificateAuthority.shared().caCertificatePath),
                                proxy: ProxySettings(all: try ProxyURL(squid.url())))
        for tls in [true, true, true, false, false] {
            let handler = CountingHandler()
            let request = RequestHead(url: try HTTPURL(origin.url(tls: tls)))
            // On the loop thread, as the engine's segment workers run their exchanges.
            let result: Result<ExchangeSummary, HTTPClientError> = await withCheckedContinuation { continuation in
                loop.execute { client.executeOnLoop(request, handler: handler) { continuation.resume(returning: $0) } }
            }
            let summary = try result.get()
            #expect(summary.head.status == 200)
            #expect(summary.connectionReusable)
            #expect(handler.count == Self.fileSize)
        }
        let opened = await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: client.pool.connectionsOpened) }
        }
        #expect(opened == 2)
        await client.shutdown()
        // Squid logs a request when it has answered it and the tunnel when it closes: wait for all three.
        let log = squid.accessLog(waitingUntil: { log in
            log.contains { $0.method == "CONNECT" } && log.filter { $0.method == "GET" }.count >= 2
        })
        #expect(log.filter { $0.method == "CONNECT" }.count == 1, "\(log)")
        #expect(log.filter { $0.method == "GET" }.count == 2, "\(log)")
        let https = origin.nginx.accessLog(waitingForCount: 5).filter { $0.scheme == "https" }
        #expect(https.count == 3)
        #expect(Set(https.map(\.connection)).count == 1, "three requests on one tunnel")
    }
}

/// Counts body bytes; used only on the loop thread.
final class CountingHandler: ResponseHandler, @unchecked Sendable {
    // @unchecked Sendable: touched only on the loop thread, as ResponseHandler requires.
    private(set) var count = 0
    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision { .receiveBody }
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        count += bytes.count
        return .continue
    }
}
