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
        #expect(StoredValidators.read(path: path) == stored)
        // One attribute, readable as text (`getfattr -d` shows the URL); none of the three old ones.
        #expect(FileDescriptor.extendedAttribute(StoredValidators.attribute, ofPath: path)
                    == Array("haul-validators/1\netag:\"5f5e1000-493e0\"\nlast-modified:Sun, 13 Sep 2020 12:26:40 GMT\nurl:http://a.test/f.bin\nend\n".utf8))
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
            let bytes = try #require(stored.encoded())
            #expect(StoredValidators.decoded(bytes) == stored)
        }
        #expect(none.encoded() == Array("haul-validators/1\nend\n".utf8))
    }

    @Test func aValueCutShortAnywhereIsRejected() throws {
        let stored = StoredValidators(entityTag: "\"e\"", lastModified: "Sun, 13 Sep 2020 12:26:40 GMT", url: "http://a.test/f")
        let bytes = try #require(stored.encoded())
        for length in 0..<bytes.count {
            #expect(StoredValidators.decoded(Array(bytes[..<length])) == nil, "prefix of \(length) bytes")
        }
        // And nothing may follow the trailer.
        #expect(StoredValidators.decoded(bytes + Array("x".utf8)) == nil)
        #expect(StoredValidators.decoded(bytes + Array("end\n".utf8)) == nil)
    }

    @Test func anOversizedValueDropsTheURLThenEverything() throws {
        let longURL = "http://a.test/" + String(repeating: "a", count: StoredValidators.maximumBytes)
        let withLongURL = StoredValidators(entityTag: "\"e\"", lastModified: nil, url: longURL)
        let bytes = try #require(withLongURL.encoded())
        #expect(bytes.count <= StoredValidators.maximumBytes)
        #expect(StoredValidators.decoded(bytes) == StoredValidators(entityTag: "\"e\"", lastModified: nil, url: nil))
        let longTag = "\"" + String(repeating: "t", count: StoredValidators.maximumBytes) + "\""
        #expect(StoredValidators(entityTag: longTag, lastModified: nil, url: nil).encoded() == nil)
        // Read back, a value over the limit is not looked at, however well-formed.
        let oversized = Array("haul-validators/1\netag:\(longTag)\nend\n".utf8)
        #expect(StoredValidators.decoded(oversized) == nil)
        // A value that would put control characters into a request is left out when encoding.
        #expect(StoredValidators(entityTag: "\"a\"\r\nX: y", lastModified: nil, url: "http://h/").encoded()
                    == Array("haul-validators/1\nurl:http://h/\nend\n".utf8))
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
    ])
    func garbageDecodesToNothing(_ text: String) {
        #expect(StoredValidators.decoded(Array(text.utf8)) == nil)
    }

    @Test func randomBytesNeverDecodeIntoAnUnsafeValue() {
        let seed = TestSeed(for: "randomBytesNeverDecodeIntoAnUnsafeValue", default: 0x5eed_23)
        var generator = seed.generator()
        let valid = Array("haul-validators/1\netag:\"abc\"\nlast-modified:Sun, 13 Sep 2020 12:26:40 GMT\nurl:http://h/f\nend\n".utf8)
        var decodedSome = 0
        for _ in 0..<2_000 {
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
}
