import Testing
import HaulHTTP

extension FieldValueTests {
    /// `Content-Type`: the type must be found however the value is written, since a `multipart/byteranges`
    /// 206 must never be written as the file.
    @Suite struct MediaTypeTests {
        @Test(arguments: [
            ("application/octet-stream", "application/octet-stream", [] as [String], true),
            ("multipart/byteranges; boundary=THIS_STRING_SEPARATES", "multipart/byteranges", ["boundary=THIS_STRING_SEPARATES"], true),
            ("Multipart/ByteRanges;Boundary=\"a b:c\"", "multipart/byteranges", ["boundary=a b:c"], true),
            ("  MULTIPART/BYTERANGES ; boundary = x", "multipart/byteranges", [], false),
            ("multipart/byteranges;charset=utf-8;boundary=\"q\\\"d\"", "multipart/byteranges", ["charset=utf-8", "boundary=q\"d"], true),
            ("text/html;;charset=utf-8;", "text/html", ["charset=utf-8"], true),
            ("text/plain; charset", "text/plain", [], false),
            ("text/plain; charset=", "text/plain", [], false),
            ("text/plain; a=1; b=\"unterminated", "text/plain", ["a=1"], false),
            ("multipart/byteranges boundary=x", "multipart/byteranges", [], false),
            ("text/plain, text/html", "text/plain", [], false),
        ])
        func parsesTypeAndParameters(_ text: String, _ essence: String, _ parameters: [String], _ wellFormed: Bool) throws {
            let type = try #require(MediaType(text))
            #expect(type.essence == essence)
            #expect(type.parameters.map { "\($0.name)=\($0.value)" } == parameters)
            #expect(type.parametersAreWellFormed == wellFormed)
        }

        @Test(arguments: ["", "   ", "multipart", "multipart/", "/byteranges", "\"multipart/byteranges\"", "multi part/byteranges",
                          "multipart\\/byteranges", "(comment) text/plain"])
        func rejectsWhatIsNotTypeSlashSubtype(_ text: String) {
            #expect(MediaType(text) == nil)
        }

        @Test func findsTheBoundaryAndTheMultipartType() throws {
            let quoted = try #require(MediaType("multipart/byteranges; BOUNDARY=\"3d6b6a416f9b5\""))
            #expect(quoted.isMultipartByteranges && quoted.boundary == "3d6b6a416f9b5")
            let none = try #require(MediaType("multipart/byteranges"))
            #expect(none.isMultipartByteranges && none.boundary == nil)
            let empty = try #require(MediaType("multipart/byteranges; boundary=\"\""))
            #expect(empty.isMultipartByteranges && empty.boundary == nil)
            #expect(try #require(MediaType("multipart/mixed; boundary=x")).isMultipartByteranges == false)
            #expect(try #require(MediaType("application/byteranges")).isMultipartByteranges == false)
        }

        @Test(arguments: ["a/b", "multipart/byteranges; boundary=x", "text/plain; name=\"two words\"; q=\"a\\\\b\\\"c\"",
                          "a/b; x=\"\u{E9}\""])
        func readsBackAsItself(_ text: String) throws {
            let type = try #require(MediaType(text))
            #expect(MediaType(type.fieldValue[...]) == type, "\(type)")
        }
    }

    /// `Content-Encoding`: which codings the body carries.
    @Suite struct ContentEncodingTests {
        @Test(arguments: [
            ("gzip", ["gzip"], ["gzip"]),
            ("GZip", ["gzip"], ["gzip"]),
            ("identity", ["identity"], []),
            ("Identity, gzip", ["identity", "gzip"], ["gzip"]),
            ("gzip , , br", ["gzip", "br"], ["gzip", "br"]),
            ("", [], []),
            ("  ", [], []),
        ])
        func parsesLists(_ text: String, _ codings: [String], _ applied: [String]) throws {
            let encoding = try #require(ContentEncoding(text))
            #expect(encoding.codings == codings)
            #expect(encoding.appliedCodings == applied)
        }

        @Test(arguments: ["gzip br", "gzip;q=1", "\"gzip\"", "x/gzip", "gzip,\u{1}"])
        func rejectsWhatIsNotATokenList(_ text: String) {
            #expect(ContentEncoding(text) == nil)
        }
    }

    @Suite struct MediaTypeFuzzTests {
        @Test func neverTrapsAndReadsBackOnArbitraryBytes() {
            let seed: UInt64 = 0x4D45_4449
            print("MediaTypeFuzzTests seed \(seed)")
            var random = SplitMix64(state: seed)
            let prefixes = ["multipart/byteranges; boundary=", "text/plain;", "a/b; c=\"", "gzip, ", ""]
            for _ in 0..<20_000 {
                let bytes = (Array(prefixes.randomElement(using: &random)!.utf8) + random.syntaxBytes(maxCount: 40))[...]
                if let type = MediaType(bytes) {
                    let again = MediaType(type.fieldValue[...])
                    #expect(again?.essence == type.essence && again?.parameters == type.parameters && again?.parametersAreWellFormed == true,
                            "\(type)")
                }
                if let encoding = ContentEncoding(bytes) {
                    #expect(encoding.codings.allSatisfy { $0 == $0.lowercased() && !$0.isEmpty })
                }
            }
        }
    }
}
