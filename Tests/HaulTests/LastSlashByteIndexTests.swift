import HaulTestSupport
import Testing
@testable import Haul

/// `String.lastSlashByteIndex` searches the contiguous UTF-8 bytes; it must find what `utf8.lastIndex(of:)`
/// finds, over generated paths of ASCII, multi-byte and combining scalars, small (inline) and heap strings.
struct LastSlashByteIndexTests {
    private static let pieces: [String] = [
        "/", "/", "/", "a", "file.bin", ".", "..", " ", "é", "e\u{301}", "\u{301}", "日本", "🇩🇪", "👩‍💻",
        "\u{200D}", "%2F", "\\", "x.part", "a-rather-long-directory-name-that-leaves-the-inline-form",
    ]

    @Test func findsWhatTheUTF8ViewFindsOverGeneratedPaths() {
        let seed = TestSeed(for: "LastSlashByteIndexTests", default: 0x534C_4153)
        var generator = seed.generator()
        for _ in 0..<2_000 {
            var path = ""
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                path += Self.pieces.randomElement(using: &generator)!
            }
            #expect(path.lastSlashByteIndex == path.utf8.lastIndex(of: UInt8(ascii: "/")), "\(path.debugDescription), \(seed)")
        }
    }

    @Test func noSlashIsNilAndASlashAloneIsTheStart() {
        #expect("file.bin".lastSlashByteIndex == nil)
        #expect("".lastSlashByteIndex == nil)
        #expect("/".lastSlashByteIndex == "/".startIndex)
        let path = "/dir/é/name"
        #expect(path.lastSlashByteIndex.map { String(path[path.utf8.index(after: $0)...]) } == "name")
    }
}
