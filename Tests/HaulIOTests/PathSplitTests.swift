import HaulHTTP
import HaulIO
import Testing

/// ``OutputFile/directory(containing:)`` splits at the last `/` byte. It replaced a split at the last
/// `Character` equal to `/`; over many generated paths (ASCII, non-ASCII, combining marks, odd names) both give
/// the same directory wherever every `/` is a `Character` of its own, and where one is not (a combining mark
/// after it, a prepended scalar before it) the byte split is the kernel's.
struct PathSplitTests {
    /// The split that was replaced, kept here as the reference.
    private static func characterSplit(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The directory as the kernel reads `path`: the bytes before the last `/` byte.
    private static func byteReference(_ path: String) -> String {
        let bytes = Array(path.utf8)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        return slash == 0 ? "/" : String(decoding: bytes[..<slash], as: UTF8.self)
    }

    private static let pieces: [String] = [
        "/", "/", "/", "a", "b", "file.bin", ".", "..", " ", "é", "e\u{301}", "\u{301}", "日本", "🇩🇪", "👩‍💻",
        "\u{200D}", "\u{0600}", "\r", "\n", "\r\n", "%2F", "\\", "ÿ", "\u{FEFF}", "x.part", "~",
    ]

    @Test func byteSplitMatchesTheCharacterSplitOverGeneratedPaths() {
        let seed: UInt64 = 0x5041_5448
        print("PathSplitTests seed \(seed)")
        var random = SplitMixGenerator(seed: seed)
        var compared = 0
        var differing = 0
        for _ in 0..<20_000 {
            var path = ""
            for _ in 0..<Int(random.next() % 8) {
                path += Self.pieces[Int(random.next() % UInt64(Self.pieces.count))]
            }
            let split = OutputFile.directory(containing: path)
            #expect(split == Self.byteReference(path), "path \(Array(path.utf8))")
            // Every `/` a Character of its own: the old split saw the same slashes.
            let slashCharacters = path.filter { $0 == "/" }.count
            let slashBytes = path.utf8.filter { $0 == UInt8(ascii: "/") }.count
            if slashCharacters == slashBytes {
                compared += 1
                #expect(split == Self.characterSplit(path), "path \(Array(path.utf8))")
            } else {
                differing += 1
            }
        }
        // Both kinds were generated.
        #expect(compared > 10_000)
        #expect(differing > 100)
    }

    @Test func aSlashJoinedIntoACharacterStillSplits() {
        // `/` then a combining acute accent is one Character, not "/": the old split missed it.
        #expect(OutputFile.directory(containing: "dir/\u{301}name") == "dir")
        #expect(OutputFile.directory(containing: "/\u{301}name") == "/")
        #expect(OutputFile.directory(containing: "d\u{0600}/name") == "d\u{0600}")
        #expect(OutputFile.directory(containing: "日本/語/ファイル") == "日本/語")
        #expect(OutputFile.directory(containing: "") == ".")
        #expect(OutputFile.directory(containing: "/") == "/")
        #expect(OutputFile.directory(containing: "a//b") == "a/")
    }
}
