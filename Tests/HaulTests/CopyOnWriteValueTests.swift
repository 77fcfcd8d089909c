import HaulHTTP
import Testing
@testable import Haul

/// ``DownloadRequest``, ``DownloadResult``, ``DownloadProgress`` and ``DownloadOptions`` keep their fields in
/// one copy-on-write box (`CopyOnWrite`): a copy shares it until one of the two is changed, and the change is
/// never seen by the other — the values keep the meaning of plain structs.
@Suite struct CopyOnWriteValueTests {
    static func request() -> DownloadRequest {
        DownloadRequest(url: "https://example.org/a.iso", mirrors: ["https://m.example.net/a.iso"], destination: .file("/data/a.iso"),
                        headers: [("X-A", "1")])
    }

    static func result() throws -> DownloadResult {
        DownloadResult(path: "/data/a.iso", bytes: 4096, duration: .milliseconds(5), finalURL: try HTTPURL("https://example.org/a.iso"),
                       entityTag: nil, lastModified: nil, redirects: 0, connections: 1, bytesRequested: 4096, retries: 0,
                       headers: [("Content-Type", "text/plain")])
    }

    static func progress() -> DownloadProgress {
        DownloadProgress(phase: .downloading, bytesDone: 10, total: 100, bytesPerSecond: 1, estimatedTimeRemaining: nil,
                         activeConnections: 1, completedRanges: [0..<10], segments: [.init(start: 0, next: 10, end: 100, isActive: true)],
                         elapsed: .seconds(1), partialPath: "/data/a.iso.part")
    }

    @Test func aChangedRequestCopyLeavesTheOriginal() {
        let original = Self.request()
        var copy = original
        #expect(copy.sharesStorage(with: original), "a copy is one retain, not a copy of every field")
        copy.url = "https://example.org/b.iso"
        copy.mirrors.append("https://n.example.net/b.iso")
        copy.headers[0].value = "2"
        copy.createsDirectories = true
        copy.listedAbsentPath = "/data/b.iso"
        #expect(!copy.sharesStorage(with: original))
        #expect(original == Self.request() && original.url == "https://example.org/a.iso" && original.mirrors == ["https://m.example.net/a.iso"])
        #expect(original.headers.map(\.value) == ["1"] && !original.createsDirectories && original.listedAbsentPath == nil)
        #expect(copy.mirrors.count == 2 && copy.headers.map(\.value) == ["2"] && copy.createsDirectories)
        #expect(copy != original)
    }

    @Test func aRequestsParsedURLIsUsedOnlyWhileItsURLIsUnchanged() throws {
        var request = Self.request()
        request.parsedURL = try HTTPURL(request.url)
        let copy = request
        #expect(copy.parsedURL?.absoluteText == "https://example.org/a.iso")
        request.url = "https://example.org/b.iso"
        #expect(request.parsedURL == nil, "the cache is of the old text")
        #expect(copy.parsedURL?.absoluteText == "https://example.org/a.iso", "the copy kept its own")
    }

    @Test func aChangedResultCopyLeavesTheOriginal() throws {
        let original = try Self.result()
        var copy = original
        #expect(copy.sharesStorage(with: original))
        copy.path = "/data/b.iso"
        copy.headers.append(("ETag", "\"x\""))
        copy.body = [1, 2, 3]
        #expect(!copy.sharesStorage(with: original))
        #expect(original == (try Self.result()) && original.path == "/data/a.iso" && original.headers.count == 1 && original.body == nil)
        #expect(copy.path == "/data/b.iso" && copy.headers.count == 2 && copy.body == [1, 2, 3])
    }

    @Test func aChangedProgressCopyLeavesTheOriginal() {
        let original = Self.progress()
        var copy = original
        #expect(copy.sharesStorage(with: original))
        copy.phase = .completed
        copy.completedRanges.append(10..<100)
        copy.segments = []
        copy.notices.append("resumed")
        copy.partialPath = "/data/a.iso"
        #expect(!copy.sharesStorage(with: original))
        #expect(original == Self.progress() && original.phase == .downloading && original.completedRanges == [0..<10])
        #expect(original.segments.count == 1 && original.notices.isEmpty && original.partialPath == "/data/a.iso.part")
        #expect(copy.completedRanges == [0..<10, 10..<100] && copy.notices == ["resumed"] && copy != original)
    }

    @Test func aChangedOptionsCopyLeavesTheOriginal() {
        let original = DownloadOptions(userAgent: "test")
        var copy = original
        #expect(copy.sharesStorage(with: original))
        copy.userAgent = "other"
        copy.tls.caFile = "/ca.pem"
        copy.headers.append(("X-B", "2"))
        copy.connections = 3
        #expect(!copy.sharesStorage(with: original))
        #expect(original.userAgent == "test" && original.tls.caFile == nil && original.headers.isEmpty && original.connections == 8)
        #expect(copy.userAgent == "other" && copy.tls.caFile == "/ca.pem" && copy.headers.count == 1 && copy.connections == 3)
    }

    /// A value that holds the only reference to its box is changed in place: no box is made per change; one
    /// that shares it gets a box of its own once, then changes that in place.
    @Test func aValueNotSharedIsChangedInPlace() {
        var value = CopyOnWrite([1, 2])
        let box = ObjectIdentifier(value.box)
        value.unique.fields.append(3)
        value.unique.fields[0] = 0
        #expect(ObjectIdentifier(value.box) == box && value.value == [0, 2, 3])
        let shared = value
        value.unique.fields.append(4)
        let own = ObjectIdentifier(value.box)
        #expect(own != box && shared.value == [0, 2, 3] && value.value == [0, 2, 3, 4])
        value.unique.fields.append(5)
        #expect(ObjectIdentifier(value.box) == own, "copied once, then changed in place")
    }

    /// `print` and `dump` show the fields, as they did of the plain structs.
    @Test func theMirrorShowsTheFieldsNotTheBox() throws {
        let labels = Mirror(reflecting: Self.progress()).children.compactMap(\.label)
        #expect(labels.contains("partialPath") && labels.contains("completedRanges") && !labels.contains("fields"))
        #expect(Mirror(reflecting: DownloadOptions()).children.compactMap(\.label).contains("userAgent"))
        #expect(Mirror(reflecting: try Self.result()).children.compactMap(\.label).contains("finalURL"))
        #expect(String(describing: Self.request()).hasPrefix("DownloadRequest(url: \"https://example.org/a.iso\""))
    }
}
