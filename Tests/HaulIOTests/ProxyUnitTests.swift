import HaulHTTP
import Testing
@testable import HaulIO

@Suite struct ProxySettingsTests {
    private func origin(_ url: String) throws -> HTTPOrigin { try HTTPURL(url).origin }

    @Test func readsTheEnvironmentAsCurlDoes() throws {
        let settings = try ProxySettings.fromEnvironment([
            "http_proxy": "http://127.0.0.1:3128",
            "https_proxy": "https://proxy.test:8443",
            "HTTPS_PROXY": "http://ignored.test:1",
            "no_proxy": "internal.test,10.0.0.0/8",
            "NO_PROXY": "ignored.test",
        ])
        #expect(settings.http?.description == "http://127.0.0.1:3128")
        #expect(settings.https?.description == "https://proxy.test:8443")
        #expect(settings.noProxy.description == "internal.test,10.0.0.0/8")
        #expect(try settings.proxy(for: origin("http://example.org/"))?.description == "http://127.0.0.1:3128")
        #expect(try settings.proxy(for: origin("https://example.org/"))?.description == "https://proxy.test:8443")
        #expect(try settings.proxy(for: origin("https://a.internal.test/")) == nil)
        #expect(try settings.proxy(for: origin("http://10.1.2.3:8080/")) == nil)
    }

    /// `HTTP_PROXY` in upper case is what CGI servers set from a request's `Proxy:` header ("httpoxy").
    @Test func upperCaseHTTPProxyIsIgnored() throws {
        let settings = try ProxySettings.fromEnvironment(["HTTP_PROXY": "http://attacker.test:80"])
        #expect(settings.http == nil)
        #expect(settings.isDirect)
        #expect(try settings.proxy(for: origin("http://example.org/")) == nil)
    }

    @Test func upperCaseVariantsAndAllProxyFallBack() throws {
        let upper = try ProxySettings.fromEnvironment([
            "HTTPS_PROXY": "socks5h://127.0.0.1:1080", "ALL_PROXY": "socks5://127.0.0.1:9050", "NO_PROXY": "*",
        ])
        #expect(upper.https?.description == "socks5h://127.0.0.1:1080")
        #expect(upper.http?.description == "socks5://127.0.0.1:9050", "all_proxy covers http")
        #expect(upper.noProxy.entries == [.everything])
        #expect(try upper.proxy(for: origin("https://example.org/")) == nil, "NO_PROXY=* bypasses everything")

        let lowerFirst = try ProxySettings.fromEnvironment([
            "all_proxy": "http://lower.test:1", "ALL_PROXY": "http://upper.test:1",
        ])
        #expect(lowerFirst.http?.host.name == "lower.test")
        #expect(lowerFirst.https?.host.name == "lower.test")
    }

    @Test func emptyVariablesCountAsUnset() throws {
        let settings = try ProxySettings.fromEnvironment([
            "https_proxy": "", "HTTPS_PROXY": "http://upper.test:3128", "http_proxy": " ", "all_proxy": "",
        ])
        #expect(settings.https?.host.name == "upper.test")
        #expect(settings.http == nil)
        #expect(try ProxySettings.fromEnvironment([:]) == ProxySettings.direct)
    }

