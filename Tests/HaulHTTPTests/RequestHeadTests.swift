import Testing
import HaulHTTP

@Suite struct RequestHeadTests {
    private func text(_ head: RequestHead) throws -> String {
        String(decoding: try head.serialized(), as: UTF8.self)
    }

    /// The serializer copies bytes without making strings; what it sends must be what the string forms
    /// (`requestTarget`, `hostHeader`, `RangeRequest.headerValue`) spell, for every host kind, port, query,
    /// target form and range.
    @Test func serializedBytesMatchTheStringForms() throws {
        let urls = ["http://example.com/", "http://example.com:80/a?b=c", "https://h:443/x", "https://h:1/x?",
                    "http://[2001:db8::1]/v6", "http://[::1]:65535/p?q=%20", "http://10.0.0.1:8080/f.iso",
                    "https://xn--bcher-kva.example/%C3%A9?a=b&c=d"]
        let ranges: [RangeRequest?] = [nil, .from(0), .from(9), .bytes(0...0), .bytes(100...199),
                                       .bytes(1_234_567_890_123...9_223_372_036_854_775_806), .suffix(1),
                                       .suffix(Int64.max), .from(Int64.max)]
        var checked = 0
        for text in urls {
            let url = try HTTPURL(text)
            for range in ranges {
                for form in [RequestHead.TargetForm.origin, .absolute] {
                    for userAgent in ["haul", " haul/1 ", ""] {
                        var head = RequestHead(url: url, range: range, userAgent: userAgent)
                        head.targetForm = form
                        var expected = "GET \(form == .absolute ? "\(url.scheme.rawValue)://\(url.hostHeader)\(url.requestTarget)" : url.requestTarget) HTTP/1.1\r\n"
                        expected += "Host: \(url.hostHeader)\r\n"
                        expected += "User-Agent: \(userAgent.trimmingSpaces)\r\n"
                        expected += "Accept: */*\r\nAccept-Encoding: identity\r\n"
                        if let range { expected += "Range: \(range.headerValue)\r\n" }
                        expected += "\r\n"
                        #expect(try self.text(head) == expected, "\(text) \(String(describing: range)) \(form)")
                        // Appending keeps what the buffer held.
                        var buffer: [UInt8] = Array("kept".utf8)
                        try head.serialize(into: &buffer)
                        #expect(buffer == Array("kept".utf8) + Array(expected.utf8))
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == urls.count * ranges.count * 2 * 3)
    }

    @Test func serializesMinimalGet() throws {
        let head = RequestHead(url: try HTTPURL("http://example.com/file.iso"))
        #expect(try text(head) == """
            GET /file.iso HTTP/1.1\r
            Host: example.com\r
            User-Agent: haul\r
            Accept: */*\r
            Accept-Encoding: identity\r
            \r

            """)
    }

    @Test func serializesRangedHeadWithEverything() throws {
        let url = try HTTPURL("https://user:pw@[2001:db8::1]:8443/a b/f?x=1#frag")
        let head = RequestHead(
            method: .get, url: url, range: .bytes(100...199),
            ifRange: .entityTag(try #require(EntityTag("\"abc\""))),
            userAgent: "haul/1.0", closeConnection: true,
            headers: HTTPFields([("Authorization", "Basic dXNlcjpwdw=="), ("X-Trace", "  padded\tvalue  ")]))
        #expect(try text(head) == """
            GET /a%20b/f?x=1 HTTP/1.1\r
            Host: [2001:db8::1]:8443\r
            User-Agent: haul/1.0\r
            Accept: */*\r
            Accept-Encoding: identity\r
            Range: bytes=100-199\r
            If-Range: "abc"\r
            Connection: close\r
            Authorization: Basic dXNlcjpwdw==\r
            X-Trace: padded\tvalue\r
            \r

            """)
    }

    @Test func serializesHeadWithDateValidatorAndOpenRange() throws {
        let head = RequestHead(method: .head, url: try HTTPURL("http://h:8080"), range: .from(0),
                               ifRange: .lastModified(HTTPDate(secondsSinceEpoch: 784_111_777)))
        #expect(try text(head) == """
            HEAD / HTTP/1.1\r
            Host: h:8080\r
            User-Agent: haul\r
            Accept: */*\r
            Accept-Encoding: identity\r
            Range: bytes=0-\r
            If-Range: Sun, 06 Nov 1994 08:49:37 GMT\r
            \r

            """)
    }

    @Test func userAgentAndAcceptOverrideTheDefaults() throws {
        let head = RequestHead(url: try HTTPURL("http://h/"),
                               headers: HTTPFields([("accept", "application/octet-stream"), ("USER-AGENT", "custom/2")]))
        let serialized = try text(head)
        #expect(serialized == """
            GET / HTTP/1.1\r
            Host: h\r
            Accept-Encoding: identity\r
            accept: application/octet-stream\r
            USER-AGENT: custom/2\r
            \r

            """)
    }

    @Test func keepsObsTextAndOpaqueTagBytes() throws {
        var fields = HTTPFields()
        fields.append(name: Array("X-Name".utf8), value: [0x63, 0x61, 0x66, 0xE9])
        let tag = try #require(EntityTag([0x22, 0xE9, 0x22][...]))
        let bytes = try RequestHead(url: try HTTPURL("http://h/"), range: .from(5), ifRange: .entityTag(tag),
                                    headers: fields).serialized()
        let ifRangeLine: [UInt8] = Array("If-Range: ".utf8) + [0x22, 0xE9, 0x22, 0x0D, 0x0A]
        #expect(bytes.firstRange(of: ifRangeLine) != nil)
        #expect(bytes.firstRange(of: Array("X-Name: caf".utf8) + [0xE9, 0x0D, 0x0A]) != nil)
    }

    @Test func appendsToAnExistingBuffer() throws {
        var buffer = Array("previous".utf8)
        try RequestHead(url: try HTTPURL("http://h/")).serialize(into: &buffer)
        #expect(buffer.starts(with: Array("previousGET / HTTP/1.1\r\n".utf8)))
        #expect(buffer.suffix(4).elementsEqual("\r\n\r\n".utf8))
    }

    // MARK: Rejections

    private func reason(_ head: RequestHead) -> RequestHeadError.Reason? {
        var buffer = Array("untouched".utf8)
        do {
            try head.serialize(into: &buffer)
            return nil
        } catch {
            #expect(buffer == Array("untouched".utf8), "a failed serialization must not write anything")
            return error.reason
        }
    }

    /// CR, LF, NUL and other control characters in values would inject headers or split the request.
    @Test(arguments: [
        "a\r\nHost: evil", "a\nX: y", "a\rb", "a\u{0}b", "a\u{1}b", "a\u{7F}b", "\r\n\r\nGET /admin HTTP/1.1",
    ])
    func rejectsControlCharactersInValues(_ value: String) throws {
        let head = RequestHead(url: try HTTPURL("http://h/"), headers: HTTPFields([("X-Evil", value)]))
        #expect(reason(head) == .invalidHeaderValue(name: "X-Evil"))
    }

    @Test func rejectsControlCharactersInUserAgent() throws {
        let head = RequestHead(url: try HTTPURL("http://h/"), userAgent: "haul\r\nX-Injected: 1")
        #expect(reason(head) == .invalidHeaderValue(name: "User-Agent"))
    }

    @Test(arguments: ["", "X Name", "X:Name", "X-Name:", "Na\u{E9}me", "X\r\nY", "(comment)", "a/b", "\"q\""])
    func rejectsNonTokenNames(_ name: String) throws {
        let head = RequestHead(url: try HTTPURL("http://h/"), headers: HTTPFields([(name, "v")]))
        guard case .invalidHeaderName = reason(head) else {
            Issue.record("expected invalidHeaderName for \(name.debugDescription)")
            return
        }
    }

    @Test(arguments: [
        "Host", "host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "TE", "Upgrade",
        "Trailer", "Range", "If-Range", "Accept-Encoding", "Proxy-Connection",
    ])
    func rejectsReservedHeaders(_ name: String) throws {
        let head = RequestHead(url: try HTTPURL("http://h/"), headers: HTTPFields([(name, "x")]))
        #expect(reason(head) == .reservedHeader(name))
        #expect(RequestHeadError(.reservedHeader(name)).description.contains(name))
    }

    @Test func rejectsWeakEntityTagInIfRange() throws {
        let head = RequestHead(url: try HTTPURL("http://h/"), range: .from(10),
                               ifRange: .entityTag(try #require(EntityTag("W/\"abc\""))))
        #expect(reason(head) == .weakEntityTagInIfRange)
    }

    @Test func rejectsIfRangeWithoutRange() throws {
        let head = RequestHead(url: try HTTPURL("http://h/"), ifRange: .entityTag(try #require(EntityTag("\"abc\""))))
        #expect(reason(head) == .ifRangeWithoutRange)
    }

    @Test func errorDescriptionsNameTheHeader() {
        #expect(RequestHeadError(.invalidHeaderValue(name: "X-Evil")).description.contains("\"X-Evil\""))
        #expect(RequestHeadError(.invalidHeaderName("X Y")).description.contains("\"X Y\""))
    }
}

extension RequestHeadTests {
    /// Whatever headers a user passes, the head either fails or has CR and LF only as line endings.
    @Test func neverEmitsStrayLineBreaks() throws {
        let seed: UInt64 = 0x4845_4144
        print("RequestHeadTests.neverEmitsStrayLineBreaks seed \(seed)")
        var random = SplitMix64(state: seed)
        let url = try HTTPURL("http://h/")
        for _ in 0..<5_000 {
            var fields = HTTPFields()
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                fields.append(name: random.syntaxBytes(maxCount: 8), value: random.syntaxBytes(maxCount: 16))
            }
            guard let bytes = try? RequestHead(url: url, headers: fields).serialized() else { continue }
            #expect(bytes.suffix(4).elementsEqual("\r\n\r\n".utf8))
            let lines = bytes.dropLast(4).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            for line in lines.dropLast() { #expect(line.last == UInt8(ascii: "\r")) }
            for line in lines {
                let content = line.last == UInt8(ascii: "\r") ? line.dropLast() : line[...]
                #expect(!content.contains(UInt8(ascii: "\r")) && !content.isEmpty)
            }
        }
    }
}

extension RequestHeadTests {
    /// `validate()` (what preparing a download runs instead of serializing a head it throws away) throws
    /// exactly what `serialized()` throws, and nothing when that serializes: over seeded heads mixing valid,
    /// invalid and reserved header names, values with control bytes, defaults replaced, proxy credentials,
    /// `If-Range` validators (strong, weak, a date) with and without a range.
    @Test func validateThrowsWhatSerializingThrows() throws {
        let seed: UInt64 = 0x5641_4C49_4441_5445
        print("RequestHeadTests.validateThrowsWhatSerializingThrows seed \(seed)")
        var random = SplitMix64(state: seed)
        let names = ["Authorization", "X-Trace", "user-agent", "ACCEPT", "Proxy-Authorization", "Range", "host",
                     "Transfer-Encoding", "X Bad", "", "N\u{E9}", "a:b", "Cookie"]
        let url = try HTTPURL("http://example.com:8080/a?b")
        let strong = try #require(EntityTag("\"abc\""))
        let weak = try #require(EntityTag("W/\"abc\""))
        var counts = (thrown: 0, serialized: 0)
        for _ in 0..<5_000 {
            var fields: [(String, String)] = []
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                let value = Bool.random(using: &random) ? "plain value"
                    : String(decoding: random.syntaxBytes(maxCount: 12), as: UTF8.self)
                fields.append((names.randomElement(using: &random)!, value))
            }
            let ifRanges: [IfRangeValidator?] = [nil, .entityTag(strong), .entityTag(weak), .lastModified(HTTPDate(secondsSinceEpoch: 784_111_777))]
            let ranges: [RangeRequest?] = [nil, .from(0), .bytes(5...9)]
            var head = RequestHead(url: url, range: ranges.randomElement(using: &random)!,
                                   ifRange: ifRanges.randomElement(using: &random)!,
                                   userAgent: Bool.random(using: &random) ? "haul" : "h\u{1}aul",
                                   closeConnection: Bool.random(using: &random), headers: HTTPFields(fields))
            if Bool.random(using: &random) { head.proxyAuthorization = Bool.random(using: &random) ? "Basic eA==" : "Basic\r\nX: y" }
            if Bool.random(using: &random) { head.targetForm = .absolute }
            let serializing = Result { () throws(RequestHeadError) in try head.serialized() }
            let validating = Result { () throws(RequestHeadError) in try head.validate() }
            switch (serializing, validating) {
            case (.success, .success): counts.serialized += 1
            case let (.failure(expected), .failure(error)):
                #expect(error == expected, "\(fields), seed \(seed)")
                counts.thrown += 1
            default:
                Issue.record("serialized: \(serializing), validate: \(validating), \(fields), seed \(seed)")
            }
        }
        // Both outcomes were exercised.
        #expect(counts.thrown > 300 && counts.serialized > 300, "\(counts)")
    }
}

private extension String {
    /// Without leading and trailing spaces (what a field value loses when sent).
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
