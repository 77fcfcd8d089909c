import Foundation
import HaulTestSupport
import Synchronization
import Testing
@testable import Haul

/// Nothing awaiting a download waits for good once its client has shut down: a download running or paused
/// then ends with `clientShutDown` with its files kept, and one started (or paused, resumed, cancelled)
/// afterwards ends or returns at once. Before, the loops dropped that work and the awaiting tasks hung.
@Suite struct ClientShutdownTests {
    static let deadline: Duration = .seconds(120)
    let resource = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 23)

    func options() -> DownloadOptions {
        // One connection, a journal after the first 64 KiB, and no timeout to end a stalled response first.
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1, checkpointBytes: 64 << 10)
        options.timeouts.idle = .seconds(600)
        options.lowSpeedLimit = nil
        return options
    }

    /// `body`'s value, or nil when it has not returned by the deadline: a call that waits for good fails the
    /// test instead of hanging it (the task is left behind then).
    func returns<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) async -> Value? {
        let returned = Mutex<Value?>(nil)
        Task { let value = await body(); returned.withLock { $0 = value } }
        _ = await eventually(within: 120) { returned.withLock { $0 != nil } }
        return returned.withLock { $0 }
    }

    func isClientShutDown<Success>(_ outcome: Result<Success, HaulError>?) -> Bool {
        guard case .failure(let error)? = outcome, case .clientShutDown = error.reason else { return false }
        return true
    }

    /// A download whose response stalls mid-body until the server stops is running when the client shuts
    /// down: its outcome is `clientShutDown` at once (not a wait for good), its `.part` and journal stay, and
    /// its pause, resume and cancel afterwards return.
    @Test(arguments: [1, 2])
    func aDownloadRunningAtShutdownEndsAndKeepsItsFiles(eventLoops: Int) async throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallMidBody(afterBytes: 256 << 10, .untilStopped)]))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options()
        options.eventLoops = eventLoops
        let client = try HaulClient(options: options)
        let path = directory + "/f"
        let task = client.start(DownloadRequest(url: server.url("/f"), destination: .file(path)))
        #expect(await eventually { FileManager.default.fileExists(atPath: path + ".part.haul") }, "the first checkpoint is written")
        await client.shutdown()
        let outcome = await outcomeWithin(Self.deadline, of: task)
        #expect(isClientShutDown(outcome), "\(String(describing: outcome))")
        #expect(task.currentProgress.phase == .failed)
        #expect(FileManager.default.fileExists(atPath: path + ".part"), "the partial file stays")
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"), "its journal stays")
        #expect(!FileManager.default.fileExists(atPath: path))
        let paused = await returns { () -> Result<Void, HaulError> in
            do throws(HaulError) { try await task.pause(); return .success(()) } catch { return .failure(error) }
        }
        #expect(paused.map { (try? $0.get()) != nil } == true, "a pause after the shutdown returns: \(String(describing: paused))")
        let resumed = await returns { () -> Result<Void, HaulError> in
            do throws(HaulError) { try await task.resume(); return .success(()) } catch { return .failure(error) }
        }
        #expect(isClientShutDown(resumed), "a resume after the shutdown throws clientShutDown: \(String(describing: resumed))")
        #expect(await returns { await task.cancel(); return true } == true, "a cancel after the shutdown returns")
        #expect(FileManager.default.fileExists(atPath: path + ".part"), "a cancel after the shutdown removes nothing")
    }

    /// A paused download is not running, but something may await its end: that ends too.
    @Test func aPausedDownloadEndsAtShutdown() async throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallMidBody(afterBytes: 256 << 10, .untilStopped)]))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options())
        let path = directory + "/f"
        let task = client.start(DownloadRequest(url: server.url("/f"), destination: .file(path)))
        #expect(await eventually { task.currentProgress.bytesDone > 0 }, "some bytes arrive")
        try await task.pause()
        #expect(task.currentProgress.phase == .paused)
        await client.shutdown()
        #expect(isClientShutDown(await outcomeWithin(Self.deadline, of: task)))
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"), "the pause's journal stays")
    }

    /// A download started after the shutdown ends at once, having created nothing; `download` throws.
    @Test func aDownloadStartedAfterShutdownEndsAtOnceAndCreatesNothing() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options())
        await client.shutdown()
        let task = client.start(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/a")))
        #expect(isClientShutDown(task.endResult), "ended before start returned: \(String(describing: task.endResult))")
        let url = server.url("/f")
        let downloaded = await returns { () -> Result<DownloadResult, HaulError> in
            do throws(HaulError) {
                return .success(try await client.download(DownloadRequest(url: url, destination: .file(directory + "/b"))))
            } catch { return .failure(error) }
        }
        #expect(isClientShutDown(downloaded), "\(String(describing: downloaded))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        #expect(server.exchanges.isEmpty, "no request was sent")
    }

    /// A range request (`-r`) whose response stalls mid-body until the server stops is waiting when the client
    /// shuts down: it ends with `clientShutDown` (its own timeouts, here 600 s, do not have to end it), and its
    /// `.part` goes as after any failure of a range.
    @Test(arguments: [1, 2])
    func aRangeRequestHeldAtShutdownEnds(eventLoops: Int) async throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallMidBody(afterBytes: 256 << 10, .untilStopped)]))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options()
        options.eventLoops = eventLoops
        let client = try HaulClient(options: options)
        let path = directory + "/r"
        let request = DownloadRequest(url: server.url("/f"), destination: .file(path))
        let range = try ByteRange(.closed(first: 0, last: (1 << 20) - 1))
        let ended = Mutex<Result<DownloadResult, HaulError>?>(nil)
        Task {
            let outcome: Result<DownloadResult, HaulError>
            do throws(HaulError) { outcome = .success(try await client.download(request, range: range)) } catch { outcome = .failure(error) }
            ended.withLock { $0 = outcome }
        }
        #expect(await eventually { FileManager.default.fileExists(atPath: path + ".part") }, "the range's answer is being written")
        #expect(ended.withLock { $0 } == nil, "still waiting for the stalled body")
        await client.shutdown()
        #expect(await eventually(within: 120) { ended.withLock { $0 != nil } }, "the range request ended after the shutdown")
        let outcome = ended.withLock { $0 }
        #expect(isClientShutDown(outcome), "\(String(describing: outcome))")
        #expect(!FileManager.default.fileExists(atPath: path + ".part"), "the range's .part is removed")
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// A `HEAD` (`-I`) whose answer never comes is waiting when the client shuts down: it ends with
    /// `clientShutDown`.
    @Test func aHeadRequestHeldAtShutdownEnds() async throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallBeforeHead(.untilStopped)]))
        defer { server.stop() }
        let client = try HaulClient(options: options())
        let request = DownloadRequest(url: server.url("/f"), destination: .directory("."))
        let ended = Mutex<Result<[HeadResponse], HaulError>?>(nil)
        Task {
            let outcome: Result<[HeadResponse], HaulError>
            do throws(HaulError) { outcome = .success(try await client.responseHeads(request)) } catch { outcome = .failure(error) }
            ended.withLock { $0 = outcome }
        }
        #expect(await eventually { server.exchanges.count == 1 }, "the HEAD reached the server")
        #expect(ended.withLock { $0 } == nil, "still waiting for the stalled head")
        await client.shutdown()
        #expect(await eventually(within: 120) { ended.withLock { $0 != nil } }, "the HEAD ended after the shutdown")
        let outcome = ended.withLock { $0 }
        #expect(isClientShutDown(outcome), "\(String(describing: outcome))")
    }

    /// A single request asked for after the shutdown throws `clientShutDown` at once and sends nothing.
    @Test func aSingleRequestAfterShutdownEndsAtOnce() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let client = try HaulClient(options: options())
        await client.shutdown()
        let url = server.url("/f")
        let heads = await returns { () -> Result<[HeadResponse], HaulError> in
            do throws(HaulError) {
                return .success(try await client.responseHeads(DownloadRequest(url: url, destination: .directory("."))))
            } catch { return .failure(error) }
        }
        #expect(isClientShutDown(heads), "\(String(describing: heads))")
        #expect(server.exchanges.isEmpty, "no request was sent")
    }
}
