import Testing
@testable import HaulHTTP

/// The in-place reader of plain URLs (`HTTPURL.plain`) that `HTTPURL(_:)` tries first must give exactly what the
/// general parser (`HTTPURL(parsingInFull:)`) gives: the same URL, or nil where the general parser refuses the
/// text or reads it some other way (lowercasing, percent-encoding, dot segments, user information, a fragment).
@Suite struct PlainURLTests {
    static let seed: UInt64 = 0x504C_4149_4E55_524C

    /// The reader's answer for `text`, checked against the general parser's; true when the reader took it.
    @discardableResult
    static func agree(_ text: String) -> Bool {
        var bytes = text
        let plain = bytes.withUTF8(HTTPURL.plain)
        let full = Result { () throws(URLParseError) in try HTTPURL(parsingInFull: text) }
        guard let plain else {
            // Declined: the public initializer answers as the general parser does.
            let publicAnswer = Result { () throws(URLParseError) in try HTTPURL(text) }
            #expect(publicAnswer == full, "\(text.debugDescription)")
            return false
        }
        guard case .success(let url) = full else {
            Issue.record("the reader took \(text.debugDescription), which the general parser refuses: \(full)")
            return true
        }
        #expect(plain == url, "\(text.debugDescription)")
        #expect(plain.description == url.description && plain.requestTarget == url.requestTarget
                 && plain.host.kind == url.host.kind, "\(text.debugDescription)")
        #expect((try? HTTPURL(text)) == url, "\(text.debugDescription)")
        return true
    }

    /// The forms of a list's URLs are read in place (else the shortcut would buy nothing).
    @Test(arguments: ["http://127.0.0.1:18080/f00000", "https://example.com/a/b.tar.gz", "http://example.com",
                      "http://example.com?x=1", "https://cdn-1.example_host.net:8443/p;v=2/x?q=a/b?c&d=e:f@g",
                      "http://10.0.0.1/", "https://0x7f.example/", "http://h:1/", "http://h:65535/~user/",
                      "https://a.b.c.d.e/f", "http://h/?", "http://h/a?"])
    func plainURLsAreReadInPlace(_ text: String) {
        #expect(Self.agree(text), "\(text)")
    }

    /// What the reader leaves to the general parser, which accepts it differently or refuses it.
    @Test(arguments: ["HTTP://h/", "http://H/", "http://h/a b", "http://h/%41", "http://h/#f", "http://h/./a",
                      "http://h/a/..", "http://u:p@h/", "http://[::1]/", "http://h:/", "http://h:0/", "http://h:65536/",
                      "http://h:123456/", "http://1.2.3.4./", "http://1.2.3/", "http://.../", "http:///p", "ftp://h/",
                      " http://h/", "http://h/ ", "http://h/\t", "http://h/é", "http://h/a|b", "http://h:80:81/",
                      "http:h/", "https:/h/", "http://h\\x/", "http://01.2.3.4/", "http://0x1/"])
    func unusualURLsAreLeftToTheGeneralParser(_ text: String) {
        #expect(!Self.agree(text), "\(text)")
    }

    /// Every byte of plain URLs replaced by bytes the rules look at (case, delimiters, escapes, dots, digits,
    /// whitespace, controls, high octets), and every byte deleted: the reader agrees with the general parser on
    /// each variant.
    @Test func agreesWithTheGeneralParserOnEverySingleByteChange() {
        print("PlainURLTests seed \(Self.seed)")
        var random = SplitMix64(state: Self.seed)
        let replacements = Array("aZz09.-_:/?#@[]%2F \t\"<>\\^`{|}~;=&+!$'()*,HhSs".utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xFF]
        var urls = ["http://127.0.0.1:18080/f00000", "https://example.com/a/b?c=d", "http://a.b/c/d.e?f?g", "http://1.2.3.4:8/x",
                    "http://h_1-2.example/./", "https://0x1f.example:443/a/../b"]
        let hostAlphabet = Array("abcxyz0129.-_".utf8)
        let targetAlphabet = Array("ab/./..?=&:@~%41".utf8)
        for _ in 0..<30 {
            let host = (0..<(1 + Int.random(in: 0..<12, using: &random))).map { _ in hostAlphabet.randomElement(using: &random)! }
            let target = (0..<Int.random(in: 0..<16, using: &random)).map { _ in targetAlphabet.randomElement(using: &random)! }
            let port = Bool.random(using: &random) ? ":\(Int.random(in: 0...70_000, using: &random))" : ""
            let scheme = Bool.random(using: &random) ? "http" : "https"
            urls.append("\(scheme)://\(String(decoding: host, as: UTF8.self))\(port)/\(String(decoding: target, as: UTF8.self))")
        }
        var checked = 0, taken = 0
        for url in urls {
            let bytes = Array(url.utf8)
            var variants: [[UInt8]] = [bytes]
            for position in bytes.indices {
                var removed = bytes
                removed.remove(at: position)
                variants.append(removed)
                for replacement in replacements {
                    var changed = bytes
                    changed[position] = replacement
                    variants.append(changed)
                }
            }
            for variant in variants {
                if Self.agree(String(decoding: variant, as: UTF8.self)) { taken += 1 }
                checked += 1
            }
        }
        print("PlainURLTests: \(checked) variants, \(taken) read in place")
        #expect(checked > 10_000)
        #expect(taken > checked / 10, "many variants are still plain URLs")
        #expect(taken < checked, "and many are not")
    }

    /// Random text made of URL pieces: the reader and the general parser agree on all of it.
    @Test func agreesWithTheGeneralParserOnRandomURLText() {
        print("PlainURLTests seed \(Self.seed + 1)")
        var random = SplitMix64(state: Self.seed + 1)
        let pieces = ["http", "https", "HTTP", "://", ":", "/", "//", "?", "#", "@", "[", "]", "%", "%2f", "%zz", ".", "..",
                      "a", "Z", "0", "1", "255", "256", "0x", "-", "_", "~", " ", "\t", "é", "\u{01}", "example", "com",
                      "127.0.0.1", "::1", "8080", "65535", "99999", "=", "&"]
        var taken = 0
        for _ in 0..<20_000 {
            var text = Bool.random(using: &random) ? "http://" : ""
            for _ in 0..<Int.random(in: 0..<12, using: &random) { text += pieces.randomElement(using: &random)! }
            if Self.agree(text) { taken += 1 }
        }
        print("PlainURLTests: \(taken) of 20000 random texts read in place")
        #expect(taken > 100)
    }
}

/// A URL keeps its parts behind one reference: copies, and URLs parsed separately from the same text, are equal
/// and hash alike; URLs that differ in any one part are not equal.
@Suite struct HTTPURLPartsTests {
    @Test func equalityAndHashingFollowTheParts() throws {
        let texts = ["http://h/p", "https://h/p", "http://g/p", "http://h:8/p", "http://h/q", "http://h/p?", "http://h/p?x",
                     "http://u@h/p", "http://u:pw@h/p", "http://u:pv@h/p", "http://[::1]/p", "http://1.2.3.4/p"]
        let urls = try texts.map { try HTTPURL($0) }
        for (i, url) in urls.enumerated() {
            let again = try HTTPURL(texts[i])
            let copy = url
            #expect(again == url && copy == url, "\(texts[i])")
            #expect(again.hashValue == url.hashValue, "\(texts[i])")
            for (j, other) in urls.enumerated() where j != i { #expect(other != url, "\(texts[i]) \(texts[j])") }
        }
        let decodedAgain = try urls.map { try HTTPURL($0.absoluteText) }
        #expect(Set(urls + decodedAgain).count == urls.count)
    }
}
