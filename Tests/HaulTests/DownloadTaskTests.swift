import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal
import SystemPackage

/// One nginx for the API tests, with a location that suggests a hostile file name. A download that must still
/// be running when a test pauses or cancels it comes from a `MisbehavingServer` that serves the same bytes and
/// holds them (``DownloadTaskTests/heldServer(afterBodyBytes:)``), so that it cannot end before the test acts
/// however the machine schedules the test.
final class DownloadTaskFixture: Sendable {
    static let shared: DownloadTaskFixture = try! DownloadTaskFixture()

    let nginx: NginxServer
    let data: String
    let size = 24 << 20
    let sha256: String
    /// The bytes of `file.bin`, for the held servers.
    let resource: MisbehavingServer.Resource
    let ca: TestCertificateAuthority

    init() throws {
        data = try scratchDirectory()
        RunScopedDirectories.removeAtExit(data)
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        configuration.extraServerDirectives = """
            location /named/ { alias \(data)/; add_header Content-Disposition 'attachment; filename="../../up/\\\\evil name.bin"'; }
            location /meta4/ { alias \(data)/; types { application/metalink4+xml meta4; } }
            """
        nginx = try NginxServer(configuration: configuration)
        ca = try TestCertificateAuthority.shared()
        try TestFiles.create(at: data + "/file.bin", size: size, seed: 31)
        sha256 = try TestFiles.sha256(ofFile: data + "/file.bin")
        resource = .pattern(size: size, seed: 31)
        for index in 0..<6 {
            try TestFiles.create(at: data + "/small-\(index).bin", size: 300_000 + index, seed: UInt64(100 + index))
        }
    }
}

@Suite(.serialized) struct DownloadTaskTests {
    let fixture = DownloadTaskFixture.shared

