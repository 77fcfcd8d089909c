import Testing
import HaulHTTP

@Suite struct HTTPURLTests {
    // MARK: Parsing

    @Test func parsesComponents() throws {
        let url = try HTTPURL("HTTPS://Example.COM:8443/a/b?x=1&y=2#frag")
        #expect(url.scheme == .https)
        #expect(url.host == HTTPHost.registeredNameForTesting("example.com"))
        #expect(url.host.kind == .registeredName)
        #expect(url.port == 8443)
        #expect(!url.isDefaultPort)
        #expect(url.path == "/a/b")
        #expect(url.query == "x=1&y=2")
        #expect(url.requestTarget == "/a/b?x=1&y=2")
        #expect(url.hostHeader == "example.com:8443")
        #expect(url.description == "https://example.com:8443/a/b?x=1&y=2")
        #expect(url.userInfo == nil)
    }

    /// `description` and `absoluteRequestTarget` are written piece by piece into one string: the same text
    /// as putting the parts together by interpolation.
    @Test func descriptionIsTheSchemeHostAndTarget() throws {
        for text in ["http://example.com/", "https://example.com:8443/a/b?x=1&y=2", "http://[::1]:1/?", "https://[2001:db8::1]/p",
                     "http://h:65535/%C3%A9?q=%20", "https://h:443/", "http://h:443/", "http://u:p@h:9/x?y#z",
                     "https://xn--bcher-kva.example/" + String(repeating: "a", count: 300)] {
            let url = try HTTPURL(text)
            let expected = "\(url.scheme.rawValue)://\(url.hostHeader)\(url.requestTarget)"
            #expect(url.description == expected)
            #expect(url.absoluteRequestTarget == expected)
        }
    }

    /// input, description, requestTarget, hostHeader, port
    @Test(arguments: [
        ("http://example.com", "http://example.com/", "/", "example.com", 80),
        ("https://example.com", "https://example.com/", "/", "example.com", 443),
        ("http://example.com:80/", "http://example.com/", "/", "example.com", 80),
        ("https://example.com:443/x", "https://example.com/x", "/x", "example.com", 443),
        ("http://example.com:443/", "http://example.com:443/", "/", "example.com:443", 443),
        ("https://example.com:80/", "https://example.com:80/", "/", "example.com:80", 80),
        ("http://example.com:/p", "http://example.com/p", "/p", "example.com", 80),
        ("http://example.com:0080/", "http://example.com/", "/", "example.com", 80),
        ("http://h:65535/", "http://h:65535/", "/", "h:65535", 65535),
        ("http://h:1", "http://h:1/", "/", "h:1", 1),
        ("http://example.com?q", "http://example.com/?q", "/?q", "example.com", 80),
        ("http://example.com/?", "http://example.com/?", "/?", "example.com", 80),
        ("http://example.com#f", "http://example.com/", "/", "example.com", 80),
        ("http://example.com/p?q#f?g", "http://example.com/p?q", "/p?q", "example.com", 80),
        ("  http://example.com/p  ", "http://example.com/p", "/p", "example.com", 80),
        ("http://a/b/../c/./d", "http://a/c/d", "/c/d", "a", 80),
        ("http://a/../../x", "http://a/x", "/x", "a", 80),
        ("http://a/b/..", "http://a/", "/", "a", 80),
        ("http://a//double//slash", "http://a//double//slash", "//double//slash", "a", 80),
        ("http://a/p?q=../x", "http://a/p?q=../x", "/p?q=../x", "a", 80),
        ("http://my_host.example-1.com./", "http://my_host.example-1.com./", "/", "my_host.example-1.com.", 80),
        ("http://192.0.2.1/", "http://192.0.2.1/", "/", "192.0.2.1", 80),
        ("http://192.0.2.1:8080/", "http://192.0.2.1:8080/", "/", "192.0.2.1:8080", 8080),
        ("http://[::1]/", "http://[::1]/", "/", "[::1]", 80),
        ("http://[::1]:8080/x", "http://[::1]:8080/x", "/x", "[::1]:8080", 8080),
        ("https://[2001:DB8::1]", "https://[2001:db8::1]/", "/", "[2001:db8::1]", 443),
        ("http://1.example/", "http://1.example/", "/", "1.example", 80),
    ])
    func parsesValid(_ input: String, _ description: String, _ target: String, _ hostHeader: String, _ port: Int) throws {
        let url = try HTTPURL(input)
        #expect(url.description == description)
        #expect(url.requestTarget == target)
        #expect(url.hostHeader == hostHeader)
        #expect(Int(url.port) == port)
    }

