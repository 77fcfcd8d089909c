import HaulTestSupport
import Testing

@testable import Haul

/// The Metalink v4 parser (RFC 5854) on valid documents, on every error it reports, and on random
/// mutations of valid documents (it must never trap), and the request built from a parsed file.
@Suite struct MetalinkTests {
    /// RFC 5854, section 1.1 (the example, with its `xmlns`), plus a second URL and a sha-1 hash.
    static let rfcExample = """
        <?xml version="1.0" encoding="UTF-8"?>
        <metalink xmlns="urn:ietf:params:xml:ns:metalink">
          <file name="example.ext">
            <size>14471447</size>
            <identity>Example</identity>
            <version>1.0</version>
            <language>en</language>
            <description>
              A description of the example file for download.
            </description>
            <hash type="sha-256">f0ad929cd259957e160ea442eb80986b5f01e1e5a6aa7b3b9ae2c2a3a5b0c6bf</hash>
            <hash type="sha-1">a97fcf6ba9358f8a6f62beee4421863d3e52b080</hash>
            <url location="de" priority="1">ftp://ftp.example.com/example.ext</url>
            <url location="fr" priority="1">http://example.com/example.ext</url>
            <url priority="2">https://mirror.example.net/example.ext</url>
            <metaurl mediatype="torrent" priority="2">http://example.com/example.ext.torrent</metaurl>
          </file>
          <published>2009-05-15T12:23:23Z</published>
        </metalink>
        """

    static func parse(_ text: String) throws(MetalinkError) -> Metalink { try Metalink(parsing: Array(text.utf8)) }

    static func document(_ files: String) -> String {
        "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\(files)</metalink>"
    }

