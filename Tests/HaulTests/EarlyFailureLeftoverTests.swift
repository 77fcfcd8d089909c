import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// Through the Swift API: a download that fails before its first body byte leaves the directory as it was —
/// no `.part`, no journal, no directory it created — and a pause before the first byte leaves nothing either.
@Suite struct EarlyFailureLeftoverTests {
    static func client() throws -> HaulClient {
        var options = DownloadOptions(synchronizesToDisk: true, connections: 4, minimumSegment: 256 << 10,
                                      checkpointBytes: 1 << 20)
        options.retry = .none
        // A download held before its first byte waits for the test's pause rather than time out (retries are
        // off: a stall the test is slow to meet would fail it).
        options.timeouts.idle = .seconds(600)
        options.lowSpeedLimit = nil
        return try HaulClient(options: options)
    }

    static func listing(_ directory: String) -> Set<String> {
        Set((FileManager.default.enumerator(atPath: directory)?.allObjects as? [String]) ?? [])
    }

    @Test(arguments: [
        MisbehavingServer.Behavior.status(404), .status(304), .redirect(to: "ftp://127.0.0.1/x"), .garbageHead,
        .closeMidBody(afterBytes: 0),
    ])
    func aFailureBeforeTheFirstBodyByteLeavesNothing(_ behavior: MisbehavingServer.Behavior) async throws {
        let server = try MisbehavingServer(resource: .pattern(size: 4 << 20, seed: 9), script: .always(behavior))
        defer { server.stop() }
        let scratch = try TemporaryDirectory(prefix: "haul-early")
        let client = try Self.client()
        let destinations: [DownloadRequest.Destination] = [
            .file(scratch.path + "/new/deeper/f.bin"), .directory(scratch.path + "/named"), .memory(limit: 1 << 20),
        ]
        for destination in destinations {
            let request = DownloadRequest(url: server.url("/f.bin"), destination: destination, createsDirectories: true)
            await #expect(throws: HaulError.self) { _ = try await client.download(request) }
            #expect(Self.listing(scratch.path).isEmpty, "\(behavior) into \(destination): \(Self.listing(scratch.path))")
        }
        await client.shutdown()
    }

    /// A resource larger than the memory limit is refused before a byte is kept, and nothing is on disk.
    @Test func aMemoryLimitRefusalLeavesNothing() async throws {
        let server = try MisbehavingServer(resource: .pattern(size: 4 << 20, seed: 9))
        defer { server.stop() }
        let client = try Self.client()
        let request = DownloadRequest(url: server.url("/f.bin"), destination: .memory(limit: 1000))
        await #expect(throws: HaulError.self) { _ = try await client.download(request) }
        await client.shutdown()
    }

    /// Paused before the first body byte: nothing to resume, so nothing stays; a resume starts as the first
    /// run did and finishes the file.
    @Test func aPauseBeforeTheFirstBodyByteLeavesNothingAndResumes() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 10)
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        server.hold(afterBodyBytes: 0)
        let scratch = try TemporaryDirectory(prefix: "haul-early")
        let client = try Self.client()
        let output = scratch.path + "/sub/p.bin"
        let task = client.start(DownloadRequest(url: server.url("/p.bin"), destination: .file(output), createsDirectories: true))
        #expect(await eventually { server.requests.count > 0 && task.currentProgress.total != nil })
        try await task.pause()
        #expect(task.currentProgress.phase == .paused)
        #expect(Self.listing(scratch.path).isEmpty, "\(Self.listing(scratch.path))")
        server.release()
        try await task.resume()
        let result = try await task.value
        #expect(result.bytes == Int64(resource.bytes.count))
        #expect(FileManager.default.contents(atPath: output) == Data(resource.bytes))
        await client.shutdown()
    }
}
