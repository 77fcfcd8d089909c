import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// ``HandedOffWriteReturn``: spliced bytes written on a writer thread count only when their write returned
/// for the exchange that read them, while it and its download still run.
@Suite struct HandedOffWriteReturnTests {
    @Test func writtenBytesOfTheRunningExchangeCount() {
        #expect(HandedOffWriteReturn.decide(exchangeCurrent: true, downloadStopped: false, failed: false) == .counts)
    }

    @Test func aFailedWriteFailsTheRunningExchange() {
        #expect(HandedOffWriteReturn.decide(exchangeCurrent: true, downloadStopped: false, failed: true) == .fails)
    }

    @Test func aWriteThatOutlivedItsExchangeOrDownloadCountsForNothing() {
        for failed in [false, true] {
            #expect(HandedOffWriteReturn.decide(exchangeCurrent: false, downloadStopped: false, failed: failed) == .countsForNothing)
            #expect(HandedOffWriteReturn.decide(exchangeCurrent: true, downloadStopped: true, failed: failed) == .countsForNothing)
            #expect(HandedOffWriteReturn.decide(exchangeCurrent: false, downloadStopped: true, failed: failed) == .countsForNothing)
        }
    }
}

/// ``SplicedWritePlace``: a pipe's worth of a big body goes to the writer thread; a few kilobytes (a small
/// file's body that missed its head's read) are moved on the loop, where they cost less than a thread's wake-up.
@Suite struct SplicedWritePlaceTests {
    @Test func aBigBodysPipefulGoesToTheWriterThread() {
        for count in [SplicedWritePlace.handOffMinimum, 128 << 10, 256 << 10, 1 << 20] {
            #expect(SplicedWritePlace.decide(handsOff: true, count: count) == .writerThread, "\(count)")
        }
    }

    @Test func aFewKilobytesAreMovedOnTheLoop() {
        for count in [1, 4 << 10, 16 << 10, SplicedWritePlace.handOffMinimum - 1] {
            #expect(SplicedWritePlace.decide(handsOff: true, count: count) == .loop, "\(count)")
        }
    }

    @Test func withoutHandOffsEverythingIsMovedOnTheLoop() {
        for count in [1, SplicedWritePlace.handOffMinimum, 1 << 20] {
            #expect(SplicedWritePlace.decide(handsOff: false, count: count) == .loop, "\(count)")
        }
    }
}

/// ``HandedOffWriteOrder``: which steps of a download come after the writes handed off before them, which
/// go ahead (the loop never waits), and which refuse to overlap them.
@Suite struct HandedOffWriteOrderTests {
    typealias Step = HandedOffWriteOrder.Step

    @Test func withNoWriteUnderWayEveryStepGoesAhead() {
        for step in Step.allCases {
            #expect(HandedOffWriteOrder.decide(step, writesUnderway: false) == .now, "\(step)")
        }
    }

    /// Emptying the file, sizing it, pausing (which must keep their bytes) and the end come after them; the
    /// probe whose head empties the file is sent after them.
    @Test func whatEmptiesSizesOrGivesUpTheFileComesAfterTheWrites() {
        for step in [Step.sendProbe, .checkOutput, .pause, .end] {
            #expect(HandedOffWriteOrder.decide(step, writesUnderway: true) == .afterWrites, "\(step)")
        }
    }

    /// What changes nothing the writes touch, or writes the same bytes, goes ahead: a busy download always
    /// has writes under way, and its requests and reads must not wait for them.
    @Test func requestsReadsAndACancelGoAhead() {
        for step in [Step.sendOther, .openPartialFile, .writeFromLoop, .cancel] {
            #expect(HandedOffWriteOrder.decide(step, writesUnderway: true) == .now, "\(step)")
        }
    }

    /// Emptying the file answers a head on the spot and cannot wait: it refuses rather than empty the file
    /// under a write.
    @Test func emptyingTheFileUnderAWriteIsRefused() {
        #expect(HandedOffWriteOrder.decide(.prepareFile, writesUnderway: true) == .refuse)
    }
}