    @Test func badVariablesAreErrorsNamingThem() {
        let scheme = #expect(throws: ProxyConfigurationError.self) {
            try ProxySettings.fromEnvironment(["HTTPS_PROXY": "socks4://127.0.0.1:1080"])
        }
        #expect(scheme?.source == "HTTPS_PROXY")
        #expect(scheme?.description == """
            unsupported proxy scheme "socks4" in HTTPS_PROXY="socks4://127.0.0.1:1080" (supported: http, https, socks5, socks5h)
            """)
        let port = #expect(throws: ProxyConfigurationError.self) {
            try ProxySettings.fromEnvironment(["all_proxy": "http://u:secret@proxy.test:0"])
        }
        #expect(port?.source == "all_proxy")
        #expect(port?.description.contains("secret") == false)
    }

    /// What `-x URL` and `--noproxy LIST` do on top of the environment.
    @Test func oneProxyForAllSchemes() throws {
        var settings = try ProxySettings.fromEnvironment(["http_proxy": "http://a.test:1", "no_proxy": "skip.test"])
        settings.useForAllSchemes(try ProxyURL("socks5h://b.test"))
        #expect(settings.http == settings.https)
        #expect(settings.https?.description == "socks5h://b.test:1080")
        #expect(try settings.proxy(for: origin("http://skip.test/")) == nil, "NO_PROXY still applies")
        settings.noProxy = NoProxyList("")
        #expect(try settings.proxy(for: origin("http://skip.test/")) != nil)
        settings.useForAllSchemes(nil)
        #expect(settings.isDirect)
        #expect(ProxySettings(all: try ProxyURL("http://c.test:3128")).https?.port == 3128)
    }
}

@Suite struct ProxyCommandLineTests {
    private func origin(_ url: String) throws -> HTTPOrigin { try HTTPURL(url).origin }
    private let environment = ["https_proxy": "http://env.test:3128", "no_proxy": "skip.test"]

    @Test func environmentAloneWhenNoOptions() throws {
        let settings = try ProxySettings.forCommandLine(proxy: nil, noProxy: nil, environment: environment)
        #expect(settings == (try ProxySettings.fromEnvironment(environment)))
    }

    @Test func proxyOptionReplacesEveryScheme() throws {
        let settings = try ProxySettings.forCommandLine(proxy: "socks5h://u:p@127.0.0.1:1080", noProxy: nil, environment: environment)
        #expect(settings.http?.description == "socks5h://127.0.0.1:1080")
        #expect(settings.https == settings.http)
        #expect(try settings.proxy(for: origin("https://skip.test/")) == nil, "the environment's NO_PROXY still applies")
    }

    @Test func emptyOptionsTurnThingsOff() throws {
        let off = try ProxySettings.forCommandLine(proxy: "", noProxy: nil, environment: environment)
        #expect(off.isDirect)
        let noBypass = try ProxySettings.forCommandLine(proxy: nil, noProxy: "", environment: environment)
        #expect(try noBypass.proxy(for: origin("https://skip.test/"))?.host.name == "env.test")
        let replaced = try ProxySettings.forCommandLine(proxy: "proxy.test:8080", noProxy: "*", environment: [:])
        #expect(replaced.http?.description == "http://proxy.test:8080")
        #expect(try replaced.proxy(for: origin("http://a.test/")) == nil)
    }

    @Test func errorsNameTheOption() {
        let error = #expect(throws: ProxyConfigurationError.self) {
            try ProxySettings.forCommandLine(proxy: "ftp://proxy.test", noProxy: nil, environment: [:])
        }
        #expect(error?.description.hasPrefix("unsupported proxy scheme \"ftp\" in --proxy=\"ftp://proxy.test\"") == true)
        let environmentError = #expect(throws: ProxyConfigurationError.self) {
            try ProxySettings.forCommandLine(proxy: nil, noProxy: nil, environment: ["ALL_PROXY": "gopher://x"])
        }
        #expect(environmentError?.source == "ALL_PROXY")
        // With --proxy the environment's proxies are not read at all, as in curl.
        #expect(throws: Never.self) {
            try ProxySettings.forCommandLine(proxy: "http://ok.test:1", noProxy: nil, environment: ["ALL_PROXY": "gopher://x"])
        }
    }
}

@Suite struct SOCKS5CodecTests {
    @Test func greeting() {
        #expect(SOCKS5.greeting(offeringUsernamePassword: false) == [5, 1, 0])
        #expect(SOCKS5.greeting(offeringUsernamePassword: true) == [5, 2, 0, 2])
    }

    @Test func methodSelection() throws {
        #expect(try SOCKS5.parseMethodSelection([5]) == nil)
        #expect(try SOCKS5.parseMethodSelection([5, 2])?.method == 2)
        #expect(try SOCKS5.parseMethodSelection([5, 0xFF])?.consumed == 2)
        #expect(throws: SOCKS5.ProtocolError.self) { try SOCKS5.parseMethodSelection([4, 0]) }
        // An HTTP proxy answering a SOCKS client.
        #expect(throws: SOCKS5.ProtocolError.self) { try SOCKS5.parseMethodSelection(Array("HTTP/1.1 400".utf8)) }
    }

    @Test func usernamePassword() throws {
        #expect(try SOCKS5.usernamePasswordRequest(user: "alice", password: "pw")
                    == [1, 5] + Array("alice".utf8) + [2] + Array("pw".utf8))
        #expect(throws: SOCKS5.ProtocolError.self) { try SOCKS5.usernamePasswordRequest(user: "", password: "pw") }
        #expect(throws: SOCKS5.ProtocolError.self) {
            try SOCKS5.usernamePasswordRequest(user: "u", password: String(repeating: "x", count: 256))
        }
        #expect(try SOCKS5.parseAuthenticationReply([1]) == nil)
        #expect(try SOCKS5.parseAuthenticationReply([1, 0])?.status == 0)
        #expect(try SOCKS5.parseAuthenticationReply([1, 1])?.status == 1)
        #expect(throws: SOCKS5.ProtocolError.self) { try SOCKS5.parseAuthenticationReply([5, 0]) }
    }

    @Test func connectRequests() throws {
        #expect(try SOCKS5.connectRequest(to: #require(SOCKS5.Address(ipLiteral: "127.0.0.1")), port: 8080)
                    == [5, 1, 0, 1, 127, 0, 0, 1, 0x1F, 0x90])
        #expect(try SOCKS5.connectRequest(to: #require(SOCKS5.Address(ipLiteral: "::1")), port: 443)
                    == [5, 1, 0, 4] + [UInt8](repeating: 0, count: 15) + [1, 0x01, 0xBB])
        #expect(try SOCKS5.connectRequest(to: .domain("a.test"), port: 443)
                    == [5, 1, 0, 3, 6] + Array("a.test".utf8) + [0x01, 0xBB])
        #expect(throws: SOCKS5.ProtocolError.self) {
            try SOCKS5.connectRequest(to: .domain(String(repeating: "a", count: 256)), port: 1)
        }
        let host = try HTTPURL("https://localhost/").host
        #expect(SOCKS5.Address(host) == .domain("localhost"))
        #expect(SOCKS5.Address(try HTTPURL("https://[::1]/").host) == SOCKS5.Address(ipLiteral: "::1"))
        #expect(SOCKS5.Address(ipLiteral: "localhost") == nil)
        #expect(SOCKS5.Address(ipLiteral: "2001:db8::1")?.description == "2001:db8::1")
    }

    @Test func connectReplies() throws {
        let v4: [UInt8] = [5, 0, 0, 1, 10, 0, 0, 1, 0x04, 0x38]
        for cut in 0..<v4.count { #expect(try SOCKS5.parseConnectReply(v4.prefix(cut)) == nil, "\(cut) bytes") }
        let reply = try #require(try SOCKS5.parseConnectReply(v4))
        #expect(reply.consumed == 10)
        #expect(reply.reply.code == .succeeded)
        #expect(reply.reply.boundAddress == .ipv4([10, 0, 0, 1]))
        #expect(reply.reply.boundPort == 1080)

        let v6: [UInt8] = [5, 5, 0, 4] + [UInt8](repeating: 0, count: 16) + [0, 0]
        #expect(try SOCKS5.parseConnectReply(v6)?.reply.code == .connectionRefused)
        #expect(try SOCKS5.parseConnectReply(v6)?.consumed == 22)
        let name: [UInt8] = [5, 0, 0, 3, 4] + Array("a.tt".utf8) + [0, 80]
        #expect(try SOCKS5.parseConnectReply(name)?.reply.boundAddress == .domain("a.tt"))
        #expect(try SOCKS5.parseConnectReply(name + [1])?.consumed == name.count, "extra bytes are the caller's")
        #expect(throws: SOCKS5.ProtocolError.self) { try SOCKS5.parseConnectReply([4, 0, 0, 1, 0, 0, 0, 0, 0, 0]) }
        #expect(throws: SOCKS5.ProtocolError.self) { try SOCKS5.parseConnectReply([5, 0, 0, 9, 0, 0, 0, 0, 0, 0]) }
        #expect(try SOCKS5.parseConnectReply([5, 4, 0, 9, 0])?.reply.code == .hostUnreachable,
                "a failure with a careless address type still reports its code")
    }

    @Test(arguments: 0...9)
    func replyCodesAreNamed(code: UInt8) {
        let names = ["succeeded", "general SOCKS server failure", "connection not allowed by ruleset",
                     "network unreachable", "host unreachable", "connection refused", "TTL expired",
                     "command not supported", "address type not supported", "unassigned reply code"]
        #expect(SOCKS5.ReplyCode(code).description == names[Int(code)])
        #expect(SOCKS5.ReplyCode(code).rawValue == code)
    }
}

@Suite struct ProxyReplyAndErrorTests {
    private func route(_ proxy: String, _ target: String) throws -> ProxyRoute {
        let url = try HTTPURL("https://\(target)/")
        return ProxyRoute(proxy: try ProxyURL(proxy), targetHost: url.host, targetPort: url.port)
    }

    /// Feeds `reply` split at every point; returns the head and the bytes after it, the same for every split.
    private func read(_ reply: String) throws -> (ResponseHead, Int)? {
        let bytes = Array(reply.utf8)
        var results: [(ResponseHead, Int)?] = []
        for split in 0...bytes.count {
            var reader = ConnectReplyReader()
            var result: (ResponseHead, Int)?
            for piece in [Array(bytes[..<split]), Array(bytes[split...])] where result == nil {
                let outcome = try piece.withUnsafeBytes { try reader.feed($0) }
                if case .head(let head, let after) = outcome { result = (head, after) }
            }
            results.append(result)
        }
        let first = results[0]
        for other in results { #expect(other?.0 == first?.0) }
        return first.map { ($0.0, results.last!!.1) }
    }

    @Test func establishedTunnel() throws {
        let (head, after) = try #require(try read("HTTP/1.1 200 Connection established\r\n\r\n"))
        #expect(head.status == 200)
        #expect(after == 0)
        #expect(ConnectReplyReader.failure(for: head, credentialsSent: false) == nil)
        let (interimThenOK, _) = try #require(try read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nVia: x\r\n\r\n"))
        #expect(interimThenOK.status == 200)
        let (_, trailing) = try #require(try read("HTTP/1.1 200 OK\r\n\r\nXY"))
        #expect(trailing == 2)
    }

    @Test func refusals() throws {
        let (auth, _) = try #require(try read("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 3\r\n\r\nabc"))
        #expect(ConnectReplyReader.failure(for: auth, credentialsSent: false) == .authenticationRequired(status: 407))
        #expect(ConnectReplyReader.failure(for: auth, credentialsSent: true) == .credentialsRejected(status: 407))
        let (forbidden, _) = try #require(try read("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
        #expect(ConnectReplyReader.failure(for: forbidden, credentialsSent: true) == .tunnelRefused(status: 403, reason: "Forbidden"))
        var reader = ConnectReplyReader()
        #expect(throws: HTTPParseError.self) {
            _ = try Array("SSH-2.0-OpenSSH\r\n\r\n".utf8).withUnsafeBytes { try reader.feed($0) }
        }
    }

    @Test func failuresNameTheProxyTheTargetAndTheCause() throws {
        let http = try route("http://alice:secret@127.0.0.1:3128", "localhost:8443")
        let required = ProxyFailure(route: try route("http://127.0.0.1:3128", "localhost:8443"), step: .connectTunnel,
                                    reason: .authenticationRequired(status: 407))
        #expect(required.description.hasPrefix("proxy http://127.0.0.1:3128 requires authentication (407) to reach localhost:8443"))
        #expect(required.isAuthenticationFailure && !required.isTransient)
        let rejected = ProxyFailure(route: http, step: .connectTunnel, reason: .credentialsRejected(status: 407))
        #expect(rejected.description == "proxy http://127.0.0.1:3128 rejected the credentials for user \"alice\" (407) to reach localhost:8443")
        #expect(!rejected.description.contains("secret"))

        let socks = try route("socks5h://127.0.0.1:1080", "a.test:443")
        let refused = ProxyFailure(route: socks, step: .socksConnect, reason: .socksConnectFailed(.connectionRefused))
        #expect(refused.description == "SOCKS5 proxy 127.0.0.1:1080 refused the connection to a.test:443: connection refused (reply 5)")
        #expect(refused.isTransient)
        let denied = ProxyFailure(route: try route("socks5://bob:pw@127.0.0.1:1080", "a.test:443"), step: .socksAuthentication,
                                  reason: .socksCredentialsRejected(status: 1))
        #expect(denied.description == "SOCKS5 proxy 127.0.0.1:1080 rejected the username/password for user \"bob\" for a.test:443 (status 1)")
        #expect(!denied.isTransient)

        let error = ConnectionError(proxyFailure: refused)
        #expect(error.kind == .proxyFailed)
        #expect(error.host == "127.0.0.1" && error.port == 1080)
        #expect(error.description == refused.description)
        #expect(HTTPClientError.connection(error).isTransient)
        #expect(!HTTPClientError.connection(ConnectionError(proxyFailure: denied)).isTransient)

        let stalled = ConnectionError(kind: .idleTimedOut, host: "localhost", port: 8443, detail: "30s").through(http)
        #expect(stalled.description == "connection to localhost:8443 stalled: no data for 30s (through proxy http://127.0.0.1:3128 to localhost:8443)")
        #expect(stalled.through(socks).proxyRoute == http, "the first route named stays")
    }

    /// A response broken after the tunnel opened names the proxy beside the origin (which alone would point at
    /// the wrong machine), without its credentials; a direct connection names the origin alone.
    @Test func brokenResponsesNameTheProxyRoute() throws {
        let origin = HTTPOrigin(scheme: .http, host: try HTTPURL("http://origin.test:8080/").host, port: 8080)
        let route = ProxyRoute(proxy: try ProxyURL("socks5h://alice:s3cret@127.0.0.1:1080"), targetHost: origin.host, targetPort: 8080)
        #expect(origin.hostAndPort(through: nil) == "origin.test:8080")
        #expect(origin.hostAndPort(through: route) == "origin.test:8080 (through proxy socks5h://127.0.0.1:1080)")
        let closed = HTTPClientError.malformedResponse(HTTPParseError(.connectionClosedBeforeResponse, offset: 0), origin: origin, through: route)
        #expect(closed.description == "malformed response from origin.test:8080 (through proxy socks5h://127.0.0.1:1080): connection closed before any response byte at byte offset 0")
        let truncated = HTTPClientError.truncatedTLSBody(origin: origin, bytesReceived: 5, through: route)
        #expect(truncated.description.hasPrefix("TLS connection to origin.test:8080 (through proxy socks5h://127.0.0.1:1080) closed without close_notify after 5 body bytes"))
        #expect(!closed.description.contains("s3cret") && !truncated.description.contains("s3cret"))
    }

    /// Inside a tunnel a request loses every `Proxy-Authorization` (any case), keeping the other fields in order;
    /// a head without one is returned as it is.
    @Test func aRequestInsideATunnelCarriesNoProxyAuthorization() throws {
        var head = RequestHead(url: try HTTPURL("https://origin.test/f"))
        head.headers = HTTPFields([("A", "1"), ("Proxy-Authorization", "Basic eA=="), ("B", "2"), ("PROXY-AUTHORIZATION", "y")])
        let inside = head.insideTunnel()
        #expect(inside.headers.pairs.map(\.name) == ["A", "B"])
        #expect(inside.headers.pairs.map(\.value) == ["1", "2"])
        #expect(inside.url == head.url)
        var plain = RequestHead(url: try HTTPURL("https://origin.test/f"))
        plain.headers = HTTPFields([("Authorization", "Bearer t")])
        #expect(plain.insideTunnel().headers == plain.headers, "other credentials are the origin's: CredentialScope decides them")
    }
}