    @Test func parsesTheRFCExample() throws {
        let metalink = try Self.parse(Self.rfcExample)
        #expect(metalink.files.count == 1)
        let file = try #require(metalink.files.first)
        #expect(file.name == "example.ext")
        #expect(file.size == 14_471_447)
        // ftp is left out; priority 1 before 2.
        #expect(file.urls == [MetalinkURL(url: "http://example.com/example.ext", priority: 1, location: "fr"),
                              MetalinkURL(url: "https://mirror.example.net/example.ext", priority: 2)])
        #expect(file.hashes.map(\.type) == ["sha-256", "sha-1"])
        #expect(file.strongestChecksum == Checksum(algorithm: .sha256, hex: "f0ad929cd259957e160ea442eb80986b5f01e1e5a6aa7b3b9ae2c2a3a5b0c6bf"))
        #expect(file.pieces == nil)
    }

    @Test func parsesPiecesSeveralFilesPrefixesAndExtensions() throws {
        let text = """
            <?xml version='1.0'?>
            <!-- a comment --><?some-pi data?>
            <ml:metalink xmlns:ml="urn:ietf:params:xml:ns:metalink" xmlns:x="http://example.org/ext">
              <ml:file name="dir/a.bin">
                <ml:size>10</ml:size>
                <x:extension><x:nested a="1">ignored</x:nested></x:extension>
                <ml:url>http://a.example/a.bin?x=1&amp;y=&#x32;</ml:url>
                <ml:url priority="5">http://b.example/a.bin</ml:url>
                <ml:hash type="MD5">D41D8CD98F00B204E9800998ECF8427E</ml:hash>
                <ml:pieces length="4" type="sha-1">
                  <ml:hash>a97fcf6ba9358f8a6f62beee4421863d3e52b080</ml:hash>
                  <ml:hash><![CDATA[a97fcf6ba9358f8a6f62beee4421863d3e52b080]]></ml:hash>
                  <ml:hash>a97fcf6ba9358f8a6f62beee4421863d3e52b080</ml:hash>
                </ml:pieces>
              </ml:file>
              <ml:file name="b"><ml:url>https://c.example/b</ml:url><ml:hash type="sha-512">\(String(repeating: "ab", count: 64))</ml:hash><ml:hash type="sha-256">\(String(repeating: "cd", count: 32))</ml:hash></ml:file>
            </ml:metalink>
            """
        let metalink = try Self.parse(text)
        #expect(metalink.files.map(\.name) == ["dir/a.bin", "b"])
        let first = metalink.files[0]
        #expect(first.urls.map(\.url) == ["http://b.example/a.bin", "http://a.example/a.bin?x=1&y=2"])
        #expect(first.strongestChecksum == Checksum(algorithm: .md5, hex: "d41d8cd98f00b204e9800998ecf8427e"))
        #expect(first.pieces?.length == 4)
        #expect(first.pieces?.algorithm == .sha1)
        #expect(first.pieces?.hashes.count == 3)
        #expect(metalink.files[1].strongestChecksum?.algorithm == .sha512)
    }

    @Test func buildsARequest() throws {
        let file = try #require(try Self.parse(Self.rfcExample).files.first)
        let request = try DownloadRequest(metalink: file, directory: "/tmp/out/")
        #expect(request.url == "http://example.com/example.ext")
        #expect(request.mirrors == ["https://mirror.example.net/example.ext"])
        #expect(request.destination == .file("/tmp/out/example.ext"))
        #expect(request.checksum?.algorithm == .sha256)
        #expect(request.createsDirectories)
        #expect(request.replacesExisting == false)

        #expect(request.pieceHashes == nil)

        let noURL = MetalinkFile(name: "x", urls: [])
        #expect(throws: MetalinkError.self) { try DownloadRequest(metalink: noURL, directory: ".") }
        let hostile = MetalinkFile(name: "../x", urls: [MetalinkURL(url: "http://a/x")])
        #expect(throws: MetalinkError.self) { try DownloadRequest(metalink: hostile, directory: ".") }
    }

    @Test func aRequestCarriesThePieceHashes() throws {
        let digest = "a97fcf6ba9358f8a6f62beee4421863d3e52b080"
        let text = Self.document("<file name=\"a\"><size>10</size><url>http://a.example/a</url><pieces length=\"4\" type=\"sha-1\"><hash>\(digest)</hash><hash>\(digest.uppercased())</hash><hash>\(digest)</hash></pieces></file>")
        let file = try #require(try Self.parse(text).files.first)
        let request = try DownloadRequest(metalink: file, directory: "out")
        let hashes = try #require(request.pieceHashes)
        #expect(hashes.length == 4 && hashes.algorithm == .sha1 && hashes.digests == [digest, digest, digest])

        // A hand-built file whose pieces do not cover its size is refused, naming it.
        var short = file
        short.size = 13
        do {
            _ = try DownloadRequest(metalink: short, directory: "out")
            Issue.record("pieces that do not cover the size must be refused")
        } catch {
            #expect("\(error)".contains("3 piece digests of 4 bytes cover 9 to 12 bytes, not a file of 13 bytes"))
        }
        // Piece hashes of a type Haul does not have are left out; the request still downloads the file.
        var unknown = file
        unknown.pieces = MetalinkPieces(length: 4, type: "sha-384", hashes: [String(repeating: "0", count: 96)])
        #expect(try DownloadRequest(metalink: unknown, directory: "out").pieceHashes == nil)
    }

    @Test func pieceHashesAreCheckedWhenMade() throws {
        let digest = String(repeating: "0", count: 32)
        #expect(throws: PieceHashesError.self) { try PieceHashes(length: 0, algorithm: .md5, digests: [digest]) }
        #expect(throws: PieceHashesError.self) { try PieceHashes(length: 4, algorithm: .md5, digests: []) }
        #expect(throws: PieceHashesError.self) { try PieceHashes(length: 4, algorithm: .md5, digests: [digest, String(digest.dropLast())]) }
        #expect(throws: PieceHashesError.self) { try PieceHashes(length: 4, algorithm: .sha256, digests: [digest]) }
        #expect(throws: PieceHashesError.self) { try PieceHashes(length: 4, algorithm: .md5, digests: [String(repeating: "g", count: 32)]) }
        let hashes = try PieceHashes(length: 4, algorithm: .md5, digests: [digest, digest])
        #expect(hashes.pieceCount(forSize: 5) == 2 && hashes.pieceCount(forSize: 8) == 2 && hashes.pieceCount(forSize: 9) == 3)
        try hashes.check(size: 5)
        try hashes.check(size: 8)
        #expect(throws: PieceHashesError.self) { try hashes.check(size: 4) }
        #expect(throws: PieceHashesError.self) { try hashes.check(size: 0) }
        let huge = try PieceHashes(length: Int64.max / 2, algorithm: .md5, digests: [digest, digest, digest, digest])
        #expect(throws: PieceHashesError.self) { try huge.check(size: 1) }
    }

    @Test(arguments: ["../x", "/etc/passwd", "a/../../x", "a//b", ".hidden", "a/.", "x.part", "a\\b", "a/", "",
                      "bad\u{1}name", " spaced", "a/..", "\u{202E}txt.exe"])
    func refusesUnsafeNames(name: String) throws {
        let text = Self.document("<file name=\"\(name)\"><url>http://a.example/x</url></file>")
        let error = #expect(throws: MetalinkError.self) { try Self.parse(text) }
        #expect(error?.reason.contains("name") == true || error?.reason.contains("control character") == true)
        #expect(MetalinkFile.checkedName(name) == nil)
    }

    @Test func acceptsSafeNames() {
        for name in ["a", "dir/sub/file.tar.gz", "ünïcode.bin", "a b.iso"] {
            #expect(MetalinkFile.checkedName(name) == name)
        }
    }

    /// Every error the reader and the model report, each with the offset where it was found.
    @Test(arguments: [
        // XML
        ("", "no root element", 0),
        ("<!DOCTYPE metalink [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><metalink/>", "DOCTYPE", 0),
        ("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><metalink/>", "UTF-8", 0),
        ("<?xml version=\"2.0\"?><metalink/>", "version", 0),
        ("<?xml encoding=\"utf-8\"?><metalink/>", "no version", 0),
        ("<?xml version=\"1.0\"", "does not end", 0),
        ("<metalink/><?xml version=\"1.0\"?>", "misplaced", 11),
        ("text<metalink/>", "before the root", 0),
        ("<metalink/>text", "after the root", 11),
        ("<metalink/><metalink/>", "second root", 11),
        ("<metalink><!-- a -- b --></metalink>", "--", 17),
        ("<metalink><!-- a </metalink>", "comment does not end", 10),
        ("<metalink>", "not closed", 0),
        ("<metalink></file>", "does not match", 10),
        ("<metalink a=\"1\" a=\"2\"/>", "twice", 16),
        ("<metalink a=1/>", "not quoted", 12),
        ("<metalink a=\"<\"/>", "< inside", 13),
        ("<metalink a=\"1\"b=\"2\"/>", "expected a space", 15),
        ("<metalink a/>", "has no =", 11),
        ("<metalink>&foo;</metalink>", "undefined entity", 10),
        ("<metalink>&#0;</metalink>", "not a character", 10),
        ("<metalink>&#xD800;</metalink>", "not a character", 10),
        ("<metalink>a & b</metalink>", "&amp;", 12),
        ("<metalink><![CDATA[x</metalink>", "CDATA", 10),
        ("<metalink>]]></metalink>", "]]>", 10),
        ("<metalink><!ELEMENT x ANY></metalink>", "declaration", 10),
        ("<p:metalink/>", "not declared", 0),
        ("<metalink\u{1}/>", "control character", 9),
        ("<metalink xmlns:p=\"\"/>", "bound to nothing", 10),
        ("< metalink/>", "expected a name", 1),
        // Metalink
        ("<metalink/>", "not in the Metalink 4 namespace", 0),
        ("<metalink xmlns=\"http://www.metalinker.org/\"/>", "Metalink 3", 0),
        ("<other xmlns=\"urn:ietf:params:xml:ns:metalink\"/>", "not <metalink>", 0),
        (MetalinkTests.document(""), "no file", 0),
        (MetalinkTests.document("<foo/>"), "not a Metalink 4 element", 50),
        (MetalinkTests.document("<file><url>http://a/x</url></file>"), "has no name", 50),
        (MetalinkTests.document("<file name=\"a\"><url>http://a/x</url></file><file name=\"a\"><url>http://a/x</url></file>"), "twice", 93),
        (MetalinkTests.document("<file name=\"a\"><size>-1</size></file>"), "non-negative integer", 65),
        (MetalinkTests.document("<file name=\"a\"><size>1</size><size>1</size></file>"), "<size> given twice", 79),
        (MetalinkTests.document("<file name=\"a\"><size>99999999999999999999</size></file>"), "non-negative integer", 65),
        (MetalinkTests.document("<file name=\"a\"><url priority=\"0\">http://a/x</url></file>"), "between 1 and 999999", 65),
        (MetalinkTests.document("<file name=\"a\"><url priority=\"x\">http://a/x</url></file>"), "priority", 65),
        (MetalinkTests.document("<file name=\"a\"><url location=\"deu\">http://a/x</url></file>"), "country code", 65),
        (MetalinkTests.document("<file name=\"a\"><url>not a url</url></file>"), "not an absolute URL", 65),
        (MetalinkTests.document("<file name=\"a\"><url>http://</url></file>"), "not a usable URL", 65),
        (MetalinkTests.document("<file name=\"a\"><hash>00</hash></file>"), "no type", 65),
        (MetalinkTests.document("<file name=\"a\"><hash type=\"sha-256\">00</hash></file>"), "64 hex digits", 65),
        (MetalinkTests.document("<file name=\"a\"><hash type=\"md5\">zz</hash></file>"), "not hex", 65),
        (MetalinkTests.document("<file name=\"a\"><pieces type=\"sha-1\"/></file>"), "no length", 65),
        (MetalinkTests.document("<file name=\"a\"><pieces length=\"0\" type=\"sha-1\"/></file>"), "length is 0", 65),
        (MetalinkTests.document("<file name=\"a\"><pieces length=\"1\"/></file>"), "no type", 65),
        (MetalinkTests.document("<file name=\"a\"><pieces length=\"1\" type=\"md5\"></pieces></file>"), "no hash", 65),
        (MetalinkTests.document("<file name=\"a\"><pieces length=\"1\" type=\"md5\"><url/></pieces></file>"), "only <hash>", 95),
        (MetalinkTests.document("<file name=\"a\"><size>3</size><pieces length=\"2\" type=\"md5\"><hash>d41d8cd98f00b204e9800998ecf8427e</hash></pieces></file>"), "do not cover", 50),
    ])
    func reportsEveryError(text: String, reason: String, offset: Int) {
        let error = #expect(throws: MetalinkError.self) { try Self.parse(text) }
        #expect(error?.reason.contains(reason) == true, "\(String(describing: error)) for \(text)")
        #expect(error?.offset == offset, "\(String(describing: error)) for \(text)")
    }

    @Test func enforcesItsLimits() {
        var small = MetalinkLimits()
        small.maximumBytes = 100
        #expect(throws: MetalinkError.self) { try Metalink(parsing: Array(Self.rfcExample.utf8), limits: small) }
        let deep = String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40)
        let deepError = #expect(throws: MetalinkError.self) { try Self.parse(deep) }
        #expect(deepError?.reason.contains("deeper") == true)
        var fewElements = MetalinkLimits()
        fewElements.maximumElements = 3
        let many = Self.document("<file name=\"a\"><url>http://a/x</url><url>http://a/y</url></file>")
        #expect(throws: MetalinkError.self) { try Metalink(parsing: Array(many.utf8), limits: fewElements) }
        var fewFiles = MetalinkLimits()
        fewFiles.maximumFiles = 1
        let two = Self.document("<file name=\"a\"><url>http://a/x</url></file><file name=\"b\"><url>http://a/x</url></file>")
        #expect(throws: MetalinkError.self) { try Metalink(parsing: Array(two.utf8), limits: fewFiles) }
        let attributes = "<metalink " + (0..<40).map { "a\($0)=\"1\"" }.joined(separator: " ") + "/>"
        #expect(throws: MetalinkError.self) { try Self.parse(attributes) }
        #expect(throws: MetalinkError.self) { try Metalink(parsing: [0x3C, 0x6D, 0xC3, 0x28, 0x3E]) }  // invalid UTF-8
    }

    /// The most files a document may have (10,000), each with a size, a hash and two URLs: all parsed.
    @Test func parsesTheLargestFileCount() throws {
        let hash = String(repeating: "ab", count: 32)
        let files = (0..<10_000).map {
            "<file name=\"f\($0).bin\"><size>\($0)</size><hash type=\"sha-256\">\(hash)</hash><url>http://a.example/f\($0)</url><url priority=\"1\">http://b.example/f\($0)</url></file>\n"
        }.joined()
        let text = Self.document(files)
        let clock = ContinuousClock(), start = clock.now
        let metalink = try Self.parse(text)
        print("MetalinkTests.parsesTheLargestFileCount: \(text.utf8.count) bytes, 10,000 files in \(clock.now - start) (debug build)")
        #expect(metalink.files.count == 10_000)
        #expect(metalink.files[9_999].urls.first?.url == "http://b.example/f9999")
        var limits = MetalinkLimits()
        limits.maximumFiles = 9_999
        #expect(throws: MetalinkError.self) { try Metalink(parsing: Array(text.utf8), limits: limits) }
    }

    /// Random byte edits of valid documents: each parses or throws a MetalinkError, never traps.
    @Test func randomMutationsNeverTrap() throws {
        let seed = TestSeed(for: "MetalinkTests.randomMutationsNeverTrap", default: 0x6D65_7461_6C69_6E6B)
        var random = seed.generator()
        let bases = [Array(Self.rfcExample.utf8), Array(Self.document("<file name=\"a\"><size>3</size><pieces length=\"2\" type=\"md5\"><hash>d41d8cd98f00b204e9800998ecf8427e</hash><hash>d41d8cd98f00b204e9800998ecf8427e</hash></pieces><url>http://a/x</url></file>").utf8)]
        let interesting: [UInt8] = Array("<>/&;#x\"'=![]-?: \u{0}".utf8) + [0xC3, 0xFF]
        var parsed = 0, refused = 0
        for _ in 0..<3_000 {
            var bytes = bases[Int.random(in: 0..<bases.count, using: &random)]
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes[at] = interesting[Int.random(in: 0..<interesting.count, using: &random)]
                case 1: bytes.remove(at: at)
                case 2: bytes.insert(interesting[Int.random(in: 0..<interesting.count, using: &random)], at: at)
                default: bytes[at] = UInt8.random(in: 0...255, using: &random)
                }
                if bytes.isEmpty { break }
            }
            do {
                let metalink = try Metalink(parsing: bytes)
                #expect(!metalink.files.isEmpty, "\(seed)")
                for file in metalink.files { #expect(MetalinkFile.checkedName(file.name) == file.name, "\(seed)") }
                parsed += 1
            } catch {
                #expect(error.offset >= 0 && error.offset <= bytes.count, "\(seed): \(error)")
                refused += 1
            }
        }
        #expect(parsed > 0 && refused > 0, "\(seed): \(parsed) parsed, \(refused) refused")
    }
}
