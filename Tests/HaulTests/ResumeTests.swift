import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// Interrupted downloads resume from their journal, or say exactly why they cannot.
@Suite(.serialized) struct ResumeTests {
    static let size = 4 << 20
    let resource = MisbehavingServer.Resource.pattern(size: ResumeTests.size, seed: 21)

    func options() -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = .none
        options.checkpointBytes = 64 << 10
        return options
    }

    /// Runs `body` with a server and a destination path where a download was broken off, leaving `.part`
    /// and its journal behind.
    func withInterruptedDownload(_ body: (MisbehavingServer, String) async throws -> Void) async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        await interruptedDownload(server, to: path)
        try await body(server, path)
    }

    /// Runs a download that the server breaks off, leaving `.part` and its journal behind.
    func interruptedDownload(_ server: MisbehavingServer, to path: String) async {
        server.setScript(MisbehavingServer.Script { $0.index >= 2 ? .closeMidBody(afterBytes: 100_000) : .normal })
        await #expect(throws: HaulError.self) {
            _ = try await HaulClient(options: options()).download(server.url("/f"), to: path)
        }
        server.setScript(.normal)
    }

    @Test func interruptedDownloadResumesFromItsDurableBytes() async throws {
        try await withInterruptedDownload { server, path in
            let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
            #expect(state.durable.count > 0)
            let requestsBefore = server.requests.count

            let result = try await HaulClient(options: options()).download(server.url("/f"), to: path)
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
            #expect(result.bytesRequested == Int64(ResumeTests.size) - state.durable.count, "only the missing bytes")
            let resumed = server.requests.dropFirst(requestsBefore)
            #expect(resumed.allSatisfy { $0.header("If-Range") == resource.etag }, "every resumed request carries If-Range")
            #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"))
        }
    }

    @Test func journalForAnotherURLResumesWhenTheStrongETagProvesTheSameFile() async throws {
        try await withInterruptedDownload { server, path in
            let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
            let requestsBefore = server.requests.count
            let client = try HaulClient(options: options())
            let task = client.start(DownloadRequest(url: server.url("/other"), destination: .file(path)))
            let result = try await task.value
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
            #expect(result.bytesRequested == Int64(ResumeTests.size) - state.durable.count, "only the missing bytes")
            #expect(server.requests.dropFirst(requestsBefore).allSatisfy { $0.target == "/other" && $0.header("If-Range") == resource.etag })
            #expect(task.currentProgress.notices.contains { $0.contains("resuming the partial download of \(server.url("/f"))") })
        }
    }

    /// The rule of a URL refreshed mid-download (``URLRefreshDecision/provesSameFile(_:)``): a date proves as
    /// much across URLs as it does for one, compared exactly with the length on every answer.
    @Test func journalForAnotherURLWithADateResumesHeldToIt() async throws {
        let dated = MisbehavingServer.Resource(bytes: resource.bytes, etag: nil)
        let server = try MisbehavingServer(resource: dated)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        await interruptedDownload(server, to: path)
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        let requestsBefore = server.requests.count
        let result = try await HaulClient(options: options()).download(server.url("/other"), to: path)
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
        #expect(result.bytesRequested == Int64(ResumeTests.size) - state.durable.count, "only the missing bytes")
        #expect(server.requests.dropFirst(requestsBefore).allSatisfy { $0.target == "/other" && $0.header("If-Range") == dated.lastModified })
    }

    @Test func journalForAnotherURLWithoutAStrongETagOrADateIsRefusedUnlessRestarted() async throws {
        let untagged = MisbehavingServer.Resource(bytes: resource.bytes, etag: "W/\"weak\"", lastModified: nil)
        let server = try MisbehavingServer(resource: untagged)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        await interruptedDownload(server, to: path)
        await #expect {
            _ = try await HaulClient(options: options()).download(server.url("/other"), to: path)
        } throws: { error in
            guard case .partialDownloadMismatch? = (error as? HaulError)?.reason else { return false }
            let text = String(describing: error)
            // The engine names no option of the CLI's (`haul` adds "pass --restart").
            return text.contains("not \(server.url("/other"))") && text.contains("no strong ETag or Last-Modified") && !text.contains("--restart")
        }
        _ = try await HaulClient(options: options()).download(server.url("/other"), to: path, restart: true)
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
    }

    @Test func fileChangedOnTheServerBetweenRunsIsNoticed() async throws {
        try await withInterruptedDownload { server, path in
            let changed = MisbehavingServer.Resource.pattern(size: ResumeTests.size, seed: 77)
            server.setResource(changed)
            await #expect {
                _ = try await HaulClient(options: options()).download(server.url("/f"), to: path)
            } throws: { error in
                guard case .changedOnServer? = (error as? HaulError)?.reason else { return false }
                return String(describing: error).contains("no longer matches the partial download started")
            }
            #expect(!FileManager.default.fileExists(atPath: path), "no mixed file appears")

            _ = try await HaulClient(options: options()).download(
                DownloadRequest(url: server.url("/f"), destination: .file(path), ifChangedOnServer: .restart))
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), changed.bytes))
        }
    }

    @Test func deletedPartFileStartsOver() async throws {
        try await withInterruptedDownload { server, path in
            try FileManager.default.removeItem(atPath: path + ".part")
            let result = try await HaulClient(options: options()).download(server.url("/f"), to: path)
            #expect(result.bytesRequested == Int64(ResumeTests.size))
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
        }
    }

    @Test func corruptJournalIsAClearErrorAndRestartRecovers() async throws {
        try await withInterruptedDownload { server, path in
            // Flip a byte in both slots: no good state is left to fall back to.
            let journal = path + ".part.haul"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: journal)))
            // Header: magic (8), version (2), reserved (2), slot capacity (4, little-endian); slots follow at 4096.
            let capacity = Int(bytes[12]) | Int(bytes[13]) << 8 | Int(bytes[14]) << 16 | Int(bytes[15]) << 24
            for slot in [4096, 4096 + capacity] where slot + 20 < bytes.count { bytes[slot + 16] ^= 0xFF }
            try Data(bytes).write(to: URL(fileURLWithPath: journal))
            await #expect {
                _ = try await HaulClient(options: options()).download(server.url("/f"), to: path)
            } throws: { error in
                guard case .journal? = (error as? HaulError)?.reason else { return false }
                return String(describing: error).contains("cannot resume")
            }
            _ = try await HaulClient(options: options()).download(server.url("/f"), to: path, restart: true)
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
        }
    }
}
