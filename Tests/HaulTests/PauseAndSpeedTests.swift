import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// What a pause promises, whatever the file's size or the server's range support, and the low-speed limit.
@Suite(.serialized) struct PauseAndSpeedTests {
    func options(connections: Int = 2, idle: Duration = .seconds(5)) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 64 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(20), maxDelay: .milliseconds(200))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: idle)
        // A held download's connections receive nothing until the test acts: not a slow server to close.
        if idle >= Self.heldIdle { options.lowSpeedLimit = nil }
        return options
    }

    /// For a download the server holds (`hold(afterBodyBytes:)`) until the test acts: its connections wait
    /// for as long as the test takes to get there on a busy machine, instead of timing out and retrying
    /// (and, in `options(idle:)`, are not held to the low-speed limit).
    static let heldIdle: Duration = .seconds(120)

    @Test func aPauseLeavesAJournalEvenForAFileWithinOneCheckpointWindow() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 512 << 10, seed: 5)
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        // The download cannot finish before the pause, however late the test gets to run.
        server.hold(afterBodyBytes: 96 << 10)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/small"
        var options = options(idle: Self.heldIdle)
        options.checkpointBytes = 32 << 20   // far larger than the file: no journal while it runs
        let task = try HaulClient(options: options).start(DownloadRequest(url: server.url("/f"), destination: .file(path)))
        _ = try #require(await downloading(task, atLeast: 64 << 10))
        try await task.pause()
        #expect(task.currentProgress.phase == .paused)
        #expect(task.currentProgress.canResume)
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        #expect(state.durable.count == task.currentProgress.bytesDone, "the journal lists every byte written")

        server.release()
        let requestsBefore = server.exchanges.count
        let result = try await HaulClient(options: options).download(DownloadRequest(url: server.url("/f"), destination: .file(path)))
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), resource.bytes))
        let fetched = server.exchanges.dropFirst(requestsBefore).map(\.bodyBytesSent).reduce(0, +)
        #expect(Int64(fetched) == Int64(resource.bytes.count) - state.durable.count, "only the missing bytes are fetched again")
        #expect(result.bytesRequested == Int64(resource.bytes.count) - state.durable.count)
    }

    @Test func aPauseOnAServerWithoutRangesSaysTheNextRunStartsOver() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 512 << 10, seed: 6)
        let server = try MisbehavingServer(resource: resource, script: .always(.ignoreRange))
        defer { server.stop() }
        // The download cannot finish before the pause, however late the test gets to run.
        server.hold(afterBodyBytes: 32 << 10)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let task = try HaulClient(options: options(idle: Self.heldIdle)).start(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f")))
        _ = try #require(await downloading(task, atLeast: 16 << 10))
        try await task.pause()
        #expect(task.currentProgress.phase == .paused)
        #expect(!task.currentProgress.canResume, "without ranges nothing can be resumed")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f.part.haul"))
    }

    @Test func aConnectionBelowTheLowSpeedLimitIsGivenUp() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 8)
        let server = try MisbehavingServer(resource: resource, script: .always(.drip(bytes: 100, everyMilliseconds: 50)))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(connections: 1)
        options.retry = .none
        options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 100_000, seconds: 2)
        await #expect {
            _ = try await HaulClient(options: options).download(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f")))
        } throws: { error in
            guard case .belowSpeedLimit(let url, let limit)? = (error as? HaulError)?.reason else { return false }
            return url == server.url("/f") && limit.bytesPerSecond == 100_000 && String(describing: error).contains("below 100000 bytes/s for 2 s")
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
    }
}

/// The public surface cannot be misused quietly.
@Suite(.serialized) struct APIContractTests {
    @Test(arguments: ["sha256=" + String(repeating: "a", count: 63), "sha256=" + String(repeating: "g", count: 64), "sha257=00", "nonsense"])
    func aMalformedChecksumIsAnErrorNeverNil(text: String) {
        #expect(throws: ChecksumFormatError.self) { _ = try Checksum(text) }
    }

    @Test func aWellFormedChecksumParsesInAnyCase() throws {
        let checksum = try Checksum("SHA256=" + String(repeating: "AB", count: 32))
        #expect(checksum.algorithm == .sha256 && checksum.hex == String(repeating: "ab", count: 32))
    }

    @Test func cancellingTheSwiftTaskAwaitingValueStopsTheDownloadAndEndsTheWait() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 9)
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        // Still running when the waiter is cancelled, however late the test gets to run.
        server.hold(afterBodyBytes: 1 << 20)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 2, minimumSegment: 256 << 10)
        options.checkpointBytes = 64 << 10
        let task = try HaulClient(options: options).start(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f")))
        _ = try #require(await downloading(task, atLeast: 1))
        let waiter = Task { try await task.value }
        waiter.cancel()
        // Bounded, not timed: the wait must end by itself (the held download never would).
        let ended = await outcomeOfWaiter(waiter, within: .seconds(60))
        guard case .failure(let error)? = ended, case .cancelled = error.reason else { Issue.record("expected cancelled, got \(String(describing: ended))"); return }
        #expect(FileManager.default.fileExists(atPath: directory + "/f.part.haul"), "kept for a later resume, like a pause")
    }

    func outcomeOfWaiter(_ waiter: Task<DownloadResult, any Error>, within limit: Duration) async -> Result<DownloadResult, HaulError>? {
        await withTaskGroup(of: Result<DownloadResult, HaulError>?.self) { group in
            group.addTask {
                do { return .success(try await waiter.value) } catch let error as HaulError { return .failure(error) } catch { return nil }
            }
            group.addTask {
                // The deadline (it races the waiter), not an ordering sleep.
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
