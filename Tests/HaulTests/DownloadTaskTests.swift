import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// One nginx for the API tests, with a location that suggests a hostile file name. A download that must still
/// be running when a test pauses or cancels it is paced by the client (``DownloadTaskTests/paced``).
final class DownloadTaskFixture: Sendable {
    static let shared: DownloadTaskFixture = try! DownloadTaskFixture()

    let nginx: NginxServer
    let data: String
    let size = 24 << 20
    let sha256: String
    let ca: TestCertificateAuthority

    init() throws {
        data = try scratchDirectory()
        RunScopedDirectories.removeAtExit(data)
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        configuration.extraServerDirectives = """
            location /named/ { alias \(data)/; add_header Content-Disposition 'attachment; filename="../../up/\\\\evil name.bin"'; }
            """
        nginx = try NginxServer(configuration: configuration)
        ca = try TestCertificateAuthority.shared()
        try TestFiles.create(at: data + "/file.bin", size: size, seed: 31)
        sha256 = try TestFiles.sha256(ofFile: data + "/file.bin")
        for index in 0..<6 {
            try TestFiles.create(at: data + "/small-\(index).bin", size: 300_000 + index, seed: UInt64(100 + index))
        }
    }
}

@Suite(.serialized) struct DownloadTaskTests {
    let fixture = DownloadTaskFixture.shared

    /// The client's rate limit for a download a test acts on mid-way: the 24 MiB file takes about three
    /// seconds whatever requests it makes. (nginx's `limit_rate` paces each request, so it bounds nothing once
    /// a download is made of many requests.)
    static let paced: Int64 = 8 << 20

