import Foundation
import Haul
import HaulCommandLine
import HaulTestSupport
import Testing
@testable import haul

/// `-i LIST` is checked whole before any download starts; its first entries are kept from that reading and
/// handed out without reading the file again, the rest of a long list is read again entry by entry from where
/// they end.
@Suite struct InputListTests {
    static let list = """
        http://a.example/one
        # a comment
        http://b.example/two\thttp://c.example/two
          out=renamed.bin
        http://d.example/three

        """

    static func writeList(in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("list.txt")
        try Self.list.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    static func urls(of list: DownloadList) -> [String] {
        var urls: [String] = []
        while let (index, download) = list.next() {
            #expect(index == urls.count)
            urls.append(download.request.url.description)
        }
        return urls
    }

    static func makeList(_ path: String, _ checked: InputList.Checked) -> DownloadList {
        DownloadList(inputFile: path, checked: checked) { entry in
            CommandPlan.Download(request: DownloadRequest(url: entry.url, mirrors: entry.mirrors, destination: .directory("/d")),
                                 source: .inputFile, expectedPath: "/d/\(entry.outputName ?? "-")")
        }
    }

    @Test func aShortListIsReadOnceAndItsCheckedEntriesAreHandedOut() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = try Self.writeList(in: directory)
        let checked = try InputList.check(path)
        #expect(checked.count == 3 && checked.mostURLs == 2)
        let entries = checked.entries
        #expect(checked.rest == nil)
        #expect(entries.map(\.url) == ["http://a.example/one", "http://b.example/two", "http://d.example/three"])
        #expect(entries[1].mirrors == ["http://c.example/two"] && entries[1].outputName == "renamed.bin")
        // Not read again: the file may be gone.
        try FileManager.default.removeItem(atPath: path)
        let list = Self.makeList(path, checked)
        #expect(Self.urls(of: list) == ["http://a.example/one", "http://b.example/two", "http://d.example/three"])
        #expect(list.error == nil)
    }