    @Test func hostKinds() throws {
        #expect(try HTTPURL("http://10.0.0.1/").host.kind == .ipv4)
        #expect(try HTTPURL("http://10.0.0.1/").host.name == "10.0.0.1")
        #expect(try HTTPURL("http://[fe80::1]/").host.kind == .ipv6)
        #expect(try HTTPURL("http://[fe80::1]/").host.name == "fe80::1")
        #expect(try HTTPURL("http://[fe80::1]/").host.uriText == "[fe80::1]")
        #expect(try HTTPURL("http://Example.org/").host.name == "example.org")
    }

    // MARK: IPv6

    /// literal, canonical text (RFC 5952)
    @Test(arguments: [
        ("::", "::"),
        ("::1", "::1"),
        ("1::", "1::"),
        ("2001:db8::1", "2001:db8::1"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        ("2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
        ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
        ("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"),
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),
        ("::ffff:192.0.2.1", "::ffff:c000:201"),
        ("::192.0.2.1", "::c000:201"),
        ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"),
        ("fe80::abcd:ef01", "fe80::abcd:ef01"),
    ])
    func parsesIPv6Literals(_ literal: String, _ canonical: String) throws {
        let url = try HTTPURL("http://[\(literal)]:8080/")
        #expect(url.host.kind == .ipv6)
        #expect(url.host.name == canonical)
        #expect(url.hostHeader == "[\(canonical)]:8080")
    }

    @Test(arguments: [
        "[]", "[:]", "[:::]", "[1:2]", "[1:2:3:4:5:6:7:8:9]", "[1::2::3]", "[12345::]", "[::g]", "[1:2:3:4:5:6:7:8::]",
        "[::1.2.3]", "[::1.2.3.256]", "[::1.2.3.4:5]", "[1:2:3:4:5:6:7:1.2.3.4]", "[1:]", "[:1]", "[::1", "[::1]x",
        "[v1.fe]", "[1.2.3.4]", "[::01.2.3.4]",
    ])
    func rejectsInvalidIPv6(_ host: String) {
        #expect(throws: URLParseError.self) { try HTTPURL("http://\(host)/") }
    }

    @Test func rejectsZoneIDs() {
        #expect(throws: URLParseError(.ipv6ZoneID("[fe80::1%25eth0]"), input: "http://[fe80::1%25eth0]/")) {
            try HTTPURL("http://[fe80::1%25eth0]/")
        }
        #expect { try HTTPURL("http://[fe80::1%eth0]/") } throws: { error in
            (error as? URLParseError)?.reason == .ipv6ZoneID("[fe80::1%eth0]")
        }
    }

    // MARK: Errors

    @Test(arguments: [
        ("", URLParseError.Reason.empty),
        ("   ", .empty),
        ("example.com/x", .missingScheme),
        ("/relative", .missingScheme),
        ("ftp://example.com/", .unsupportedScheme("ftp")),
        ("FILE:///etc/passwd", .unsupportedScheme("file")),
        ("example.com:8080/x", .unsupportedScheme("example.com")),
        ("1http://x/", .invalidScheme("1http")),
        ("ht tp://x/", .invalidScheme("ht tp")),
        ("http:example.com", .missingHost),
        ("http:/example.com", .missingHost),
        ("http://", .missingHost),
        ("http:///path", .missingHost),
        ("http://:80/", .missingHost),
        ("http://user@/", .missingHost),
        ("http://h:99999/", .invalidPort("99999")),
        ("http://h:0/", .invalidPort("0")),
        ("http://h:65536/", .invalidPort("65536")),
        ("http://h:-1/", .invalidPort("-1")),
        ("http://h:8a/", .invalidPort("8a")),
        ("http://h:99999999999999999999999/", .invalidPort("99999999999999999999999")),
        ("http://h:80:80/", .invalidPort("80:80")),
        ("http://ex ample.com/", .invalidHost("ex ample.com")),
        ("http://ex%41mple.com/", .invalidHost("ex%41mple.com")),
        ("http://a!b/", .invalidHost("a!b")),
        ("http://./", .invalidHost(".")),
        ("http://[::1]:8080x/", .invalidPort("8080x")),
        ("http://bücher.de/", .internationalizedHost("bücher.de")),
        ("http://1.2.3.256/", .invalidIPv4Address("1.2.3.256")),
        ("http://1.2.3/", .invalidIPv4Address("1.2.3")),
        ("http://127.1/", .invalidIPv4Address("127.1")),
        ("http://0x7f.0.0.1/", .invalidIPv4Address("0x7f.0.0.1")),
        ("http://foo.0x7f/", .invalidIPv4Address("foo.0x7f")),
        ("http://010.0.0.1/", .invalidIPv4Address("010.0.0.1")),
        ("http://2130706433/", .invalidIPv4Address("2130706433")),
        ("http://1.2.3.4.5/", .invalidIPv4Address("1.2.3.4.5")),
        ("http://h/a%zzb", .invalidPercentEncoding("%zz")),
        ("http://h/a%4", .invalidPercentEncoding("%4")),
        ("http://h/a?%", .invalidPercentEncoding("%")),
        ("http://h/a\r\nHost: evil", .controlCharacter(0x0D)),
        ("http://h/a\nb", .controlCharacter(0x0A)),
        ("http://h/a\u{0}b", .controlCharacter(0x00)),
        ("http://h/?a\u{7F}", .controlCharacter(0x7F)),
        ("http://h/\tx", .controlCharacter(0x09)),
    ])
    func rejectsInvalid(_ input: String, _ reason: URLParseError.Reason) {
        #expect { try HTTPURL(input) } throws: { error in
            guard let error = error as? URLParseError else { return false }
            return error.reason == reason
        }
    }

    @Test func errorMessagesSayWhatAndWhere() {
        func message(_ input: String) -> String {
            do {
                _ = try HTTPURL(input)
                return "no error"
            } catch {
                return error.description
            }
        }
        #expect(message("http://h:99999/") == "invalid port \"99999\" in \"http://h:99999/\"")
        #expect(message("ftp://h/").hasPrefix("unsupported scheme \"ftp\""))
        #expect(message("example.com") == "missing scheme (expected \"http://\" or \"https://\") in \"example.com\"")
        #expect(message("http://h/a\r\nb") == "control character 0x0D in \"http://h/a%0D%0Ab\"")
        #expect(message("http://alice:pw@h:0/") == "invalid port \"0\" in \"http://***@h:0/\"")
        #expect(message("alice:pw@h/x").hasPrefix("missing scheme"))
        #expect(message("ftp://@h/") == "unsupported scheme \"ftp\" (only http and https are supported) in \"ftp://@h/\"")
    }

    @Test func errorsNeverRevealUserInfo() {
        for input in ["ftp://alice:s3cret@h/", "http://alice:s3cret@h:99999/", "http://alice:s3cret@h/%zz",
                      "http://alice:s3cret@bad host/", "http://alice:s3\ncret@h/", "http://alice:s3cret@/",
                      "alice:s3cret@example.com/file", "alice:s3cret@example.com"] {
            do {
                _ = try HTTPURL(input)
                Issue.record("expected an error for \(input)")
            } catch {
                #expect(!error.description.contains("s3cret"), "\(error)")
                #expect(!error.description.contains("alice"), "\(error)")
                #expect(!error.input.contains("s3cret"))
            }
        }
    }

    // MARK: User information

    @Test func parsesUserInfoButNeverPrintsIt() throws {
        let url = try HTTPURL("https://alice:p%40ss%3Aword@example.com/file")
        #expect(url.userInfo?.user == "alice")
        #expect(url.userInfo?.password == "p@ss:word")
        #expect(url.description == "https://example.com/file")
        #expect(url.debugDescription == "https://example.com/file")
        #expect(String(describing: url.userInfo!) == "alice:***")
        #expect(url.hostHeader == "example.com")
        #expect(url.requestTarget == "/file")

        let userOnly = try HTTPURL("http://bob@h/")
        #expect(userOnly.userInfo?.user == "bob")
        #expect(userOnly.userInfo?.password == nil)
        #expect(try HTTPURL("http://a@b@h/").userInfo?.user == "a@b")
        #expect(try HTTPURL("http://:pw@h/").userInfo == HTTPURL.UserInfo.forTesting(user: "", password: "pw"))
    }

    @Test(arguments: ["http://a b@h/", "http://a%zz@h/", "http://a%0A@h/", "http://a%FF@h/"])
    func rejectsInvalidUserInfo(_ input: String) {
        #expect { try HTTPURL(input) } throws: { ($0 as? URLParseError)?.reason == .invalidUserInfo }
    }

    // MARK: Percent-encoding

    @Test(arguments: [
        ("http://h/a b", "/a%20b"),
        ("http://h/caf\u{E9}", "/caf%C3%A9"),
        ("http://h/%E2%82%AC", "/%E2%82%AC"),
        ("http://h/%e2%82%ac", "/%e2%82%ac"),
        ("http://h/\u{20AC}?q=\u{20AC} x", "/%E2%82%AC?q=%E2%82%AC%20x"),
        ("http://h/a\"b<c>d\\e^f`g{h|i}j", "/a%22b%3Cc%3Ed%5Ce%5Ef%60g%7Bh%7Ci%7Dj"),
        ("http://h/keep:@!$&'()*+,;=-._~[]", "/keep:@!$&'()*+,;=-._~[]"),
        ("http://h/p?a=1&b=/?:@", "/p?a=1&b=/?:@"),
        ("http://h/%2e%2e/x", "/%2e%2e/x"),
    ])
    func percentEncodesLikeCurl(_ input: String, _ target: String) throws {
        #expect(try HTTPURL(input).requestTarget == target)
    }

    // MARK: Origin

    @Test func originKeysConnectionPools() throws {
        let a = try HTTPURL("http://Example.com/a")
        let b = try HTTPURL("http://example.com:80/b?c")
        let c = try HTTPURL("https://example.com/a")
        let d = try HTTPURL("http://example.com:8080/a")
        let e = try HTTPURL("http://user:pw@example.com/x")
        #expect(a.origin == b.origin)
        #expect(a.origin == e.origin)
        #expect(a.origin != c.origin)
        #expect(a.origin != d.origin)
        #expect(Set([a.origin, b.origin, c.origin, d.origin]).count == 3)
        #expect(a.origin.description == "http://example.com:80")
        #expect(try HTTPURL("https://[::1]/").origin.description == "https://[::1]:443")
        #expect(try HTTPURL("http://[0:0::1]/").origin == HTTPURL("http://[::1]/").origin)
    }

    // MARK: Reference resolution (RFC 3986 §5.4)

    static let rfcBase = "http://a/b/c/d;p?q"

    /// RFC 3986 §5.4.1. Fragments are dropped since they are never sent; `//g` gains its default path `/`.
    @Test(arguments: [
        ("g", "http://a/b/c/g"),
        ("./g", "http://a/b/c/g"),
        ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"),
        ("//g", "http://g/"),
        ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q"),
        ("g#s", "http://a/b/c/g"),
        ("g?y#s", "http://a/b/c/g?y"),
        (";x", "http://a/b/c/;x"),
        ("g;x", "http://a/b/c/g;x"),
        ("g;x?y#s", "http://a/b/c/g;x?y"),
        ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"),
        ("./", "http://a/b/c/"),
        ("..", "http://a/b/"),
        ("../", "http://a/b/"),
        ("../g", "http://a/b/g"),
        ("../..", "http://a/"),
        ("../../", "http://a/"),
        ("../../g", "http://a/g"),
    ])
    func resolvesNormalExamples(_ reference: String, _ expected: String) throws {
        #expect(try HTTPURL(Self.rfcBase).resolve(reference).description == expected)
    }

    /// RFC 3986 §5.4.1 `g:h`: a valid absolute URI, but not one this type can hold.
    @Test func rejectsNonHTTPAbsoluteReference() throws {
        let base = try HTTPURL(Self.rfcBase)
        #expect { try base.resolve("g:h") } throws: { ($0 as? URLParseError)?.reason == .unsupportedScheme("g") }
    }

    /// RFC 3986 §5.4.2, with the backward-compatible reading of `http:g`.
    @Test(arguments: [
        ("../../../g", "http://a/g"),
        ("../../../../g", "http://a/g"),
        ("/./g", "http://a/g"),
        ("/../g", "http://a/g"),
        ("g.", "http://a/b/c/g."),
        (".g", "http://a/b/c/.g"),
        ("g..", "http://a/b/c/g.."),
        ("..g", "http://a/b/c/..g"),
        ("./../g", "http://a/b/g"),
        ("./g/.", "http://a/b/c/g/"),
        ("g/./h", "http://a/b/c/g/h"),
        ("g/../h", "http://a/b/c/h"),
        ("g;x=1/./y", "http://a/b/c/g;x=1/y"),
        ("g;x=1/../y", "http://a/b/c/y"),
        ("g?y/./x", "http://a/b/c/g?y/./x"),
        ("g?y/../x", "http://a/b/c/g?y/../x"),
        ("g#s/./x", "http://a/b/c/g"),
        ("g#s/../x", "http://a/b/c/g"),
        ("http:g", "http://a/b/c/g"),
    ])
    func resolvesAbnormalExamples(_ reference: String, _ expected: String) throws {
        #expect(try HTTPURL(Self.rfcBase).resolve(reference).description == expected)
    }

    @Test func resolvesRedirectLocations() throws {
        let base = try HTTPURL("https://user:pw@example.com:8443/dir/file?x=1")
        #expect(try base.resolve("http://other.org/new").description == "http://other.org/new")
        #expect(try base.resolve("http://other.org/new").userInfo == nil)
        #expect(try base.resolve("HTTPS://Other.org:443").description == "https://other.org/")
        #expect(try base.resolve("//cdn.example.net/a b").description == "https://cdn.example.net/a%20b")
        #expect(try base.resolve("//cdn.example.net/a").userInfo == nil)
        #expect(try base.resolve("/root?y").description == "https://example.com:8443/root?y")
        #expect(try base.resolve("/root?y").userInfo?.user == "user")
        #expect(try base.resolve("other").description == "https://example.com:8443/dir/other")
        #expect(try base.resolve("?only").description == "https://example.com:8443/dir/file?only")
        #expect(try base.resolve("#frag").description == "https://example.com:8443/dir/file?x=1")
        #expect(try base.resolve("https:g").description == "https://example.com:8443/dir/g")
        #expect(try base.resolve("  /trimmed  ").description == "https://example.com:8443/trimmed")
        #expect(try base.resolve("caf\u{E9}").requestTarget == "/dir/caf%C3%A9")
        #expect(try base.resolve("//[::1]:9/x").hostHeader == "[::1]:9")
    }

    @Test func rejectsInvalidReferences() throws {
        let base = try HTTPURL("http://a/b")
        #expect { try base.resolve("https:g") } throws: { ($0 as? URLParseError)?.reason == .missingHost }
        #expect { try base.resolve("ftp://x/") } throws: { ($0 as? URLParseError)?.reason == .unsupportedScheme("ftp") }
        #expect { try base.resolve("/a\r\nSet-Cookie: x") } throws: { ($0 as? URLParseError)?.reason == .controlCharacter(0x0D) }
        #expect { try base.resolve("//h:99999/") } throws: { ($0 as? URLParseError)?.reason == .invalidPort("99999") }
        #expect { try base.resolve("x%g0") } throws: { ($0 as? URLParseError)?.reason == .invalidPercentEncoding("%g0") }
        #expect { try base.resolve("//") } throws: { ($0 as? URLParseError)?.reason == .missingHost }
        #expect { try base.resolve("u:pw@h/") } throws: { ($0 as? URLParseError)?.reason == .missingScheme }
        #expect(try base.resolve("g@x").description == "http://a/g@x")
        #expect(try base.resolve("./a:b@c").description == "http://a/a:b@c")
    }
}

