import Testing
import Haul
import HaulCommandLine

@Suite struct InputFileTests {
    /// The check parses each URL once and keeps it: the file's name and the request reuse it. The parsed URL
    /// is the URL's (with `http://` added), is not part of the entry's value, and is dropped once `url` changes.
    @Test func anEntryKeepsItsURLAsParsedUntilTheURLChanges() throws {
        let entries = try InputFile.parse("h.example/dir/a.bin\thttp://m.example/a.bin\nhttps://u:p@h.example:8443/b?x=1\n")
        #expect(entries.map(\.parsedURL) == [try HTTPURL("http://h.example/dir/a.bin"), try HTTPURL("https://u:p@h.example:8443/b?x=1")])
        var entry = try #require(entries.first)
        #expect(entry == InputEntry(url: "http://h.example/dir/a.bin", mirrors: ["http://m.example/a.bin"], line: 1),
                "compared without the parsed URL")
        #expect(entry.hashValue == InputEntry(url: "http://h.example/dir/a.bin", mirrors: ["http://m.example/a.bin"], line: 1).hashValue)
        entry.url = "http://other.example/c.bin"
        #expect(entry.parsedURL == nil, "a URL changed since it was parsed is parsed again by whoever needs it")
        #expect(InputEntry(url: "http://h.example/a.bin", line: 1).parsedURL == nil)
    }

    @Test func parsesURLsMirrorsAndOutputNames() throws {
        let text = """
            # a comment
            https://a.example/file.iso\thttps://b.example/file.iso\tout=debian.iso

            http://c.example/other.tar
              out=renamed.tar
            https://d.example/x\tout=x.bin\thttps://e.example/x
            https://f.example/plain
            """
        let entries = try InputFile.parse(text)
        #expect(entries == [
            InputEntry(url: "https://a.example/file.iso", mirrors: ["https://b.example/file.iso"], outputName: "debian.iso", line: 2),
            InputEntry(url: "http://c.example/other.tar", outputName: "renamed.tar", line: 4),
            InputEntry(url: "https://d.example/x", mirrors: ["https://e.example/x"], outputName: "x.bin", line: 6),
            InputEntry(url: "https://f.example/plain", line: 7),
        ])
    }

    @Test func acceptsCRLFByteOrderMarkTabContinuationsAndIndentedComments() throws {
        let text = "\u{FEFF}https://a.example/1\r\n\tout=one\r\n   # indented comment\r\n\r\nhttps://a.example/2\r\n"
        let entries = try InputFile.parse(text)
        #expect(entries == [
            InputEntry(url: "https://a.example/1", outputName: "one", line: 1),
            InputEntry(url: "https://a.example/2", line: 5),
        ])
    }

    /// A line without a TAB is one field (read without splitting it); with a TAB or spaces after the same URL,
    /// or without its scheme, it is the same entry; a space inside it is still refused.
    @Test func aOneURLLineIsTheSameEntryWithOrWithoutTabs() throws {
        let plain = try InputFile.parse("http://h.example/a.bin")
        #expect(plain == [InputEntry(url: "http://h.example/a.bin", line: 1)])
        #expect(try InputFile.parse("http://h.example/a.bin\t") == plain)
        #expect(try InputFile.parse("h.example/a.bin") == plain)
        #expect(try InputFile.parse("http://h.example/a.bin  \t") == plain)
        #expect(throws: InputFileError.self) { try InputFile.parse("http://h.example/a b.bin") }
    }

    @Test func emptyAndCommentOnlyFilesHaveNoEntries() throws {
        #expect(try InputFile.parse("").isEmpty)
        #expect(try InputFile.parse("# nothing\n\n   \n").isEmpty)
    }

    @Test func invalidURLNamesItsLine() {
        let text = "https://ok.example/a\n\nftp://nope.example/b\n"
        #expect {
            try InputFile.parse(text)
        } throws: { error in
            guard let error = error as? InputFileError, case .invalidURL(let urlError) = error.reason else { return false }
            return error.line == 3 && urlError.reason == .unsupportedScheme("ftp")
                && error.description.hasPrefix("input file line 3: ")
        }
    }

    @Test func invalidMirrorNamesItsLine() {
        #expect(throws: InputFileError.self) { try InputFile.parse("https://a.example/x\thttp://bad host/x") }
        do {
            _ = try InputFile.parse("https://a.example/x\n# c\nhttps://a.example/y\thttp:///x")
            Issue.record("expected an error")
        } catch {
            #expect(error.line == 3)
        }
    }

    @Test(arguments: [
        ("  out=x\nhttps://a.example/x", 1, InputFileError.Reason.continuationWithoutEntry("out=x")),
        ("https://a.example/x\n  dir=/tmp", 2, .unknownOption("dir")),
        ("https://a.example/x\n  https://b.example/x", 2, .notAnOption("https://b.example/x")),
        ("https://a.example/x\tout=", 1, .invalidOutputName("")),
        ("https://a.example/x\n\tout=..", 2, .invalidOutputName("..")),
        ("https://a.example/x\n\tout=dir/", 2, .invalidOutputName("dir/")),
        ("https://a.example/x\tout=a\n  out=b", 2, .duplicateOutput("b", previous: "a")),
        ("https://a.example/x\tout=same\n\n\nhttps://a.example/y\n out=same", 5, .outputAlreadyUsed("same", firstLine: 1)),
        ("https://a.example/x\tchecksum=sha256=ab", 1, .unknownOption("checksum")),
    ])
    func reportsProblemsWithLineNumbers(text: String, line: Int, reason: InputFileError.Reason) {
        #expect(throws: InputFileError(line: line, reason: reason)) { try InputFile.parse(text) }
    }

    @Test func messagesSayWhatIsWrong() {
        #expect(InputFileError(line: 7, reason: .unknownOption("dir")).description
            == "input file line 7: unknown option \"dir=\" (only out=NAME is supported)")
        #expect(InputFileError(line: 9, reason: .outputAlreadyUsed("a.iso", firstLine: 2)).description
            == "input file line 9: out=a.iso is already used by the entry on line 2")
    }
}
