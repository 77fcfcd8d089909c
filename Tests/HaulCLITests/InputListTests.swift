import Foundation
import Haul
import HaulTestSupport
import Testing
@testable import haul

/// `-i LIST` is checked whole before any download starts; a short list's entries are kept from that reading
/// and handed out without reading the file again, a long one is read again entry by entry.
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
        let entries = try #require(checked.entries)
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
        // The first two entries fit, the third does not: none is kept.
        let firstTwo = try #require(try InputList.check(path).entries).prefix(2)
        let checked = try InputList.check(path, holdingAtMost: firstTwo.map(InputList.heldSize(of:)).reduce(0, +))
        #expect(checked.count == 3 && checked.mostURLs == 2 && checked.entries == nil)
        #expect(Self.urls(of: Self.makeList(path, checked))
            == ["http://a.example/one", "http://b.example/two", "http://d.example/three"])

        // Read again, it must still be the list that was checked.
        try "http://a.example/one\n".write(toFile: path, atomically: false, encoding: .utf8)
        let shortened = Self.makeList(path, checked)
        #expect(Self.urls(of: shortened) == ["http://a.example/one"])
        #expect(shortened.error?.description.contains("changed while it was being downloaded") == true)
    }
}