extension HTTPHost {
    static func registeredNameForTesting(_ name: String) -> HTTPHost {
        // Parsing is the only public way to build a host, which keeps hosts valid by construction.
        try! HTTPURL("http://\(name)/").host
    }
}

extension HTTPURL.UserInfo {
    static func forTesting(user: String, password: String?) -> HTTPURL.UserInfo? {
        let info = password.map { "\(user):\($0)" } ?? user
        return try? HTTPURL("http://\(info)@h/").userInfo
    }
}

extension HTTPURLTests {
    @Test func neverTrapsOnArbitraryInputAndAlwaysYieldsASafeRequestTarget() throws {
        let seed: UInt64 = 0x5552_4C
        print("HTTPURLTests.neverTrapsOnArbitraryInput seed \(seed)")
        var random = SplitMix64(state: seed)
        let base = try HTTPURL("http://a/b/c/d;p?q")
        let prefixes = ["http://", "https://u:p@", "http://[", "//", "/", "", "http://h:"]
        for _ in 0..<20_000 {
            let prefix = prefixes.randomElement(using: &random)!
            let text = prefix + String(decoding: random.syntaxBytes(maxCount: 30), as: UTF8.self)
            for url in [try? HTTPURL(text), try? base.resolve(text)] {
                guard let url else { continue }
                // Whatever parsed must be sendable as-is: printable ASCII, no space, no fragment.
                let target = Array(url.requestTarget.utf8) + Array(url.hostHeader.utf8)
                #expect(target.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }, "\(text.debugDescription)")
                #expect(url.requestTarget.hasPrefix("/"))
            }
        }
    }
}