    func client(connections: Int = 4, maximumConnections: Int = 64, rateLimit: Int64? = nil) throws -> HaulClient {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, maximumConnections: maximumConnections,
                                      minimumSegment: 512 << 10, checkpointBytes: 1 << 20, progressInterval: .milliseconds(50))
        options.rateLimit = rateLimit
        options.tls.caFile = fixture.ca.caCertificatePath
        return try HaulClient(options: options)
    }

    /// Waits until the task has written at least `bytes`, and returns that snapshot.
    func waitForBytes(_ task: DownloadTask, atLeast bytes: Int64) async -> DownloadProgress? {
        for await progress in task.progress {
            if progress.bytesDone >= bytes && progress.phase == .downloading { return progress }
        }
        return nil
    }

    @Test func progressIsMonotonicAndEndsCompleted() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let task = try client(rateLimit: Self.paced).start(DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(directory + "/f")))
        var snapshots: [DownloadProgress] = []
        for await progress in task.progress { snapshots.append(progress) }
        let result = try await task.value
        #expect(try TestFiles.sha256(ofFile: result.path) == fixture.sha256)

        let downloading = snapshots.filter { $0.phase == .downloading }
        #expect(downloading.count >= 3, "several snapshots while bytes arrive")
        #expect(zip(snapshots, snapshots.dropFirst()).allSatisfy { $0.bytesDone <= $1.bytesDone }, "bytes never go back")
        #expect(downloading.contains { $0.total == Int64(fixture.size) && $0.activeConnections >= 2 && $0.bytesPerSecond > 0 })
        #expect(downloading.contains { $0.estimatedTimeRemaining != nil && !$0.segments.isEmpty })
        #expect(downloading.allSatisfy { $0.completedRanges.reduce(0) { $0 + $1.count } == $0.bytesDone },
                "the completed ranges add up to the bytes done")
        let last = try #require(snapshots.last)
        #expect(last.phase == .completed)
        #expect(last.bytesDone == Int64(fixture.size) && last.fractionDone == 1)
    }

    @Test func pauseLeavesADurableJournalAndResumeFinishesInTheSameProcess() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let task = try client(rateLimit: Self.paced).start(DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(path)))
        _ = try #require(await waitForBytes(task, atLeast: Int64(fixture.size / 4)))
        try await task.pause()

        let paused = task.currentProgress
        #expect(paused.phase == .paused)
        #expect(paused.bytesDone < Int64(fixture.size), "paused before the end")
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        #expect(state.durable.count == paused.bytesDone, "the journal lists every byte written before the pause")
        #expect(!FileManager.default.fileExists(atPath: path))

        // Nothing moves while paused. Not an ordering sleep: the absence of movement can only be watched over a
        // window, and in 300 ms a download that had not really stopped would add about 2.4 MiB (`paced`). A
        // shorter window could only miss a fault, never fail a correct pause.
        try await Task.sleep(for: .milliseconds(300))
        #expect(task.currentProgress.bytesDone == paused.bytesDone)
        #expect(try ResumeJournal.open(path: path + ".part.haul").1.durable == state.durable)

        task.resume()
        let result = try await task.value
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256)
        #expect(result.bytesRequested == Int64(fixture.size) - state.durable.count, "only the missing bytes were fetched")
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"))
    }

    @Test func pausedDownloadResumesInANewClient() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let request = DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(path))
        let first = try client(rateLimit: Self.paced).start(request)
        _ = try #require(await waitForBytes(first, atLeast: Int64(fixture.size / 3)))
        try await first.pause()
        let durable = try ResumeJournal.open(path: path + ".part.haul").1.durable.count

        let result = try await client().download(request)
        #expect(result.bytesRequested == Int64(fixture.size) - durable)
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256)
    }

    @Test func cancelStopsAndRemovesThePartialFileAndJournal() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let task = try client(rateLimit: Self.paced).start(DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(path)))
        _ = try #require(await waitForBytes(task, atLeast: 4 << 20))
        #expect(FileManager.default.fileExists(atPath: path + ".part"))
        await task.cancel()
        await #expect(throws: HaulError.self) { _ = try await task.value }
        if case .failure(let error) = await task.outcome() {
            guard case .cancelled = error else { Issue.record("expected .cancelled, got \(error)"); return }
        }
        #expect(task.currentProgress.phase == .cancelled)
        for leftover in [path, path + ".part", path + ".part.haul"] {
            #expect(!FileManager.default.fileExists(atPath: leftover), "\(leftover) is gone")
        }
    }

    @Test func cancelWhilePausedRemovesTheFilesToo() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let task = try client(rateLimit: Self.paced).start(DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(path)))
        _ = try #require(await waitForBytes(task, atLeast: 4 << 20))
        try await task.pause()
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"))
        await task.cancel()
        #expect(!FileManager.default.fileExists(atPath: path + ".part"))
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"))
    }

    @Test func swiftTaskCancellationKeepsThePartialDownloadForLater() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let haul = try client(rateLimit: Self.paced)
        let request = DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(path))
        let running = Task { try await haul.download(request) }
        // Cancelled once there is something to keep: the first checkpoint has written the journal.
        let journaled = await eventually { FileManager.default.fileExists(atPath: path + ".part.haul") }
        running.cancel()
        try #require(journaled, "the download wrote no journal before the deadline")
        await #expect { _ = try await running.value } throws: { error in
            guard case HaulError.cancelled = error else { return false }
            return true
        }
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"), "the journal stays for a later resume")
        _ = try await haul.download(request)
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256)
    }

    @Test func directoryDownloadUsesTheSanitizedSuggestedName() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let target = directory + "/new/deeper"
        let result = try await client().download(DownloadRequest(url: fixture.nginx.url("/named/small-1.bin"),
                                                                 destination: .directory(target), createsDirectories: true))
        // Server said "../../up/\evil name.bin" (a quoted-pair, so `\e` is `e`): separators become `_`,
        // leading dots go.
        #expect(result.path == target + "/_.._up_evil name.bin")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target) == ["_.._up_evil name.bin"])
        #expect(!FileManager.default.fileExists(atPath: directory + "/up"))

        let plain = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-2.bin"), destination: .directory(target)))
        #expect(plain.path == target + "/small-2.bin", "without Content-Disposition the URL names the file")
    }

    @Test func missingDirectoryIsAnErrorUnlessCreated() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        await #expect {
            _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-0.bin"), destination: .file(directory + "/no/such/f")))
        } throws: { error in
            guard case HaulError.disk(let path, let system) = error else { return false }
            return path == directory + "/no/such" && system.errno == ENOENT
        }
        _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-0.bin"), destination: .file(directory + "/no/such/f"),
                                                        createsDirectories: true))
        #expect(FileManager.default.fileExists(atPath: directory + "/no/such/f"))
    }

    /// The directory is checked before a download only when it was not found recently; one removed since
    /// (or a file where a parent should be) still gives the error naming it.
    @Test func aDirectoryRemovedSinceAnEarlierDownloadIsCheckedAgain() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let target = directory + "/d"
        _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-2.bin"), destination: .directory(target),
                                                        createsDirectories: true))
        try FileManager.default.removeItem(atPath: target)
        await #expect {
            _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-2.bin"), destination: .directory(target)))
        } throws: { error in
            guard case HaulError.disk(let path, let system) = error else { return false }
            return path == target && system.errno == ENOENT
        }
        #expect(!FileManager.default.fileExists(atPath: target))
        _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-2.bin"), destination: .directory(target),
                                                        createsDirectories: true))
        #expect(FileManager.default.fileExists(atPath: target + "/small-2.bin"))

        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/plain"))
        await #expect {
            _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-0.bin"), destination: .file(directory + "/plain/f")))
        } throws: { error in
            guard case HaulError.disk(let path, let system) = error else { return false }
            return path == directory + "/plain" && system.errno == ENOTDIR
        }
    }

    @Test func anExistingFileIsNotReplacedUnlessAllowed() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
        await #expect {
            _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-0.bin"), destination: .file(path)))
        } throws: { error in
            guard case HaulError.destinationExists(path) = error else { return false }
            return true
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
        _ = try await client().download(DownloadRequest(url: fixture.nginx.url("/small-0.bin"), destination: .file(path), replacesExisting: true))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 300_000)
    }

    @Test func manyDownloadsShareTheClientWideConnectionCap() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(connections: 4, maximumConnections: 3)
        let tasks = (0..<6).map { index in
            haul.start(DownloadRequest(url: fixture.nginx.url("/small-\(index).bin"), destination: .directory(directory)))
        }
        let big = haul.start(DownloadRequest(url: fixture.nginx.url("/file.bin"), destination: .file(directory + "/big")))
        for (index, task) in tasks.enumerated() {
            let result = try await task.value
            #expect(result.path == directory + "/small-\(index).bin")
            #expect(try TestFiles.sha256(ofFile: result.path) == TestFiles.sha256(ofFile: fixture.data + "/small-\(index).bin"))
        }
        _ = try await big.value
        #expect(try TestFiles.sha256(ofFile: directory + "/big") == fixture.sha256)
        let budget = haul.budget
        let (peak, inUse) = await withCheckedContinuation { continuation in
            haul.loop.execute { continuation.resume(returning: (budget.peakInUse, budget.inUse)) }
        }
        #expect(peak == 3, "the cap was reached and never exceeded")
        #expect(inUse == 0, "every slot came back")
    }
}