extension FaultTests {
    /// The disk fills while spliced bytes are written on the writer thread: the download fails with the
    /// write's error (no retry writes into a full disk), and the `.part` keeps the bytes written before —
    /// the resource's first bytes, nothing else.
    @Test(arguments: [true, false])
    func aDiskThatFillsMidBodyFailsTheSplicedDownloadAndKeepsWhatWasWritten(handsOff: Bool) async throws {
        try await withTinyFilesystem { mountPoint in
            // 512 KiB into a 1 MiB tmpfs: below two minimum segments and one checkpoint, so not preallocated
            // (the space is taken as the bytes come) and not journaled.
            let size = 512 << 10
            let small = MisbehavingServer.Resource.pattern(size: size, seed: 7)
            let server = try MisbehavingServer(resource: small)
            defer { server.stop() }
            let held = 128 << 10
            server.hold(afterBodyBytes: held)
            var options = options(connections: 1, path: .spliced)
            options.minimumSegment = 512 << 10
            options.retry = .none
            options.handsOffSplicedWrites = handsOff
            let log = CapturingLogHandler.Store()
            let client = try HaulClient(options: options, logger: CapturingLogHandler.logger(log))
            let task = try client.start(DownloadRequest(url: server.url("/f"), destination: .file(mountPoint + "/f")))
            let arrived = await eventually { task.currentProgress.bytesDone >= Int64(held) }
            #expect(arrived, "the held bytes were written (\(task.currentProgress.bytesDone))")
            // Fill the rest of the file system, then let the body go on.
            let filler = try FileHandle(forWritingTo: URL(fileURLWithPath: mountPoint + "/filler", isDirectory: false), creating: true)
            let chunk = Data(repeating: 0xA5, count: 16 << 10)
            while (try? filler.write(contentsOf: chunk)) != nil {}
            try? filler.close()
            server.release()
            await #expect {
                _ = try await task.value
            } throws: { error in
                guard case .disk(_, let systemError)? = (error as? HaulError)?.reason else { return false }
                return systemError.errno == ENOSPC
            }
            BodyPath.spliced.expectTaken(in: log)
            let part = Array(try Data(contentsOf: URL(fileURLWithPath: mountPoint + "/f.part")))
            #expect(part.count >= held, "the bytes written before the disk filled are kept (\(part.count))")
            #expect(part.count < size)
            #expect(sameBytes(part, small.bytes[..<part.count]), "the .part holds the resource's first bytes, nothing else")
        }
    }
}

private extension FileHandle {
    convenience init(forWritingTo url: URL, creating: Bool) throws {
        if creating { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        try self.init(forWritingTo: url)
    }
}

/// A handed-off write that hangs (here held by the test, as a dying disk or a stuck network file system
/// would hold it) stalls its own download and nothing else: another download on the same loop runs to its
/// end meanwhile. Its own pause, cancel and end still come only after the write has returned.
@Suite(.serialized) struct SplicedWriteHandOffTests {
    static let seed: UInt64 = 34
    /// A bound on hanging, not a timing assertion.
    static let deadline: Duration = .seconds(60)

    /// Holds the first handed-off write of a client on its writer thread until released (or a deadline, so
    /// that a failing test never keeps a thread for good); later writes pass.
    final class HeldWrite: Sendable {
        private let state = Mutex<(taken: Bool, holding: Bool, released: Bool)>((false, false, false))

        var hook: @Sendable () -> Void { { [self] in hold() } }

        private func hold() {
            let first = state.withLock { state -> Bool in
                guard !state.taken else { return false }
                state.taken = true
                state.holding = true
                return true
            }
            guard first else { return }
            let deadline = ContinuousClock.now + SplicedWriteHandOffTests.deadline
            while !state.withLock({ $0.released }), ContinuousClock.now < deadline { usleep(1000) }
            state.withLock { $0.holding = false }
        }

        func release() { state.withLock { $0.released = true } }
        var isHolding: Bool { state.withLock { $0.holding } }
    }

    let resource = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: SplicedWriteHandOffTests.seed)

