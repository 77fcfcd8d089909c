import Testing
@testable import HaulHTTP

@Suite struct ProxyURLTests {
    /// input, scheme, host, port (curl's defaults: 443 for https proxies, 1080 for the rest, http without scheme)
    @Test(arguments: [
        ("http://127.0.0.1:3128", ProxyURL.Scheme.http, "127.0.0.1", 3128),
        ("HTTP://Proxy.Example:8080/", .http, "proxy.example", 8080),
        ("proxy.example", .http, "proxy.example", 1080),
        ("proxy.example:3128", .http, "proxy.example", 3128),
        ("http://proxy.example", .http, "proxy.example", 1080),
        ("https://proxy.example", .https, "proxy.example", 443),
        ("socks5://127.0.0.1", .socks5, "127.0.0.1", 1080),
        ("socks5h://[::1]:9050", .socks5h, "::1", 9050),
        ("  socks5h://localhost:1080  ", .socks5h, "localhost", 1080),
    ])
    func parses(input: String, scheme: ProxyURL.Scheme, host: String, port: Int) throws {
        let proxy = try ProxyURL(input)
        #expect(proxy.scheme == scheme)
        #expect(proxy.host.name == host)
        #expect(proxy.port == UInt16(port))
        #expect(proxy.userInfo == nil)
        #expect(proxy.basicAuthorization == nil)
    }

    @Test func credentialsAreDecodedAndNeverShown() throws {
        let proxy = try ProxyURL("socks5h://alice:s%40cr%3Aet@[::1]:1080/")
        #expect(proxy.userInfo?.user == "alice")
        #expect(proxy.userInfo?.password == "s@cr:et")
        #expect(proxy.host.kind == .ipv6)
        #expect(proxy.description == "socks5h://[::1]:1080")
        #expect(proxy.hostAndPort == "[::1]:1080")
        #expect(!"\(proxy)".contains("s@cr"))
        #expect(!String(reflecting: proxy).contains("cr"))
    }

    @Test func basicAuthorizationIsBase64OfUserColonPassword() throws {
        #expect(try ProxyURL("http://alice:secret@127.0.0.1:3128").basicAuthorization == "Basic YWxpY2U6c2VjcmV0")
        // No password: `user:` (as curl sends it).
        #expect(try ProxyURL("http://alice@127.0.0.1:3128").basicAuthorization == "Basic YWxpY2U6")
    }

    /// RFC 4648 §10 test vectors.
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                      ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func base64(input: String, expected: String) {
        #expect(Base64.encode(Array(input.utf8)) == expected)
    }

