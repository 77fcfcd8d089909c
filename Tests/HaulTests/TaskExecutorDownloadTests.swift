import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// Downloads awaited from Swift tasks that prefer the client's event loops (``HaulClient/taskExecutor``):
/// they end with the right bytes, on the loop threads, a Swift task's cancellation still stops its download,
/// and tasks that prefer a client that shuts down all end.
@Suite(.serialized) struct TaskExecutorDownloadTests {
    let fixture = DownloadTaskFixture.shared

    func client(eventLoops: Int) throws -> HaulClient {
        // A journal after the first MiB, for the cancellation test to wait for.
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1, maximumConnections: 16, checkpointBytes: 1 << 20)
        options.eventLoops = eventLoops
        options.timeouts.idle = .seconds(120)
        options.lowSpeedLimit = nil
        return try HaulClient(options: options)
    }

    /// A task group of downloads, 3 at a time on two loops, under the preference: every download ends with its
    /// source's bytes, and every child continues after its download on one of the client's loop threads
    /// (where its download ended), not on the cooperative pool.
    @Test func downloadsAwaitedUnderThePreferenceEndWithTheRightBytesOnTheLoops() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(eventLoops: 2)
        let names = (0..<24).map { "small-\($0 % 6).bin" }
        let ended = Shared<[(index: Int, onLoop: Bool, error: HaulError?)]>([])
        let lanes = haul.lanes
        let run = Task {
            await withTaskExecutorPreference(haul.taskExecutor) {
                await withTaskGroup(of: Void.self) { group in
                    var next = 0
                    func add() {
                        let index = next
                        next += 1
                        group.addTask {
                            let request = DownloadRequest(url: fixture.nginx.url("/" + names[index]), destination: .file(directory + "/d\(index)"))
                            var failure: HaulError?
                            do throws(HaulError) { _ = try await haul.download(request) } catch { failure = error }
                            let onLoop = lanes.contains { $0.loop.inEventLoop }
                            ended.value.withLock { $0.append((index, onLoop, failure)) }
                        }
                    }
                    for _ in 0..<3 { add() }
                    while await group.next() != nil { if next < names.count { add() } }
                }
            }
        }
        let allEnded = await eventually { ended.value.withLock { $0.count } == names.count }
        try #require(allEnded, "\(ended.value.withLock { $0.count }) of \(names.count) downloads ended before the deadline")
        await run.value
        for (index, onLoop, failure) in ended.value.withLock({ $0 }).sorted(by: { $0.index < $1.index }) {
            #expect(failure == nil, "download \(index): \(String(describing: failure))")
            #expect(onLoop, "download \(index)'s task continued off the client's loops")
            let expected = try TestFiles.sha256(ofFile: fixture.data + "/" + names[index])
            #expect(try TestFiles.sha256(ofFile: directory + "/d\(index)") == expected, "download \(index)")
        }
        // Both lanes ran downloads: the preference does not pin them all to the loop the group runs on.
        #expect(lanes.allSatisfy { $0.started > 0 }, "started per lane: \(lanes.map(\.started))")
    }

    /// The plain form, a task group with no executor preference: `download` waits on the download's loop
    /// (``HaulClient/download(_:logger:)``), but the caller's code after it never runs there — every child
    /// continues off the client's loops, with its source's bytes, and the downloads spread over both lanes.
    @Test func downloadsAwaitedWithoutAPreferenceContinueOffTheLoops() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(eventLoops: 2)
        let names = (0..<24).map { "small-\($0 % 6).bin" }
        let lanes = haul.lanes
        let ended = await withTaskGroup(of: (index: Int, onLoop: Bool, error: HaulError?).self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask {
                    let request = DownloadRequest(url: fixture.nginx.url("/" + names[index]), destination: .file(directory + "/d\(index)"))
                    var failure: HaulError?
                    do throws(HaulError) { _ = try await haul.download(request) } catch { failure = error }
                    return (index, lanes.contains { $0.loop.inEventLoop }, failure)
                }
            }
            for _ in 0..<3 { add() }
            var ended: [(index: Int, onLoop: Bool, error: HaulError?)] = []
            while let one = await group.next() {
                ended.append(one)
                if next < names.count { add() }
            }
            return ended
        }
        #expect(ended.count == names.count)
        for (index, onLoop, failure) in ended.sorted(by: { $0.index < $1.index }) {
            #expect(failure == nil, "download \(index): \(String(describing: failure))")
            #expect(!onLoop, "download \(index)'s caller continued on a loop thread")
            let expected = try TestFiles.sha256(ofFile: fixture.data + "/" + names[index])
            #expect(try TestFiles.sha256(ofFile: directory + "/d\(index)") == expected, "download \(index)")
        }
        #expect(lanes.allSatisfy { $0.started > 0 }, "started per lane: \(lanes.map(\.started))")
    }

    /// Cancelling a Swift task with no preference that awaits `download` (which waits on the loop) stops the
    /// download: the await throws ``HaulError/cancelled`` within the deadline, and the caller goes on off the loop.
    @Test func cancellingATaskWithoutAPreferenceStopsItsDownload() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try MisbehavingServer(resource: fixture.resource)
        server.hold(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let haul = try client(eventLoops: 1)
        let lanes = haul.lanes
        let outcome = Shared<(Result<DownloadResult, HaulError>, onLoop: Bool)?>(nil)
        let running = Task {
            let result: Result<DownloadResult, HaulError>
            do throws(HaulError) { result = .success(try await haul.download(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))) }
            catch { result = .failure(error) }
            let onLoop = lanes.contains { $0.loop.inEventLoop }
            outcome.value.withLock { $0 = (result, onLoop) }
        }
        let journaled = await eventually { FileManager.default.fileExists(atPath: path + ".part.haul") }
        running.cancel()
        try #require(journaled, "the download wrote no journal before the deadline")
        let ended = await eventually { outcome.value.withLock { $0 != nil } }
        try #require(ended, "the cancelled download never ended")
        await running.value
        guard let (result, onLoop) = outcome.value.withLock({ $0 }), case .failure(let error) = result else {
            Issue.record("expected .cancelled, got \(String(describing: outcome.value.withLock { $0 }))")
            return
        }
        #expect(error.isCancelled, "expected .cancelled, got \(error)")
        #expect(!onLoop, "the caller continued on the loop thread")
    }

    /// Cancelling a Swift task that awaits a download under the preference stops the download as it does off
    /// it: the await throws ``HaulError/cancelled``, within the deadline.
    @Test func cancellingATaskUnderThePreferenceStopsItsDownload() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let server = try MisbehavingServer(resource: fixture.resource)
        server.hold(afterBodyBytes: fixture.size / 2)
        defer { server.stop() }
        let haul = try client(eventLoops: 1)
        let outcome = Shared<Result<DownloadResult, HaulError>?>(nil)
        let running = Task {
            await withTaskExecutorPreference(haul.taskExecutor) {
                let result: Result<DownloadResult, HaulError>
                do throws(HaulError) { result = .success(try await haul.download(DownloadRequest(url: server.url("/file.bin"), destination: .file(path)))) }
                catch { result = .failure(error) }
                outcome.value.withLock { $0 = result }
            }
        }
        let journaled = await eventually { FileManager.default.fileExists(atPath: path + ".part.haul") }
        running.cancel()
        try #require(journaled, "the download wrote no journal before the deadline")
        let ended = await eventually { outcome.value.withLock { $0 != nil } }
        try #require(ended, "the cancelled download never ended")
        await running.value
        guard case .failure(let error)? = outcome.value.withLock({ $0 }) else {
            Issue.record("expected .cancelled, got \(String(describing: outcome.value.withLock { $0 }))")
            return
        }
        #expect(error.isCancelled, "expected .cancelled, got \(error)")
    }

    /// Tasks that prefer the client's executor and are suspended when the client shuts down all end once
    /// resumed: their jobs, refused by the stopped loops, run on the global executor. A dropped job would
    /// leave its task suspended for good (caught by the deadline).
    @Test func tasksPreferringAClientThatShutsDownAllEnd() async throws {
        let haul = try client(eventLoops: 2)
        let lanes = haul.lanes
        let count = 64
        let suspended = Shared<[CheckedContinuation<Void, Never>]>([])
        let ended = Shared<[(before: Bool, after: Bool)]>([])
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<count {
            tasks.append(Task {
                await withTaskExecutorPreference(haul.taskExecutor) {
                    for _ in 0..<5 { await Task.yield() }
                    let before = lanes.contains { $0.loop.inEventLoop }
                    await withCheckedContinuation { continuation in suspended.value.withLock { $0.append(continuation) } }
                    for _ in 0..<5 { await Task.yield() }
                    let after = lanes.contains { $0.loop.inEventLoop }
                    ended.value.withLock { $0.append((before, after)) }
                }
            })
        }
        let allSuspended = await eventually { suspended.value.withLock { $0.count } == count }
        await haul.shutdown()
        for continuation in suspended.value.withLock({ $0 }) { continuation.resume() }
        try #require(allSuspended, "\(suspended.value.withLock { $0.count }) of \(count) tasks suspended before the deadline")
        let allEnded = await eventually { ended.value.withLock { $0.count } == count }
        #expect(allEnded, "\(count - ended.value.withLock { $0.count }) of \(count) tasks never ended")
        if allEnded { for task in tasks { await task.value } }
        let seen = ended.value.withLock { $0 }
        #expect(seen.allSatisfy { $0.before }, "tasks ran off the loops before the shutdown")
        #expect(!seen.contains { $0.after }, "tasks ran on a stopped loop")
    }
}

/// A value that tasks share under a lock (a `Mutex` itself cannot be captured by a task's closure).
private final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}