    func options(_ held: HeldWrite) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1)
        options.splicesBodies = true
        options.handsOffSplicedWrites = true
        options.beforeEachHandedOffWrite = held.hook
        options.retry = .none
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(60))
        return options
    }

    /// Starts the download of `server`'s resource into `directory/name` and returns once its first handed-off
    /// write is held.
    func startHeld(_ client: HaulClient, _ server: MisbehavingServer, _ held: HeldWrite, into path: String) async throws -> DownloadTask {
        print("SplicedWriteHandOffTests: resource seed \(Self.seed)")
        let task = client.start(DownloadRequest(url: server.url("/a"), destination: .file(path)))
        let reached = await eventually { held.isHolding }
        try #require(reached, "the download's first handed-off write reached the writer")
        return task
    }

    /// Downloads the resource again into `path` on the same client (the same loop: one loop per client here),
    /// within the deadline, and checks the file.
    func downloadBeside(_ client: HaulClient, _ server: MisbehavingServer, into path: String, expecting: [UInt8]? = nil) async throws {
        let other = client.start(DownloadRequest(url: server.url("/b"), destination: .file(path)))
        let result = try #require(await outcomeWithin(Self.deadline, of: other), "the other download ended")
        #expect((try? result.get()) != nil, "the other download succeeded: \(result)")
        #expect(sameBytes(Array(try Data(contentsOf: URL(fileURLWithPath: path))), expecting ?? resource.bytes))
    }

    @Test func aHeldWriteStopsNeitherAnotherDownloadOnTheLoopNorWaitsLessForItsOwnEnd() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let held = HeldWrite()
        defer { held.release() }
        let client = try HaulClient(options: options(held))
        let task = try await startHeld(client, server, held, into: directory + "/a")
        try await downloadBeside(client, server, into: directory + "/b")
        #expect(held.isHolding, "the first download's write is still held")
        #expect(task.endResult == nil, "the first download has not ended while its write is held")
        held.release()
        let result = try #require(await outcomeWithin(Self.deadline, of: task))
        #expect((try? result.get()) != nil, "\(result)")
        #expect(sameBytes(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/a"))), resource.bytes))
    }

    /// The file changes on the server while a write of the old version is held: the download starts over,
    /// but its new probe — whose head empties the file — goes only once the write has returned (emptying the
    /// file under it is refused), and the file ends as the new version, none of the old write's bytes in it.
    @Test func aRestartSendsItsProbeOnlyAfterTheHeldWrite() async throws {
        let held = HeldWrite()
        defer { held.release() }
        // The second request (the second connection's range) finds the file changed — once the probe's
        // first write is held, so that the restart comes while it is under way.
        let server = try MisbehavingServer(resource: resource, script: MisbehavingServer.Script { request in
            guard request.index >= 1 else { return .normal }
            if request.index == 1 {
                let deadline = ContinuousClock.now + SplicedWriteHandOffTests.deadline
                while !held.isHolding, ContinuousClock.now < deadline { usleep(1000) }
            }
            return .otherVersion
        })
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(held)
        options.connections = 2
        options.minimumSegment = 1 << 20
        let log = CapturingLogHandler.Store()
        let client = try HaulClient(options: options, logger: CapturingLogHandler.logger(log))
        print("SplicedWriteHandOffTests: resource seed \(Self.seed)")
        let task = client.start(DownloadRequest(url: server.url("/a"), destination: .file(directory + "/a"), ifChangedOnServer: .restart))
        let restarted = await eventually { !log.with("the file changed on the server: starting over").isEmpty }
        try #require(restarted, "the change was seen (\(server.requests.count) requests)")
        #expect(held.isHolding, "the restart came while the old version's write was held")
        // A whole download beside it on the loop: a probe sent at the restart would have reached the server by its end.
        try await downloadBeside(client, server, into: directory + "/b", expecting: resource.otherVersion.bytes)
        #expect(held.isHolding)
        let requestsWhileHeld = server.requests.count { $0.target == "/a" }
        #expect(requestsWhileHeld == 2, "no new probe while the write is held (\(requestsWhileHeld) requests)")
        held.release()
        let result = try #require(await outcomeWithin(Self.deadline, of: task))
        #expect((try? result.get()) != nil, "\(result)")
        #expect(server.requests.count { $0.target == "/a" } > requestsWhileHeld)
        #expect(sameBytes(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/a"))), resource.otherVersion.bytes))
    }

    enum Stop: String, CaseIterable, Sendable { case pause, cancel }

    /// A pause or cancel asked for while the download's write is held completes only once the write has
    /// returned — the loop running other work meanwhile — and a pause keeps the held write's bytes.
    @Test(arguments: Stop.allCases)
    func aStopWaitsForTheHeldWrite(stop: Stop) async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let held = HeldWrite()
        defer { held.release() }
        let client = try HaulClient(options: options(held))
        let task = try await startHeld(client, server, held, into: directory + "/a")
        let stopped = Atomic<Bool>(false)
        let stopping = Task {
            switch stop {
            case .pause: try await task.pause()
            case .cancel: await task.cancel()
            }
            stopped.store(true, ordering: .releasing)
        }
        // Queued on the loop after the stop: once it has ended, the loop has taken the stop up.
        try await downloadBeside(client, server, into: directory + "/b")
        let stoppedEarly = stopped.load(ordering: .acquiring)
        #expect(!stoppedEarly, "the \(stop) completed while the write was still held")
        let beforeRelease = task.currentProgress.bytesDone
        held.release()
        try await stopping.value
        #expect(!held.isHolding)
        switch stop {
        case .pause:
            // The held write's bytes counted before the pause took them in; the .part holds them.
            let kept = task.currentProgress.bytesDone
            #expect(kept > beforeRelease, "the pause kept the held write's bytes (\(beforeRelease) → \(kept))")
            let part = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/a.part")))
            #expect(part.count >= Int(kept))
            #expect(sameBytes(part[..<Int(kept)], resource.bytes[..<Int(kept)]))
            try await task.resume()
            let result = try #require(await outcomeWithin(Self.deadline, of: task))
            #expect((try? result.get()) != nil, "\(result)")
            #expect(sameBytes(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/a"))), resource.bytes))
        case .cancel:
            let result = try #require(await outcomeWithin(Self.deadline, of: task))
            guard case .failure(let error) = result, case .cancelled = error.reason else {
                Issue.record("expected the cancel's end, got \(result)")
                return
            }
            #expect(!FileManager.default.fileExists(atPath: directory + "/a.part"))
            #expect(!FileManager.default.fileExists(atPath: directory + "/a"))
        }
    }
}