    func client(connections: Int = 4, maximumConnections: Int = 64) throws -> HaulClient {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, maximumConnections: maximumConnections,
                                      minimumSegment: 512 << 10, checkpointBytes: 1 << 20, progressInterval: .milliseconds(50))
        options.tls.caFile = fixture.ca.caCertificatePath
        // Longer than a test can take to get round to a held download (below) on a busy machine, so that
        // its connections wait instead of timing out and retrying meanwhile (nor closed by the low-speed limit).
        options.timeouts.idle = .seconds(120)
        options.lowSpeedLimit = nil
        return try HaulClient(options: options)
    }

    /// A server of `file.bin`'s bytes that sends at most `bytes` of them until `release()`: a download from it
    /// is still running when the test acts, whatever the scheduling (a pace in time would not be: a test
    /// that runs late would find the download over).
    func heldServer(afterBodyBytes bytes: Int) throws -> MisbehavingServer {
        let server = try MisbehavingServer(resource: fixture.resource)
        server.hold(afterBodyBytes: bytes)
        return server
    }

    /// Waits until the task has written at least `bytes`, and returns that snapshot (see ``downloading(_:atLeast:)``).
    func waitForBytes(_ task: DownloadTask, atLeast bytes: Int64) async -> DownloadProgress? {
        await downloading(task, atLeast: bytes)
    }

    /// Without a durable commit the transfer ends with the download: whoever ``DownloadTask/transferEnded()``
    /// wakes finds the outcome set (the CLI then reports it at once, without a second task per download).
    @Test func transferEndedOfADownloadWithoutSyncFindsItsOutcome() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(connections: 1)
        for index in 0..<3 {
            let task = haul.start(DownloadRequest(url: fixture.nginx.url("/small-\(index).bin"), destination: .file(directory + "/s\(index)")))
            await task.transferEnded()
            #expect(task.currentProgress.phase == .completed)
            let result = try await task.value
            #expect(result.bytes == Int64(300_000 + index))
        }
        await haul.shutdown()
    }

    @Test func progressIsMonotonicAndEndsCompleted() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Dripped (about 200 KB/s over 4 connections, longer than the polling deadline for the whole file)
        // until the test has seen bytes arrive; then released, the rest goes at full speed. The download so
        // cannot end before the test has looked, however late it gets to run.
        let server = try MisbehavingServer(resource: fixture.resource, script: .always(.drip(bytes: 1024, everyMilliseconds: 20)))
        defer { server.stop() }
        let task = try client().start(DownloadRequest(url: server.url("/file.bin"), destination: .file(directory + "/f")))
        let streamed = Task {
            var snapshots: [DownloadProgress] = []
            for await progress in task.progress { snapshots.append(progress) }
            return snapshots
        }
        // The stream keeps only the newest snapshot, so a reader that runs late may see few of them; the
        // latest snapshot, polled from a thread of its own, shows the download while bytes arrive whatever the
        // scheduling of the pool.
        let size = Int64(fixture.size)
        let flowing: @Sendable (DownloadProgress) -> Bool = {
            $0.total == size && $0.activeConnections >= 2 && $0.bytesPerSecond > 0
        }
        let estimating: @Sendable (DownloadProgress) -> Bool = { $0.estimatedTimeRemaining != nil && !$0.segments.isEmpty }
        let (looked, polled) = await onThreadOfItsOwn {
            var polled: [DownloadProgress] = []
            let looked = poll {
                let progress = task.currentProgress
                if progress.phase == .downloading { polled.append(progress) }
                return Set(polled.map(\.bytesDone)).count >= 3 && polled.contains(where: flowing) && polled.contains(where: estimating)
            }
            return (looked, polled)
        }
        server.release()
        let result = try await task.value
        let snapshots = await streamed.value
        #expect(looked, "the download never showed several snapshots with its rate, connections and time left")
        #expect(try TestFiles.sha256(ofFile: result.path) == fixture.sha256)

        let downloading = (snapshots + polled).filter { $0.phase == .downloading }
        #expect(Set(downloading.map(\.bytesDone)).count >= 3, "several snapshots while bytes arrive")
        // Whatever the streamed snapshots were, with the final one after them, and the polled ones in order.
        let final = task.currentProgress
        for sequence in [snapshots + [final], polled + [final]] {
            #expect(zip(sequence, sequence.dropFirst()).allSatisfy { $0.bytesDone <= $1.bytesDone }, "bytes never go back")
        }
        #expect(downloading.contains(where: flowing))
        #expect(downloading.contains(where: estimating))
        #expect(downloading.allSatisfy { $0.completedRanges.reduce(0) { $0 + $1.count } == $0.bytesDone },
                "the completed ranges add up to the bytes done")
        let last = try #require(snapshots.last)
        #expect(last.phase == .completed, "the stream ends with the final snapshot")
        #expect(final.phase == .completed)
        #expect(final.bytesDone == Int64(fixture.size) && final.fractionDone == 1)
        #expect(last.bytesDone == final.bytesDone)
    }

    @Test func pauseLeavesADurableJournalAndResumeFinishesInTheSameProcess() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let task = try client().start(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))
        _ = try #require(await waitForBytes(task, atLeast: Int64(fixture.size / 4)))
        try await task.pause()
        // From now on the server sends at full speed: a pause that had not really stopped the download shows.
        server.release()

        let paused = task.currentProgress
        #expect(paused.phase == .paused)
        #expect(paused.bytesDone < Int64(fixture.size), "paused before the end")
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        #expect(state.durable.count == paused.bytesDone, "the journal lists every byte written before the pause")
        #expect(!FileManager.default.fileExists(atPath: path))

        // Nothing moves while paused. Not an ordering sleep: the absence of movement can only be watched over a
        // window, and in 300 ms a download that had not really stopped would fetch the rest of the released
        // file. A shorter window could only miss a fault, never fail a correct pause.
        try await Task.sleep(for: .milliseconds(300))
        #expect(task.currentProgress.bytesDone == paused.bytesDone)
        #expect(try ResumeJournal.open(path: path + ".part.haul").1.durable == state.durable)

        try await task.resume()
        // `resume()` returns once the download runs again: no longer paused.
        #expect(task.currentProgress.phase != .paused)
        let result = try await task.value
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256)
        // The result covers both runs: the bytes the first one requested (at least the durable ones) and
        // the missing ones the second fetched, and the time of both.
        #expect(result.bytesRequested >= Int64(fixture.size), "bytes requested are summed over both runs")
        #expect(result.duration >= paused.elapsed, "the duration includes the first run")
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"))
    }

    @Test func resumeAfterTheEndReportsHowItEnded() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try client()
        let done = client.start(DownloadRequest(url: fixture.nginx.url("/small-1.bin"), destination: .file(directory + "/a")))
        _ = try await done.value
        try await done.resume()  // completed: nothing to resume, no error
        try await done.pause()   // nothing to pause

        let server = try heldServer(afterBodyBytes: 2 << 20)
        defer { server.stop() }
        let cancelled = client.start(DownloadRequest(url: server.url("/file.bin"), destination: .file(directory + "/b")))
        _ = try #require(await waitForBytes(cancelled, atLeast: 1 << 20))
        await cancelled.cancel()
        await #expect { try await cancelled.resume() } throws: { error in
            guard let error = error as? HaulError, case .cancelled = error.reason else { return false }
            return true
        }

        let failed = client.start(DownloadRequest(url: fixture.nginx.url("/missing.bin"), destination: .file(directory + "/c")))
        let failure: HaulError
        do { _ = try await failed.value; Issue.record("a missing file downloaded"); return } catch { failure = error }
        do {
            try await failed.resume()
            Issue.record("resuming a failed download succeeded")
        } catch {
            #expect("\(error)" == "\(failure)", "resume throws the error that ended the download")
        }
    }

    @Test func resumeWhileRunningReturnsAndAPausedResumeThrowsWhenItCannotContinue() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try heldServer(afterBodyBytes: 2 << 20)
        defer { server.stop() }
        let task = try client().start(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))
        _ = try #require(await waitForBytes(task, atLeast: 1 << 20))
        try await task.resume()  // running: returns at once
        #expect(task.currentProgress.phase == .downloading)
        try await task.pause()
        // The journal is damaged while paused: preparing again cannot trust it, and says so.
        try Data(repeating: 0x55, count: 64).write(to: URL(fileURLWithPath: path + ".part.haul"))
        await #expect { try await task.resume() } throws: { error in
            guard let error = error as? HaulError, case .journal = error.reason else { return false }
            return true
        }
        await #expect { _ = try await task.value } throws: { error in
            guard let error = error as? HaulError, case .journal = error.reason else { return false }
            return true
        }
        #expect(task.currentProgress.phase == .failed)
    }

    @Test func downloadToAPathRefusesAnExistingFileUnlessToldToReplaceIt() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        let client = try client()
        await #expect {
            _ = try await client.download(fixture.nginx.url("/small-2.bin"), to: path)
        } throws: { error in
            guard let error = error as? HaulError, case .destinationExists(path) = error.reason else { return false }
            return true
        }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(!FileManager.default.fileExists(atPath: path + ".part"), "a refused download leaves nothing behind")
        let result = try await client.download(fixture.nginx.url("/small-2.bin"), to: FilePath(path), replacingExisting: true)
        #expect(result.bytes == 300_002)
        #expect(try TestFiles.sha256(ofFile: path) == TestFiles.sha256(ofFile: fixture.data + "/small-2.bin"))
        // A FilePath destination in a request is the same as its string.
        #expect(DownloadRequest.Destination.file(FilePath(path)) == .file(path))
        #expect(DownloadRequest.Destination.directory(FilePath(directory)) == .directory(directory))
    }

    @Test func downloadToAPathCreatesMissingDirectoriesOnlyWhenAsked() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/a/b/f"
        let client = try client()
        await #expect {
            _ = try await client.download(fixture.nginx.url("/small-2.bin"), to: path)
        } throws: { error in
            guard let error = error as? HaulError, case .disk = error.reason else { return false }
            return true
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/a"), "nothing created unless asked")
        let result = try await client.download(fixture.nginx.url("/small-2.bin"), to: FilePath(path), creatingDirectories: true)
        #expect(result.path == path && result.bytes == 300_002)
        let logger: Logger = client.logger   // `import Haul` names swift-log's Logger (the test imports no Logging)
        #expect(logger.label == client.logger.label)
    }

    @Test func pausedDownloadResumesInANewClient() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let request = DownloadRequest(url: server.url("/file.bin"), destination: .file(path))
        let first = try client().start(request)
        _ = try #require(await waitForBytes(first, atLeast: Int64(fixture.size / 3)))
        try await first.pause()
        let durable = try ResumeJournal.open(path: path + ".part.haul").1.durable.count
        server.release()

        let result = try await client().download(request)
        #expect(result.bytesRequested == Int64(fixture.size) - durable)
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256)
    }

    @Test func cancelStopsAndRemovesThePartialFileAndJournal() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let task = try client().start(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))
        _ = try #require(await waitForBytes(task, atLeast: 4 << 20))
        #expect(FileManager.default.fileExists(atPath: path + ".part"))
        await task.cancel()
        await #expect(throws: HaulError.self) { _ = try await task.value }
        if case .failure(let error) = await task.outcome() {
            guard case .cancelled = error.reason else { Issue.record("expected .cancelled, got \(error)"); return }
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
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let task = try client().start(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))
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
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let haul = try client()
        let request = DownloadRequest(url: server.url("/file.bin"), destination: .file(path))
        let running = Task { try await haul.download(request) }
        // Cancelled once there is something to keep: the first checkpoint has written the journal.
        let journaled = await eventually { FileManager.default.fileExists(atPath: path + ".part.haul") }
        running.cancel()
        try #require(journaled, "the download wrote no journal before the deadline")
        await #expect { _ = try await running.value } throws: { error in
            guard case .cancelled? = (error as? HaulError)?.reason else { return false }
            return true
        }
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"), "the journal stays for a later resume")
        server.release()
        _ = try await haul.download(request)
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256)
    }

    /// Awaits `task.value` in a Swift task and cancels that task once `journal` exists (there is something to
    /// keep); returns when the download has ended as cancelled.
    func cancelTheSwiftTaskAwaiting(_ task: DownloadTask, onceItWrites journal: String) async throws {
        let waiting = Task { try await task.value }
        let journaled = await eventually { FileManager.default.fileExists(atPath: journal) }
        waiting.cancel()
        try #require(journaled, "the download wrote no journal before the deadline")
        await #expect { _ = try await waiting.value } throws: { ($0 as? HaulError)?.isCancelled ?? false }
        #expect(task.currentProgress.phase == .cancelled)
    }

    /// Cancelling the Swift task awaiting ``DownloadTask/value`` keeps the files for a resume (as documented);
    /// a ``DownloadTask/cancel()`` afterwards is still a cancel: it removes them.
    @Test func cancelAfterSwiftTaskCancellationRemovesTheKeptFiles() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let task = try client().start(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))
        try await cancelTheSwiftTaskAwaiting(task, onceItWrites: path + ".part.haul")
        #expect(FileManager.default.fileExists(atPath: path + ".part") && FileManager.default.fileExists(atPath: path + ".part.haul"),
                "a stop keeps the files for a later resume")
        await task.cancel()
        #expect(!FileManager.default.fileExists(atPath: path + ".part"), "cancel() removes the partial file")
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"), "cancel() removes the journal")
        await task.cancel()   // once only: nothing left to remove
    }

    /// The files a stop kept belong to whoever holds the name by the time of a late ``DownloadTask/cancel()``:
    /// a new download of the same destination, running, keeps its `.part`.
    @Test func aLateCancelLeavesTheFilesOfANewDownloadAlone() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try heldServer(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let haul = try client()
        let request = DownloadRequest(url: server.url("/file.bin"), destination: .file(path))
        let first = haul.start(request)
        try await cancelTheSwiftTaskAwaiting(first, onceItWrites: path + ".part.haul")
        let second = haul.start(request)
        try #require(await waitForBytes(second, atLeast: 1) != nil)
        await first.cancel()
        #expect(FileManager.default.fileExists(atPath: path + ".part"), "the running download's partial file stays")
        server.release()
        _ = try await second.value
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
            guard case .disk(let path, let system)? = (error as? HaulError)?.reason else { return false }
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
            guard case .disk(let path, let system)? = (error as? HaulError)?.reason else { return false }
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
            guard case .disk(let path, let system)? = (error as? HaulError)?.reason else { return false }
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
            guard case .destinationExists(path)? = (error as? HaulError)?.reason else { return false }
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
            haul.lanes[0].loop.execute { continuation.resume(returning: (budget.peakInUse, budget.inUse)) }
        }
        #expect(peak == 3, "the cap was reached and never exceeded")
        #expect(inUse == 0, "every slot came back")
    }
}
