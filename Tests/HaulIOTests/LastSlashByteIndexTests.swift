import HaulHTTP
import HaulIO
import Testing

/// `String.lastSlashByteIndex` searches the contiguous UTF-8 bytes (`withUTF8Bytes`); it must find what
/// `utf8.lastIndex(of:)` finds, over generated paths of ASCII, multi-byte and combining scalars, small (inline)
/// and heap strings, and a substring's copy.
struct LastSlashByteIndexTests {
    private static let pieces: [String] = [
        "/", "/", "/", "a", "file.bin", ".", "..", " ", "é", "e\u{301}", "\u{301}", "日本", "🇩🇪", "👩‍💻",
        "\u{200D}", "%2F", "\\", "x.part", "a-rather-long-directory-name-that-leaves-the-inline-form",
    ]

    @Test func findsWhatTheUTF8ViewFindsOverGeneratedPaths() {
        let seed: UInt64 = 0x534C_4153
        print("LastSlashByteIndexTests seed \(seed)")
        var random = SplitMixGenerator(seed: seed)
        for _ in 0..<2_000 {
            var path = ""
            for _ in 0..<Int(random.next() % 9) {
                path += Self.pieces[Int(random.next() % UInt64(Self.pieces.count))]
            }
            #expect(path.lastSlashByteIndex == path.utf8.lastIndex(of: UInt8(ascii: "/")), "path \(Array(path.utf8)), seed \(seed)")
        }
    }

    @Test func noSlashIsNilAndASlashAloneIsTheStart() {
        #expect("file.bin".lastSlashByteIndex == nil)
        #expect("".lastSlashByteIndex == nil)
        #expect("/".lastSlashByteIndex == "/".startIndex)
        let path = "/dir/é/name"
        #expect(path.lastSlashByteIndex.map { String(path[path.utf8.index(after: $0)...]) } == "name")
        let sliced = String("x/y/z/w".dropFirst(2))
        #expect(sliced.lastSlashByteIndex.map { String(sliced[sliced.utf8.index(after: $0)...]) } == "w")
        #expect("a/b".withUTF8Bytes { Array($0) } == Array("a/b".utf8))
    }
}