    @Test func aListOverTheLimitIsReadAgainAsDownloadsStart() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = try Self.writeList(in: directory)
        // The first two entries fit, the third does not: it is read again, from its line on.
        let firstTwo = try InputList.check(path).entries.prefix(2)
        let checked = try InputList.check(path, holdingAtMost: firstTwo.map(InputList.heldSize(of:)).reduce(0, +))
        #expect(checked.count == 3 && checked.mostURLs == 2 && checked.entries == Array(firstTwo))
        #expect(checked.rest?.afterLine == 4 && checked.rest?.offset == Self.list.utf8.count - "http://d.example/three\n".utf8.count)
        #expect(Self.urls(of: Self.makeList(path, checked))
            == ["http://a.example/one", "http://b.example/two", "http://d.example/three"])

        // Read again, it must still be the list that was checked.
        try "http://a.example/one\n".write(toFile: path, atomically: false, encoding: .utf8)
        let shortened = Self.makeList(path, checked)
        #expect(Self.urls(of: shortened) == ["http://a.example/one", "http://b.example/two"])
        #expect(shortened.error?.description.contains("changed while it was being downloaded") == true)
    }

    /// Each URL is parsed once, by the list's check: the entry keeps it, and the request the CLI makes of it
    /// names its file from it and hands it to the engine (``DownloadRequest/parsedURL``).
    @Test func anEntrysURLIsParsedOnceForItsNameAndItsRequest() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let entries = try InputList.check(try Self.writeList(in: directory)).entries
        let parsed = try #require(entries[0].parsedURL)
        #expect(parsed == (try HTTPURL("http://a.example/one")))
        let maker = RequestMaker(replacesExisting: false, ifChangedOnServer: .fail, discardsPartialDownload: false, authorizes: false)
        let download = maker.download(entries[0].url, parsed: parsed, mirrors: [], output: nil, dir: "/d", source: .inputFile)
        #expect(download.expectedPath == "/d/one")
        #expect(download.request.parsedURL == parsed)
        // Without a parsed URL: the same request and path (the engine parses the text itself).
        let unparsed = maker.download(entries[0].url, mirrors: [], output: nil, dir: "/d", source: .inputFile)
        #expect(unparsed.expectedPath == "/d/one" && unparsed.request == download.request && unparsed.request.parsedURL == nil)
        // The cache follows the text: a request whose URL is changed has none.
        var changed = download.request
        changed.url = "http://a.example/other"
        #expect(changed.parsedURL == nil)
    }

    /// The destination directory is read once before a list's downloads start (``DirectorySnapshot``): a
    /// missing directory holds nothing; one with more entries than the limit, or one that cannot be read,
    /// gives no snapshot (each file is then looked for on its own).
    @Test func theDestinationDirectoryIsListedOnceWithinALimit() throws {
        let directory = try TemporaryDirectory(prefix: "haul-dir-listing")
        let out = try directory.makeSubdirectory("out")
        for name in ["a.bin", "b.bin.part", ".hidden"] {
            try "x".write(toFile: "\(out)/\(name)", atomically: false, encoding: .utf8)
        }
        let snapshot = try #require(DirectoryListing.snapshot(of: out, limit: 3))
        #expect(snapshot.mayHold("\(out)/a.bin") && snapshot.mayHold("\(out)/.hidden") && snapshot.mayHold("\(out)/b.bin.part"))
        #expect(!snapshot.mayHold("\(out)/b.bin") && !snapshot.mayHold("\(out)/c.bin"))
        #expect(DirectoryListing.snapshot(of: out, limit: 2) == nil, "more entries than the limit: no snapshot")
        let missing = try #require(DirectoryListing.snapshot(of: directory.file("not-yet"), limit: 2))
        #expect(!missing.mayHold(directory.file("not-yet") + "/a.bin"))
        #expect(DirectoryListing.snapshot(of: "\(out)/a.bin", limit: 10) == nil, "not a directory")
    }

    /// Downloads taken from those made ahead are dropped as the run goes, also when the run loop tops the
    /// made ones up before they run out (as it does between batches): memory stays flat in the list's length.
    @Test func downloadsTakenFromThoseMadeAheadAreNotKept() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = directory.file("long.txt")
        try (0..<2_000).map { "http://h.example/\($0)\n" }.joined().write(toFile: path, atomically: false, encoding: .utf8)
        let list = Self.makeList(path, try InputList.check(path))
        var taken = 0
        var most = 0
        list.prepare(upTo: 10)
        while let (index, _) = list.next() {
            #expect(index == taken)
            taken += 1
            if taken % 3 == 0 { list.prepare(upTo: 10) }
            most = max(most, list.madeHeld)
        }
        #expect(taken == 2_000)
        #expect(most <= DownloadList.takenBeforeCompaction + 10, "made downloads held at most: \(most)")
    }

    /// Downloads made ahead (by the run loop) come out in the list's order, mixed with ones made on demand,
    /// each once; a list read again behaves the same.
    @Test func downloadsMadeAheadComeOutInOrderOnce() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = try Self.writeList(in: directory)
        for checked in [try InputList.check(path), try InputList.check(path, holdingAtMost: 0)] {
            let list = Self.makeList(path, checked)
            list.prepare(upTo: 2)
            let first = try #require(list.next())
            list.prepare(upTo: 5)
            let rest = [list.next(), list.next(), list.next()]
            #expect(first.0 == 0 && first.1.request.url == "http://a.example/one")
            #expect(rest.map { $0?.0 } == [1, 2, nil])
            #expect(rest.map { $0?.1.request.url } == ["http://b.example/two", "http://d.example/three", nil])
            list.prepare(upTo: 5)
            #expect(list.next() == nil && list.error == nil)
        }
    }

    /// A long list keeps only its first entries from the check (what fits in ``InputList/heldSizeLimit``),
    /// and each is dropped once its download is made: what the list holds does not grow with its length.
    @Test func aLongListHoldsOnlyItsFirstEntriesAndDropsEachOnceMade() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = directory.file("long.txt")
        let urls = (0..<5_000).map { "http://h.example/file-\($0)" }
        try urls.map { $0 + "\n" }.joined().write(toFile: path, atomically: false, encoding: .utf8)
        let checked = try InputList.check(path)
        #expect(checked.count == 5_000)
        let held = checked.entries.count
        #expect(held > 0 && held < 1_000, "entries held from the check: \(held)")
        #expect(checked.entries.map(InputList.heldSize(of:)).reduce(0, +) <= InputList.heldSizeLimit)
        #expect(checked.rest?.afterLine == held)
        let list = Self.makeList(path, checked)
        #expect(list.entriesHeld == held)
        var taken: [String] = []
        while let (index, download) = list.next() {
            #expect(index == taken.count)
            taken.append(download.request.url)
            #expect(list.entriesHeld == max(0, held - taken.count))
        }
        #expect(taken == urls && list.error == nil)
    }

    /// Whatever the number of entries held, those read again from where they end are the list's others,
    /// with their line numbers: comments, blank lines, CRLF ends, a byte order mark, mirrors and `out=`
    /// lines included.
    @Test func theRestIsReadFromWhereTheHeldEntriesEnd() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = directory.file("mixed.txt")
        let text = "\u{FEFF}# first\r\nhttp://a.example/1\r\n\r\n  out=\u{E9}t\u{E9}.bin\r\nb.example/2\thttp://m.example/2\n"
            + "# between\nhttp://c.example/3\nhttp://d.example/4\tout=four.bin\n  \nhttp://e.example/5"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let all = try InputFile.parse(text)
        #expect(all.count == 5)
        let sizes = all.map(InputList.heldSize(of:))
        for kept in 0...all.count {
            let checked = try InputList.check(path, holdingAtMost: sizes.prefix(kept).reduce(0, +))
            #expect(checked.count == all.count && checked.entries == Array(all.prefix(kept)))
            guard let rest = checked.rest else {
                #expect(kept == all.count)
                continue
            }
            let reader = InputList(path: path, resumingAt: rest.offset, afterLine: rest.afterLine)
            var read: [InputEntry] = []
            while let entry = try reader.next() { read.append(entry) }
            #expect(read == Array(all.dropFirst(kept)), "holding \(kept)")
        }
    }

    /// The check still reads the whole list: a bad line far past the entries held stops the run before any
    /// download starts, naming its line.
    @Test func aBadLinePastTheHeldEntriesIsFoundByTheCheck() throws {
        let directory = try TemporaryDirectory(prefix: "haul-input-list")
        let path = directory.file("bad.txt")
        var lines = (0..<3_000).map { "http://h.example/\($0)" }
        lines[2_500] = "http://h.example/a b"
        try lines.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: UsageError.self) { try InputList.check(path) }
        do {
            _ = try InputList.check(path)
        } catch {
            #expect("\(error)".contains("line 2501"), "\(error)")
        }
    }
}
