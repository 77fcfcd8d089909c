import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulIO

/// Piece hashes through the API, against misbehaving servers: a lying mirror into memory, hashes that do not
/// fit the server's length, a stream (which cannot be checked this way).
@Suite(.serialized) struct PieceHashesDownloadTests {
    static let piece = 256 << 10

    func hashes(of bytes: [UInt8], length: Int = piece) throws -> PieceHashes {
        let digests = try stride(from: 0, to: bytes.count, by: length).map { start in
            try FileDigest.hex(of: Array(bytes[start..<min(start + length, bytes.count)]), algorithm: .sha256)
        }
        return try PieceHashes(length: Int64(length), algorithm: .sha256, digests: digests)
    }

    func options(connections: Int = 4) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: Int64(Self.piece))
        options.retry = RetryPolicy(triesPerRange: 2, totalRetries: 10, baseDelay: .milliseconds(10), maxDelay: .milliseconds(20))
        return options
    }

    @Test func aLyingMirrorIsDroppedAndTheBodyInMemoryIsRight() async throws {
        let bytes = TestFiles.bytes(count: 2 << 20, seed: 2510)
        var wrong = bytes
        // Every piece of the liar's copy is wrong: whatever it serves must be fetched again from the other.
        for start in stride(from: 0, to: wrong.count, by: Self.piece) { wrong[start + 17] ^= 0x40 }
        let good = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: bytes, etag: "\"good\""))
        defer { good.stop() }
        let liar = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: wrong, etag: "\"liar\""))
        defer { liar.stop() }
        var request = DownloadRequest(url: good.url("/f"), mirrors: [liar.url("/f")], destination: .memory(limit: 4 << 20))
        request.pieceHashes = try hashes(of: bytes)
        let task = try HaulClient(options: options()).start(request)
        let result = try await task.value
        #expect(result.body == bytes)
        let served = liar.exchanges.dropFirst().contains { $0.bodyBytesSent > 0 }
        #expect(served, "the liar served a range (it is the second connection's mirror)")
        let notices = task.currentProgress.notices
        #expect(notices.contains { $0.contains("dropping \(liar.url("/f"))") }, "\(notices)")
        #expect(!notices.contains { $0.contains("dropping \(good.url("/f"))") }, "\(notices)")
    }

    @Test func hashesThatDoNotFitTheLengthFailBeforeAByteIsWritten() async throws {
        let bytes = TestFiles.bytes(count: 1 << 20, seed: 2511)
        let server = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: bytes))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var request = DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f"))
        request.pieceHashes = try hashes(of: Array(bytes.prefix(600_000)))
        await #expect {
            _ = try await HaulClient(options: options()).download(request)
        } throws: { error in
            guard case .mirrorMismatch(_, let detail)? = (error as? HaulError)?.reason else { return false }
            return detail.contains("3 piece digests of 262144 bytes cover 524289 to 786432 bytes, not a file of 1048576 bytes")
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
        let partSize = (try? FileManager.default.attributesOfItem(atPath: directory + "/f.part")[.size] as? Int) ?? 0
        #expect(partSize == 0, "nothing was written")
    }

    @Test func aStreamCannotBeCheckedPieceByPiece() async throws {
        var request = DownloadRequest(url: "http://127.0.0.1:1/f", destination: .stream(.standardOutput))
        request.pieceHashes = try PieceHashes(length: 4, algorithm: .md5, digests: [String(repeating: "0", count: 32)])
        await #expect {
            _ = try await HaulClient(options: options()).download(request)
        } throws: { error in
            guard case .invalidDestination(let reason)? = (error as? HaulError)?.reason else { return false }
            return reason.contains("piece hashes")
        }
    }
}
