import Foundation
import Testing
import HaulTestSupport
@testable import Haul
import HaulJournal

/// The API's side of Metalink answers and sizes: ``DownloadRequest/followsMetalink`` ends with the parsed
/// document and writes nothing; ``DownloadRequest/expectedSize`` refuses a server that serves another length.
/// Against the API tests' nginx, whose `/meta4/` location serves `.meta4` files as `application/metalink4+xml`.
@Suite(.serialized) struct MetalinkFollowingTests {
    let fixture = DownloadTaskFixture.shared

    func client() throws -> HaulClient {
        try HaulClient(options: DownloadOptions(synchronizesToDisk: false, connections: 4))
    }

    func entries(of directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    @Test func aFollowedMetalinkEndsWithTheDocumentAndNothingWritten() async throws {
        let directory = try scratchDirectory()
        let name = "api-\(UUID().uuidString).meta4"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.data + "/" + name)
        }
        let sha256 = try TestFiles.sha256(ofFile: fixture.data + "/small-2.bin")
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="copy.bin"><size>300002</size><hash type="sha-256">\(sha256)</hash>
                <url>\(fixture.nginx.url("/small-2.bin"))</url></file>
            </metalink>
            """
        try text.write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)
        let haul = try client()
        var request = DownloadRequest(url: fixture.nginx.url("/meta4/" + name), destination: .directory(directory))
        request.followsMetalink = true
        let result = try await haul.download(request)
        #expect(result.isMetalink && result.path.isEmpty && result.body == Array(text.utf8))
        let metalink = try #require(result.metalink)
        #expect(metalink.files.map(\.name) == ["copy.bin"] && metalink.files[0].size == 300_002)
        let written = try entries(of: directory)
        #expect(written.isEmpty, "nothing of the document is written: \(written)")

        // Its file, as the caller downloads it: size and hash checked.
        let file = try await haul.download(DownloadRequest(metalink: metalink.files[0], directory: directory))
        #expect(try TestFiles.sha256(ofFile: file.path) == sha256)

        // Not asked to follow: the document is a file like any other.
        let saved = try await haul.download(DownloadRequest(url: fixture.nginx.url("/meta4/" + name), destination: .directory(directory)))
        #expect(!saved.isMetalink && saved.metalink == nil && saved.path == directory + "/" + name)
        #expect(try String(contentsOfFile: saved.path, encoding: .utf8) == text)
        await haul.shutdown()
    }

    @Test func aServerServingAnotherSizeIsRefusedAndNothingIsLeft() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client()
        for connections in [1, 4] {
            var request = DownloadRequest(url: fixture.nginx.url("/small-3.bin"), destination: .file(directory + "/sized-\(connections).bin"))
            request.expectedSize = 300_003 + 10
            do {
                _ = try await haul.download(request)
                Issue.record("a length other than the expected one must fail")
            } catch {
                guard case .sizeMismatch(let url, 300_013, 300_003) = error.reason else { Issue.record("\(error)"); continue }
                #expect(url.contains("127.0.0.1") && url.hasSuffix("/small-3.bin"))
            }
        }
        let left = try entries(of: directory)
        #expect(left.isEmpty, "no file, no .part: \(left)")
        // The right size passes.
        var right = DownloadRequest(url: fixture.nginx.url("/small-3.bin"), destination: .file(directory + "/right.bin"))
        right.expectedSize = 300_003
        _ = try await haul.download(right)
        let expected = try TestFiles.sha256(ofFile: fixture.data + "/small-3.bin")
        #expect(try TestFiles.sha256(ofFile: directory + "/right.bin") == expected)
        await haul.shutdown()
    }

    /// A journal of another length than the request expects is not continued.
    @Test func aJournalOfAnotherSizeIsNotResumed() throws {
        let state = JournalState(url: "http://a.test/f", totalLength: 10, minimumSegmentSize: 1, createdAt: 0)
        var request = DownloadRequest(url: "http://a.test/f", destination: .file("f"))
        #expect(throws: Never.self) { try DownloadPreparation.checkSize(of: state, partPath: "f.part", request: request) }
        request.expectedSize = 10
        #expect(throws: Never.self) { try DownloadPreparation.checkSize(of: state, partPath: "f.part", request: request) }
        request.expectedSize = 11
        #expect {
            try DownloadPreparation.checkSize(of: state, partPath: "f.part", request: request)
        } throws: { error in
            guard case .partialDownloadMismatch(let path, let detail) = (error as? HaulError)?.reason else { return false }
            return path == "f.part" && detail.contains("10-byte") && detail.contains("11 bytes")
        }
    }
}
