import Testing
import HaulHTTP
@testable import HaulIO
@testable import Haul
import HaulTestSupport
import SystemPackage

/// ``StoredValidators``: the server's validators kept in a finished file's extended attributes, read back
/// as written; a descriptor that takes no attributes costs nothing but the attributes.
@Suite struct StoredValidatorsTests {
    @Test func validatorsWrittenOnAFileAreReadBackExactly() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("f.bin")
        let file = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        let stored = StoredValidators(entityTag: "\"5f5e1000-493e0\"", lastModified: "Sun, 13 Sep 2020 12:26:40 GMT",
                                      url: "http://a.test/f.bin")
        stored.write(on: file.descriptor)
        // The URL does not fit beside them in an inode: the validators do, and they are what `-N` needs.
        #expect(StoredValidators.read(path: path) == StoredValidators(entityTag: stored.entityTag, lastModified: stored.lastModified, url: nil))
        // One attribute, readable as text, compact (it stays in an ext4 inode); none of the three old ones.
        #expect(FileDescriptor.extendedAttribute(StoredValidators.attribute, ofPath: path)
                    == Array("hv2\ne\"5f5e1000-493e0\"\nt1600000000\n.\n".utf8))
        // The longer form, written when the compact one does not fit, reads back the same.
        let longer = StoredValidators(entityTag: "\"" + String(repeating: "0", count: 60) + "\"",
                                      lastModified: "Sun, 13 Sep 2020 12:26:40 GMT", url: "http://a.test/f.bin")
        longer.write(on: file.descriptor)
        #expect(StoredValidators.read(path: path) == longer)
        #expect(FileDescriptor.extendedAttribute(StoredValidators.attribute, ofPath: path) == longer.fullEncoded())
        for old in [StoredValidators.entityTagAttribute, StoredValidators.lastModifiedAttribute, StoredValidators.urlAttribute] {
            #expect(FileDescriptor.extendedAttribute(old, ofPath: path) == nil)
        }
    }

    @Test func filesWrittenByEarlierVersionsKeepTheirThreeAttributes() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("old.bin")
        let file = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        try file.descriptor.setExtendedAttribute(StoredValidators.entityTagAttribute, to: Array("\"abc\"".utf8))
        try file.descriptor.setExtendedAttribute(StoredValidators.lastModifiedAttribute, to: Array("Sun, 13 Sep 2020 12:26:40 GMT".utf8))
        try file.descriptor.setExtendedAttribute(StoredValidators.urlAttribute, to: Array("http://a.test/old.bin".utf8))
        #expect(StoredValidators.read(path: path)
                    == StoredValidators(entityTag: "\"abc\"", lastModified: "Sun, 13 Sep 2020 12:26:40 GMT", url: "http://a.test/old.bin"))
        // An old attribute someone else wrote with a line break in it is not sent back (it would split the
        // request's field); beyond ASCII reads as `?`, as it did.
        try file.descriptor.setExtendedAttribute(StoredValidators.entityTagAttribute, to: Array("\"a\"\r\nX-Evil: 1".utf8))
        try file.descriptor.setExtendedAttribute(StoredValidators.lastModifiedAttribute, to: [0x41, 0xE9])
        #expect(StoredValidators.read(path: path)
                    == StoredValidators(entityTag: nil, lastModified: "A?", url: "http://a.test/old.bin"))
        // The new attribute, when there, is what counts.
        StoredValidators(entityTag: "\"new\"", lastModified: nil, url: nil).write(on: file.descriptor)
        #expect(StoredValidators.read(path: path) == StoredValidators(entityTag: "\"new\"", lastModified: nil, url: nil))
    }

    @Test func theEncodingRoundTrips() throws {
        let none = StoredValidators(entityTag: nil, lastModified: nil, url: nil)
        let cases = [
            StoredValidators(entityTag: "W/\"x\"", lastModified: "Thu, 01 Jan 1970 00:00:00 GMT", url: "https://h/p?q=1#f"),
            StoredValidators(entityTag: nil, lastModified: "Thu, 01 Jan 1970 00:00:00 GMT", url: nil),
            StoredValidators(entityTag: "\"a:b\tc end\"", lastModified: nil, url: "http://h/end"),
            StoredValidators(entityTag: "end", lastModified: "url:x", url: "etag:y"),
            none,
        ]
        for stored in cases {
            let bytes = try #require(stored.fullEncoded())
            #expect(StoredValidators.decoded(bytes) == stored)
            // The compact form, with or without the URL, when it fits: the same validators.
            for withURL in [true, false] {
                guard let compact = stored.compactEncoded(withURL: withURL) else { continue }
                #expect(compact.count <= StoredValidators.inodeBytes)
                var expected = stored
                if !withURL { expected.url = nil }
                #expect(StoredValidators.decoded(compact) == expected, "\(String(decoding: compact, as: UTF8.self))")
            }
        }
        #expect(none.fullEncoded() == Array("haul-validators/1\nend\n".utf8))
        #expect(none.encoded() == Array("hv2\n.\n".utf8))
    }

    @Test func aValueCutShortAnywhereIsRejected() throws {
        let stored = StoredValidators(entityTag: "\"e\"", lastModified: "Sun, 13 Sep 2020 12:26:40 GMT", url: "http://a.test/f")
        for bytes in [try #require(stored.fullEncoded()), try #require(stored.compactEncoded(withURL: true))] {
            for length in 0..<bytes.count {
                #expect(StoredValidators.decoded(Array(bytes[..<length])) == nil, "prefix of \(length) bytes")
            }
            // And nothing may follow the trailer.
            #expect(StoredValidators.decoded(bytes + Array("x".utf8)) == nil)
            #expect(StoredValidators.decoded(bytes + Array("end\n".utf8)) == nil)
            #expect(StoredValidators.decoded(bytes + Array(".\n".utf8)) == nil)
        }
    }

    /// The compact form keeps the server's exact `Last-Modified` text: as seconds only when the IMF-fixdate of
    /// those seconds is that text, else the text itself; it drops the URL before it would leave the inode,
    /// and gives way to the longer form (with the URL) when the validators alone do not fit.
    @Test func theCompactFormKeepsTheExactTextAndFitsTheInode() throws {
        let fixdate = StoredValidators(entityTag: "\"6927c6a8-1000\"", lastModified: "Thu, 26 Nov 2026 09:28:40 GMT",
                                       url: "http://127.0.0.1:18080/files/f1")
        let bytes = try #require(fixdate.encoded())
        #expect(bytes == Array("hv2\ne\"6927c6a8-1000\"\nt1795685320\n.\n".utf8), "\(String(decoding: bytes, as: UTF8.self))")
        #expect(StoredValidators.decoded(bytes) == StoredValidators(entityTag: fixdate.entityTag, lastModified: fixdate.lastModified, url: nil))
        // RFC 850 and asctime forms, or a fixdate with another day name, are kept as text.
        for text in ["Thursday, 26-Nov-26 09:28:40 GMT", "Thu Nov 26 09:28:40 2026", "Fri, 26 Nov 2026 09:28:40 GMT"] {
            let stored = StoredValidators(entityTag: "\"e\"", lastModified: text, url: nil)
            let encoded = try #require(stored.encoded())
            #expect(encoded.count <= StoredValidators.inodeBytes)
            #expect(StoredValidators.decoded(encoded) == stored, "\(text)")
        }
        // An S3-style tag and a fixdate: compact; a longer tag: the longer form, URL and all.
        let s3 = StoredValidators(entityTag: "\"" + String(repeating: "a", count: 32) + "\"",
                                  lastModified: "Thu, 26 Nov 2026 09:28:40 GMT", url: "https://bucket.example/k")
        #expect(try #require(s3.encoded()).count <= StoredValidators.inodeBytes)
        let long = StoredValidators(entityTag: "\"" + String(repeating: "a", count: 48) + "\"",
                                    lastModified: "Thu, 26 Nov 2026 09:28:40 GMT", url: "https://bucket.example/k")
        #expect(long.encoded() == long.fullEncoded())
        #expect(StoredValidators.decoded(try #require(long.encoded())) == long)
    }

    @Test func anOversizedValueDropsTheURLThenEverything() throws {
        let longURL = "http://a.test/" + String(repeating: "a", count: StoredValidators.maximumBytes)
        let withLongURL = StoredValidators(entityTag: "\"e\"", lastModified: nil, url: longURL)
        let bytes = try #require(withLongURL.fullEncoded())
        #expect(bytes.count <= StoredValidators.maximumBytes)
        #expect(StoredValidators.decoded(bytes) == StoredValidators(entityTag: "\"e\"", lastModified: nil, url: nil))
        let longTag = "\"" + String(repeating: "t", count: StoredValidators.maximumBytes) + "\""
        #expect(StoredValidators(entityTag: longTag, lastModified: nil, url: nil).encoded() == nil)
        #expect(StoredValidators(entityTag: longTag, lastModified: nil, url: nil).fullEncoded() == nil)
        // Read back, a value over the limit is not looked at, however well-formed.
        let oversized = Array("haul-validators/1\netag:\(longTag)\nend\n".utf8)
        #expect(StoredValidators.decoded(oversized) == nil)
        // A value that would put control characters into a request is left out when encoding.
        #expect(StoredValidators(entityTag: "\"a\"\r\nX: y", lastModified: nil, url: "http://h/").fullEncoded()
                    == Array("haul-validators/1\nurl:http://h/\nend\n".utf8))
        #expect(StoredValidators(entityTag: "\"a\"\r\nX: y", lastModified: nil, url: "http://h/").encoded()
                    == Array("hv2\nuhttp://h/\n.\n".utf8))
    }

    @Test(arguments: [
        "",                                                   // empty
        "\n",                                                 // one empty line
        "haul-validators/1\n",                                // no trailer
        "haul-validators/2\netag:\"a\"\nend\n",                // a later version
        "haul-validators/1\r\netag:\"a\"\nend\n",             // CR in the header
        "haul-validators/1\netag:\"a\"\r\nend\n",             // CR in a value
        "haul-validators/1\netag:\"a\"\nX-Evil: 1\nend\n",     // an unknown line
        "haul-validators/1\netag:\"a\"\netag:\"b\"\nend\n",     // a key twice
        "haul-validators/1\nurl:http://h/\netag:\"a\"\nend\n",  // keys out of order
        "haul-validators/1\netag:\nend\n",                    // an empty value
        "haul-validators/1\n\nend\n",                         // an empty line
        "haul-validators/1\nend",                             // no final line feed
        "haul-validators/1\nend\nend\n",                      // two trailers
        "haul-validators/1\nETAG:\"a\"\nend\n",                // keys are lowercase
        "\u{0}haul-validators/1\nend\n",                      // a NUL first
        "hv2\n",                                              // compact, no trailer
        "hv2\ne\"a\"\n",                                      // compact, cut at a line's end
        "hv2\nx1\n.\n",                                       // compact, an unknown key
        "hv2\nt1\ne\"a\"\n.\n",                              // compact, keys out of order
        "hv2\nt1\nmThu\n.\n",                                 // compact, t and m both
        "hv2\ne\"a\"\ne\"b\"\n.\n",                          // compact, a key twice
        "hv2\nt01\n.\n",                                      // compact, a leading zero
        "hv2\nt-1\n.\n",                                      // compact, a sign
        "hv2\nt1234567890123\n.\n",                           // compact, too many digits
        "hv2\nt\n.\n",                                        // compact, no digits
        "hv2\ne\"a\"\r\n.\n",                                 // compact, CR in a value
        "hv2\n\n.\n",                                         // compact, an empty line
        "hv2\n.\n.\n",                                        // compact, two trailers
    ])
    func garbageDecodesToNothing(_ text: String) {
        #expect(StoredValidators.decoded(Array(text.utf8)) == nil)
    }

    @Test func randomBytesNeverDecodeIntoAnUnsafeValue() {
        let seed = TestSeed(for: "randomBytesNeverDecodeIntoAnUnsafeValue", default: 0x5eed_23)
        var generator = seed.generator()
        let valids = [Array("haul-validators/1\netag:\"abc\"\nlast-modified:Sun, 13 Sep 2020 12:26:40 GMT\nurl:http://h/f\nend\n".utf8),
                      Array("hv2\ne\"abc\"\nt1600000000\nuhttp://h/f\n.\n".utf8)]
        var decodedSome = 0
        for round in 0..<4_000 {
            let valid = valids[round % 2]
            // Flip, insert or delete a few bytes of a valid value: most results are rejected; whatever decodes
            // holds only storable text.
            var bytes = valid
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[at] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: at)
                default: bytes.remove(at: at)
                }
            }
            guard let decoded = StoredValidators.decoded(bytes) else { continue }
            decodedSome += 1
            for value in [decoded.entityTag, decoded.lastModified, decoded.url] {
                if let value { #expect(StoredValidators.isStorable(Array(value.utf8)), "\(bytes), \(seed)") }
            }
        }
        #expect(decodedSome > 0)
    }

    @Test func aFileWithoutAttributesHasNoValidators() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("plain.bin")
        _ = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        #expect(StoredValidators.read(path: path) == StoredValidators(entityTag: nil, lastModified: nil, url: nil))
        #expect(StoredValidators.read(path: directory.file("missing")) == StoredValidators(entityTag: nil, lastModified: nil, url: nil))
    }

    @Test func aDescriptorWithoutAttributeSupportIsSkippedQuietly() throws {
        let (readEnd, writeEnd) = try FileDescriptor.openingSignalPipe()
        defer { try? readEnd.close(); try? writeEnd.close() }
        // A pipe takes no user attributes: the write gives up without a word (and without a crash).
        StoredValidators(entityTag: "\"x\"", lastModified: nil, url: nil).write(on: writeEnd)
        #expect(throws: SystemError.self) { try writeEnd.setExtendedAttribute("user.haul.etag", to: Array("\"x\"".utf8)) }
    }

    @Test func remoteTimeIsSetOnTheDescriptor() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("t.bin")
        let file = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        try file.descriptor.setModificationTime(secondsSinceEpoch: 1_500_000_000)
        #expect(FileDescriptor.modificationTime(ofPath: path) == 1_500_000_000)
    }
    /// The compact form is built as bytes, with the lines before the URL's (and the date's parse) made once
    /// for both tries; over seeded validators (IMF-fixdates, other date forms, long and short URLs and tags,
    /// unstorable text) ``StoredValidators/encoded()`` writes what the string-built form it replaced wrote.
    @Test func encodesAsTheStringBuiltFormDid() {
        let seed = TestSeed(for: "StoredValidatorsTests.encodesAsTheStringBuiltFormDid", default: 0x5356_4543)
        var random = seed.generator()
        func pick<T>(_ choices: [T]) -> T { choices[Int(random.next() % UInt64(choices.count))] }
        func text(_ alphabet: String, upTo count: Int) -> String {
            let characters = Array(alphabet)
            return String((0..<Int(random.next() % UInt64(count + 1))).map { _ in pick(characters) })
        }
        for _ in 0..<5_000 {
            let date: String? = pick([
                nil, HTTPDate(secondsSinceEpoch: Int64(random.next() % 8_000_000_000)).imfFixdate,
                "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 gmt",
                "Mon, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:60 GMT", "x", "Sun, 06 Nov 1994 08:49:37 GMT\n",
            ])
            let tag: String? = pick([nil, "\"" + text("0123456789abcdef-", upTo: 40) + "\"", "W/\"x\"", "é", ""])
            let url: String? = pick([nil, "http://h/" + text("abc/%._-", upTo: 50), "http://h/\u{7}", "https://127.0.0.1:18080/f00001"])
            let stored = StoredValidators(entityTag: tag, lastModified: date, url: url)
            let expected = Self.stringBuiltCompact(stored, withURL: true) ?? Self.stringBuiltCompact(stored, withURL: false)
                ?? stored.fullEncoded()
            #expect(stored.encoded() == expected, "\(stored), \(seed)")
            for withURL in [true, false] {
                #expect(stored.compactEncoded(withURL: withURL) == Self.stringBuiltCompact(stored, withURL: withURL), "\(stored), \(seed)")
            }
        }
    }

    /// The validators of a finished run (``StoredValidators/init(of:)``: the URL's text made only when it may
    /// fit, the date the run parsed tried before the text is parsed) encode exactly as the same three texts
    /// given as strings do, over URLs that fit and do not, dates that are and are not the field's text.
    @Test func validatorsOfAFinishedRunEncodeAsTheirTexts() throws {
        let seed = TestSeed(for: "StoredValidatorsTests.validatorsOfAFinishedRunEncodeAsTheirTexts", default: 0x5641_4C53)
        var random = seed.generator()
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let urls = ["http://h/", "http://h/f", "https://127.0.0.1:18080/f00001", "http://[::1]:8/a?b=c", "http://a.test/" + String(repeating: "x", count: 40),
                    "https://example.org/dir/file.tar.gz?token=abc", "http://h:80/p?"]
        let dates = ["Sun, 13 Sep 2020 12:26:40 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Sunday, 13-Sep-20 12:26:40 GMT",
                     "sun, 13 Sep 2020 12:26:40 GMT", "not a date"]
        for _ in 0..<300 {
            let url = try HTTPURL(pick(urls))
            let tag: String? = pick([nil, "\"v1\"", "\"5f5e1000-493e0\"", "W/\"" + String(repeating: "a", count: 30) + "\""])
            let date: String? = pick([nil] + dates)
            // The date the run parsed: the field's own, another (a mirror's), or none.
            let parsed: HTTPDate? = pick([date.flatMap { HTTPDate($0) }, HTTPDate(secondsSinceEpoch: 1_600_000_001), nil])
            var lines = ["HTTP/1.1 200 OK", "Content-Length: 1"]
            if let tag { lines.append("ETag: \(tag)") }
            if let date { lines.append("Last-Modified: \(date)") }
            let head = CollectedResponse.parse(pieces: [Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)]).head!
            let finished = SegmentedDownload.Finished(
                file: nil, partPath: "f.part", journalPath: "f.part.haul", journaled: false, bytes: 1, finalURL: url,
                entityTag: nil, lastModified: parsed, redirects: 0, connections: 1, bytesRequested: 1, retries: 0, response: head)
            let stored = StoredValidators(of: finished)
            // Without the field, the date the run parsed is written out (as before).
            let texts = StoredValidators(entityTag: tag, lastModified: date ?? parsed?.description, url: url.description)
            #expect(stored == texts, "\(url) \(String(describing: tag)) \(String(describing: date)), \(seed)")
            #expect(stored.encoded() == texts.encoded(), "\(url) \(String(describing: tag)) \(String(describing: date)), \(seed)")
            #expect(stored.url == url.description)
        }
    }

    /// The compact form as it was built before, from strings.
    private static func stringBuiltCompact(_ stored: StoredValidators, withURL: Bool) -> [UInt8]? {
        var text = "hv2\n"
        if let entityTag = stored.entityTag, StoredValidators.isStorable(Array(entityTag.utf8)) { text += "e" + entityTag + "\n" }
        if let lastModified = stored.lastModified, StoredValidators.isStorable(Array(lastModified.utf8)) {
            if let date = HTTPDate(lastModified), date.imfFixdate == lastModified {
                text += "t" + String(date.secondsSinceEpoch) + "\n"
            } else {
                text += "m" + lastModified + "\n"
            }
        }
        if withURL {
            guard let url = stored.url, StoredValidators.isStorable(Array(url.utf8)) else { return nil }
            text += "u" + url + "\n"
        }
        text += ".\n"
        return text.utf8.count <= StoredValidators.inodeBytes ? Array(text.utf8) : nil
    }
}
