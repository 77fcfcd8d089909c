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
}
