import Testing
import HaulCommandLine

/// The streamed reader gives what `InputFile.parse` gives on the whole text, however the bytes arrive.
@Suite struct InputFileReaderTests {
    static let texts = [
        "# a comment\nhttps://a.example/file.iso\thttps://b.example/file.iso\tout=debian.iso\n\nhttp://c.example/other.tar\n  out=renamed.tar\nhttps://f.example/plain",
        "\u{FEFF}https://a.example/1\r\n\tout=one\r\n   # indented comment\r\n\r\nhttps://a.example/2\r\n",
        "",
        "# nothing\n\n   \n",
        "https://ok.example/a\n\nftp://nope.example/b\n",
        "https://a.example/1\tout=x\nhttps://a.example/2\tout=x\n",
        "   out=early\nhttps://a.example/\n",
        "example.org/caf\u{E9}\u{301}?a=b\nhttps://a.example/\u{1F600}\n\tout=\u{FF}name\n",
    ]

    /// Every entry, or the error, as the reader gives them reading `chunk` bytes at a time.
    static func read(_ text: String, chunk: Int) -> Result<[InputEntry], InputFileError> {
        read(bytes: Array(text.utf8), chunk: chunk)
    }

    static func read(bytes: [UInt8], chunk: Int) -> Result<[InputEntry], InputFileError> {
        var offset = 0
        let reader = InputFileReader(bufferSize: chunk) { buffer in
            let count = min(buffer.count, bytes.count - offset)
            for index in 0..<count { buffer[index] = bytes[offset + index] }
            offset += count
            return count
        }
        var entries: [InputEntry] = []
        do {
            while let entry = try reader.next() { entries.append(entry) }
            return .success(entries)
        } catch let error as InputFileError {
            return .failure(error)
        } catch {
            Issue.record("unexpected error \(error)")
            return .success([])
        }
    }

    @Test(arguments: texts.indices)
    func matchesParseAtEveryChunkSize(_ index: Int) {
        let text = Self.texts[index]
        let expected = Result { () throws(InputFileError) in try InputFile.parse(text) }
        for chunk in [1, 2, 3, 5, 7, 16, 64, 65536] {
            #expect(Self.read(text, chunk: chunk) == expected, "text \(index), \(chunk)-byte reads")
        }
    }

    /// Bytes that are not UTF-8 read as U+FFFD in both, wherever the reads cut them; a combining mark right
    /// after the `http://` the parser adds stays part of the URL.
    @Test func invalidUTF8MatchesParse() {
        let inputs: [[UInt8]] = [
            [0xD6, 0xA4] + [UInt8](repeating: 0xFF, count: 27) + Array("t@r#".utf8),
            Array("https://a.example/\n".utf8) + [0xE2, 0x82, 0x0A, 0xC3] + Array("\n  out=\u{301}x\nhttp://b/\u{FF}".utf8),
        ]
        for bytes in inputs {
            let expected = Result { () throws(InputFileError) in try InputFile.parse(String(decoding: bytes, as: UTF8.self)) }
            for chunk in [1, 2, 3, 10, 64] {
                #expect(Self.read(bytes: bytes, chunk: chunk) == expected, "\(bytes), \(chunk)-byte reads")
            }
        }
    }

    @Test func namesTheLineOfAProblemFarDownAList() {
        var text = ""
        for index in 1...2000 { text += "https://a.example/\(index)\n" }
        text += "ftp://nope.example/x\n"
        guard case .failure(let error) = Self.read(text, chunk: 4096) else {
            Issue.record("the bad line was accepted")
            return
        }
        #expect(error.line == 2001)
    }

    @Test func readErrorsComeThrough() {
        struct Broken: Error {}
        var calls = 0
        let reader = InputFileReader(bufferSize: 8) { buffer in
            calls += 1
            guard calls == 1 else { throw Broken() }
            for (index, byte) in "https:".utf8.enumerated() { buffer[index] = byte }
            return 6
        }
        #expect(throws: Broken.self) { _ = try reader.next() }
    }

    /// After each entry but the last, a reader made at ``InputFileReader/lastLineOffset`` and the line before
    /// it gives the entries that follow, with their line numbers, however the bytes arrive (`-i` reads a long
    /// list's rest again from where the entries it kept end).
    @Test func aReaderResumedWhereAnEntryEndsGivesTheRest() throws {
        for text in Self.texts {
            guard case .success(let all) = Self.read(text, chunk: 64 * 1024) else { continue }
            let bytes = Array(text.utf8)
            for chunk in [1, 2, 3, 7, 64 * 1024] {
                var offset = 0
                let reader = InputFileReader(bufferSize: chunk) { buffer in
                    let count = min(buffer.count, bytes.count - offset)
                    for index in 0..<count { buffer[index] = bytes[offset + index] }
                    offset += count
                    return count
                }
                for taken in 1..<max(1, all.count) {
                    _ = try reader.next()
                    let (start, line) = (reader.lastLineOffset, reader.lineNumber - 1)
                    var resumedAt = start
                    let resumed = InputFileReader(bufferSize: chunk, resumingAt: start, afterLine: line) { buffer in
                        let count = min(buffer.count, bytes.count - resumedAt)
                        for index in 0..<count { buffer[index] = bytes[resumedAt + index] }
                        resumedAt += count
                        return count
                    }
                    var rest: [InputEntry] = []
                    while let entry = try resumed.next() { rest.append(entry) }
                    #expect(rest == Array(all.dropFirst(taken)), "chunk \(chunk), after \(taken) of \(text.debugDescription)")
                }
            }
        }
    }
}
