import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// URLs given as mirrors of one file that turn out to be different files: the download fails before a byte
/// is written, whichever mirror is slower to answer.
@Suite(.serialized) struct MirrorCheckTests {
    @Test(arguments: [false, true])
    func mirrorsThatAreDifferentFilesFailBeforeAnythingIsWritten(slowMirror: Bool) async throws {
        let first = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 40)
        let other = MisbehavingServer.Resource.pattern(size: 3 << 20, seed: 41)
        let primary = try MisbehavingServer(resource: first)
        defer { primary.stop() }
        let mirror = try MisbehavingServer(resource: other, script: slowMirror ? .always(.stallBeforeHead(.seconds(0.3))) : .normal)
        defer { mirror.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 8, minimumSegment: 64 << 10)
        options.retry = RetryPolicy(triesPerRange: 2, totalRetries: 5, baseDelay: .milliseconds(10), maxDelay: .milliseconds(20))
        let request = DownloadRequest(url: primary.url("/f"), mirrors: [mirror.url("/f")], destination: .file(directory + "/f"))
        await #expect {
            _ = try await HaulClient(options: options).download(request)
        } throws: { error in
            guard case .mirrorMismatch(let url, let detail)? = (error as? HaulError)?.reason else { return false }
            return url == mirror.url("/f") && detail.contains("3145728") && detail.contains("4194304")
        }
        let partSize = (try? FileManager.default.attributesOfItem(atPath: directory + "/f.part")[.size] as? Int) ?? 0
        #expect(partSize == 0, "nothing was written")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
    }

    @Test func aMirrorOfTheSameFileIsCheckedAndShares() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 42)
        let primary = try MisbehavingServer(resource: resource)
        defer { primary.stop() }
        let mirror = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: resource.bytes, etag: "\"other-server\""))
        defer { mirror.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        let result = try await HaulClient(options: options).download(
            DownloadRequest(url: primary.url("/f"), mirrors: [mirror.url("/f")], destination: .file(directory + "/f")))
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), resource.bytes))
        #expect(mirror.requests.first?.rangeHeader == "bytes=0-0", "the check comes first")
        #expect(mirror.exchanges.dropFirst().contains { $0.bodyBytesSent > 0 }, "then the mirror shares the work")
        #expect(result.bytesRequested == Int64(resource.bytes.count), "no byte requested twice (the check is not counted)")
    }
}
