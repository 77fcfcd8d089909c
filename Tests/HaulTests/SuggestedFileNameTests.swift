import Testing
@testable import Haul

/// Names from the network become one safe path component, or the fallback.
struct SuggestedFileNameTests {
    @Test(arguments: [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "_.._etc_passwd"),
        ("..", nil),
        (".", nil),
        ("...hidden", "hidden"),
        ("a\\b\\c.txt", "a_b_c.txt"),
        ("tab\there\u{1B}[31m.txt", "tabhere[31m.txt"),
        ("  spaced  ", "spaced"),
        ("r\u{202E}fdp.exe", "rfdp.exe"),
        ("naïve résumé.txt", "naïve résumé.txt"),
        ("\u{7F}\u{01}", nil),
    ] as [(String, String?)])
    func sanitizes(raw: String, expected: String?) {
        #expect(SuggestedFileName.sanitized(raw) == expected)
    }

    @Test func longNamesAreCutOnACharacterBoundaryKeepingTheExtension() throws {
        let name = try #require(SuggestedFileName.sanitized(String(repeating: "é", count: 300) + ".tar.gz"))
        #expect(name.utf8.count <= SuggestedFileName.maximumBytes)
        #expect(name.hasSuffix(".gz") && name.hasPrefix("éé"))
    }

    /// A server (or a URL) never names a working file of another download: `victim.bin.part` would be
    /// the partial file of `victim.bin`, and replacing it would mix two files in one.
    @Test(arguments: [
        ("victim.bin.part", "victim.bin_part"),
        ("victim.bin.part.haul", "victim.bin.part_haul"),
        ("victim.bin.part.haul.tmp", "victim.bin.part.haul_tmp"),
        ("a.PART", "a_PART"),
        ("a.Part.Haul", "a.Part_Haul"),
        ("..part", "part"),
        ("a.part/", "a.part_"),
        ("a.partial", "a.partial"),
        ("a.part.gz", "a.part.gz"),
        ("a_part", "a_part"),
    ] as [(String, String)])
    func neverEndsInAWorkingSuffix(raw: String, expected: String) {
        let name = SuggestedFileName.sanitized(raw)
        #expect(name == expected)
        #expect(!WorkingFileNames.endsInWorkingSuffix(ignoringCase: name ?? ""))
    }

    @Test func aLongNameEndingInAWorkingSuffixIsCutAndStillChanged() throws {
        let name = try #require(SuggestedFileName.sanitized(String(repeating: "x", count: 300) + ".part"))
        #expect(name.hasSuffix("_part") && name.utf8.count <= SuggestedFileName.maximumBytes)
    }

    @Test func urlNamesLeaveTheWorkingNamesAlone() throws {
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/dir/a.bin.part")) == "a.bin_part")
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/dir/a.bin%2Epart%2Ehaul")) == "a.bin.part_haul")
    }

    @Test func urlNamesArePercentDecodedAndFallBack() throws {
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/dir/my%20file%2Fx.iso?q=1")) == "my file_x.iso")
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/")) == "index.html")
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/dir/..%2F..")) == "_..")
        #expect(SuggestedFileName.percentDecoded("100%") == "100%")
    }
}

@Suite struct SuggestedNameLengthTests {
    @Test func aLongNameKeepsItsCompoundExtensionAndLeavesRoomForTheWorkingSuffixes() {
        let long = String(repeating: "n", count: 300) + ".tar.gz"
        let name = SuggestedFileName.sanitized(long)!
        #expect(name.hasSuffix(".tar.gz"))
        #expect(name.utf8.count + SuggestedFileName.longestWorkingSuffix.utf8.count <= 255)
    }

    @Test(arguments: [("a.iso", ".iso"), ("x.tar.gz", ".tar.gz"), ("report.final.pdf", ".final.pdf"), ("a.b c", ""), ("noext", ""),
                      ("v1.2.3-linux.tar.xz", ".tar.xz"), ("a.verylongextension", "")])
    func extensions(name: String, kept: String) {
        #expect(SuggestedFileName.extensionToKeep(name) == kept)
    }

    /// Printable ASCII names take a shortcut past the scalar walk (issue 23: naming was a measurable part of
    /// each small download); seeded random names built from the characters every rule acts on must come out
    /// as the rules say (``referenceSanitized(_:)``, the scalar walk written out here).
    @Test func theAsciiShortcutAgreesWithTheRules() {
        let seed: UInt64 = 2311
        print("SuggestedFileNameTests seed \(seed)")
        var state = seed
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        let alphabet = Array("ab.Z09 /\\-_~".unicodeScalars) + ["\u{7F}", "\u{1F}"]
        let suffixes = ["", ".part", ".PART", ".part.haul", ".part.haul.tmp", ".bin", " "]
        for _ in 0..<2000 {
            let count = Int(next() % (next() % 8 == 0 ? 300 : 20))
            var raw = String(String.UnicodeScalarView((0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }))
            raw += suffixes[Int(next() % UInt64(suffixes.count))]
            #expect(SuggestedFileName.sanitized(raw) == Self.referenceSanitized(raw), "\(raw.debugDescription)")
        }
    }

    @Test func urlNamesOfAsciiPathsTakeTheLastSegment() throws {
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/many/m00042.bin")) == "m00042.bin")
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/a/b/")) == "index.html")
        #expect(SuggestedFileName.forURL(try HTTPURL("http://h/only")) == "only")
    }

    /// The rules of ``SuggestedFileName/sanitized(_:)`` for ASCII, one scalar at a time, without its shortcut.
    static func referenceSanitized(_ raw: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            switch scalar.value {
            case 0x2F, 0x5C: scalars.append("_")
            case 0..<0x20, 0x7F, 0x80..<0xA0: continue
            default: scalars.append(scalar)
            }
        }
        var name = String(scalars)
        while let first = name.first, first == "." || first == " " { name.removeFirst() }
        while let last = name.last, last == " " { name.removeLast() }
        guard !name.isEmpty else { return nil }
        if name.utf8.count > SuggestedFileName.maximumBytes {
            let suffix = SuggestedFileName.extensionToKeep(name)
            var stem = String(name.dropLast(suffix.count))
            while stem.utf8.count + suffix.utf8.count > SuggestedFileName.maximumBytes { stem.removeLast() }
            name = stem + suffix
        }
        return SuggestedFileName.outsideWorkingNames(name)
    }
}