    @Test func unknownSchemeIsNamed() {
        let error = #expect(throws: ProxyConfigurationError.self) { try ProxyURL("socks4://127.0.0.1:1080") }
        #expect(error?.reason == .unsupportedScheme("socks4"))
        #expect(error?.description == """
            unsupported proxy scheme "socks4" in "socks4://127.0.0.1:1080" (supported: http, https, socks5, socks5h)
            """)
        #expect(error?.from("ALL_PROXY").description.contains("in ALL_PROXY=\"socks4://127.0.0.1:1080\"") == true)
    }

    @Test func malformedURLsAreErrorsWithoutCredentials() {
        let badPort = #expect(throws: ProxyConfigurationError.self) { try ProxyURL("http://bob:hunter2@proxy:99999") }
        #expect(badPort?.description.contains("invalid port \"99999\"") == true)
        #expect(badPort?.description.contains("hunter2") == false)
        #expect(badPort?.input == "http://***@proxy:99999")

        let path = #expect(throws: ProxyConfigurationError.self) { try ProxyURL("http://proxy:3128/some/path") }
        #expect(path?.reason == .unexpectedPath("/some/path"))

        #expect(throws: ProxyConfigurationError.self) { try ProxyURL("") }
        #expect(throws: ProxyConfigurationError.self) { try ProxyURL("http://") }
        #expect(throws: ProxyConfigurationError.self) { try ProxyURL("http://pro xy:1") }
        #expect(throws: ProxyConfigurationError.self) { try ProxyURL("http://proxy:3128?x") }
    }
}

@Suite struct NoProxyListTests {
    @Test func domainsKeepNoDotAtEitherEndSoTheListReadsBackAsItself() {
        let list = NoProxyList("..a.test,b.test..,*..c.test,...")
        #expect(list.entries == [.domain("a.test", port: nil), .domain("b.test", port: nil), .domain("c.test", port: nil)])
        #expect(NoProxyList(list.description).entries == list.entries)
    }

    @Test func namesNoHostCanHaveAreDropped() {
        #expect(NoProxyList(".[f,a;b,ok.test,x y").entries == [.domain("ok.test", port: nil), .domain("x", port: nil), .domain("y", port: nil)])
    }

    @Test func anAddressWithStrayDotsIsStillAnAddress() throws {
        let list = NoProxyList(".......2.168.1.1,10.0.0.1..")
        #expect(NoProxyList(list.description).entries == list.entries, "\(list)")
        #expect(list.bypasses(try HTTPURL("http://2.168.1.1/").origin))
    }

    private func host(_ text: String) throws -> HTTPHost {
        try HTTPURL("http://\(text)/").host
    }

    private func bypasses(_ list: String, _ hostText: String, port: UInt16 = 80) throws -> Bool {
        NoProxyList(list).bypasses(host: try host(hostText), port: port)
    }

    @Test func domainsMatchThemselvesAndTheirSubdomains() throws {
        for list in ["example.com", ".example.com", "*.example.com", "EXAMPLE.com.", " other.org , example.com "] {
            #expect(try bypasses(list, "example.com"), "\(list)")
            #expect(try bypasses(list, "a.example.com"), "\(list)")
            #expect(try bypasses(list, "x.y.Example.COM"), "\(list)")
            #expect(try !bypasses(list, "notexample.com"), "\(list)")
            #expect(try !bypasses(list, "example.com.evil.test"), "\(list)")
            #expect(try !bypasses(list, "com"), "\(list)")
        }
        #expect(try bypasses("example.com", "example.com."), "a trailing dot on the host is ignored")
        #expect(try !bypasses("", "example.com"))
        #expect(try !bypasses(",, ,", "example.com"))
    }

    @Test func asteriskBypassesEverything() throws {
        #expect(try bypasses("*", "example.com"))
        #expect(try bypasses("*", "127.0.0.1"))
        #expect(try bypasses("*", "[::1]"))
        #expect(try bypasses("a.test,*", "b.test"))
        #expect(NoProxyList("*").entries == [.everything])
    }

    @Test func ipv4AddressesAndRanges() throws {
        #expect(try bypasses("127.0.0.1", "127.0.0.1"))
        #expect(try !bypasses("127.0.0.1", "127.0.0.2"))
        #expect(try bypasses("10.0.0.0/8", "10.200.3.4"))
        #expect(try !bypasses("10.0.0.0/8", "11.0.0.1"))
        #expect(try bypasses("192.168.1.77/24", "192.168.1.1"), "host bits of the entry are ignored")
        #expect(try !bypasses("192.168.1.0/24", "192.168.2.1"))
        #expect(try bypasses("0.0.0.0/0", "203.0.113.9"))
        // Addresses match only hosts written as addresses: the name is not resolved to check.
        #expect(try !bypasses("127.0.0.1", "localhost"))
        #expect(try !bypasses("127.0.0.0/8", "[::1]"))
    }

    @Test func ipv6AddressesAndRanges() throws {
        #expect(try bypasses("::1", "[::1]"))
        #expect(try bypasses("[::1]", "[::1]"))
        #expect(try bypasses("0:0:0:0:0:0:0:1", "[::1]"), "compared as addresses, not as text")
        #expect(try !bypasses("::1", "[::2]"))
        #expect(try bypasses("fd00::/8", "[fd12:3456::1]"))
        #expect(try !bypasses("fd00::/8", "[fe80::1]"))
        #expect(try bypasses("2001:db8::/33", "[2001:db8:7fff::1]"))
        #expect(try !bypasses("2001:db8::/33", "[2001:db8:8000::1]"))
        #expect(try !bypasses("::1", "127.0.0.1"))
    }

    @Test func portQualifiedEntriesCoverOnlyThatPort() throws {
        #expect(try bypasses("example.com:8080", "a.example.com", port: 8080))
        #expect(try !bypasses("example.com:8080", "a.example.com", port: 80))
        #expect(try bypasses("127.0.0.1:8443", "127.0.0.1", port: 8443))
        #expect(try !bypasses("127.0.0.1:8443", "127.0.0.1", port: 443))
        #expect(try bypasses("[::1]:8080", "[::1]", port: 8080))
        #expect(try !bypasses("[::1]:8080", "[::1]", port: 80))
    }

    @Test func malformedEntriesNeverMatchAndNeverFail() throws {
        let list = NoProxyList("10.0.0.0/99,example.com:notaport,[::1,  ok.test")
        #expect(list.bypasses(host: try host("ok.test"), port: 80))
        #expect(!list.bypasses(host: try host("10.0.0.1"), port: 80))
        #expect(!list.bypasses(host: try host("example.com"), port: 80))
        #expect(!list.bypasses(host: try host("[::1]"), port: 80))
    }

    @Test func descriptionIsNormalized() {
        #expect(NoProxyList(".Example.COM., 10.1.2.3/8 ::1, [fd00::]:80,*").description
                    == "example.com,10.1.2.3/8,::1,[fd00::]:80,*")
        #expect(NoProxyList("a.test,A.test").entries.count == 1)
    }
}

@Suite struct ProxyRequestHeadTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func absoluteFormForAForwardProxy() throws {
        var head = RequestHead(url: try HTTPURL("http://user:pw@127.0.0.1:8080/a b?x=1#f"), range: .bytes(0...9))
        head.targetForm = .absolute
        head.proxyAuthorization = "Basic YWxpY2U6c2VjcmV0"
        #expect(text(try head.serialized()) == """
            GET http://127.0.0.1:8080/a%20b?x=1 HTTP/1.1\r
            Host: 127.0.0.1:8080\r
            User-Agent: haul\r
            Accept: */*\r
            Accept-Encoding: identity\r
            Range: bytes=0-9\r
            Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r
            \r

            """)
        #expect(try HTTPURL("http://example.com").absoluteRequestTarget == "http://example.com/")
        #expect(try HTTPURL("http://[::1]:81/p").absoluteRequestTarget == "http://[::1]:81/p")
    }

    @Test func usersProxyAuthorizationWins() throws {
        var head = RequestHead(url: try HTTPURL("http://example.com/"),
                               headers: HTTPFields([("Proxy-Authorization", "Bearer token")]))
        head.proxyAuthorization = "Basic YWxpY2U6c2VjcmV0"
        let serialized = text(try head.serialized())
        #expect(serialized.contains("Proxy-Authorization: Bearer token\r\n"))
        #expect(!serialized.contains("Basic"))
        #expect(serialized.hasPrefix("GET / HTTP/1.1\r\n"), "origin form is the default")
    }

    @Test func proxyAuthorizationIsValidated() throws {
        var head = RequestHead(url: try HTTPURL("http://example.com/"))
        head.proxyAuthorization = "Basic x\r\nX-Injected: 1"
        #expect(throws: RequestHeadError(.invalidHeaderValue(name: "Proxy-Authorization"))) { try head.serialized() }
    }

    @Test func connectRequest() throws {
        let url = try HTTPURL("https://[2001:db8::1]:8443/")
        let head = ConnectRequestHead(host: url.host, port: url.port, userAgent: "haul/0.1",
                                      proxyAuthorization: "Basic YWxpY2U6c2VjcmV0")
        #expect(head.authority == "[2001:db8::1]:8443")
        #expect(text(try head.serialized()) == """
            CONNECT [2001:db8::1]:8443 HTTP/1.1\r
            Host: [2001:db8::1]:8443\r
            User-Agent: haul/0.1\r
            Proxy-Authorization: Basic YWxpY2U6c2VjcmV0\r
            \r

            """)
        let plain = ConnectRequestHead(host: try HTTPURL("https://example.com/").host, port: 443)
        #expect(text(try plain.serialized()) == "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        let bad = ConnectRequestHead(host: url.host, port: 443, userAgent: "a\nb")
        #expect(throws: RequestHeadError.self) { try bad.serialized() }
    }
}
