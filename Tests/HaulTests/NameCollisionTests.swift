import Foundation
import Glibc
import HaulIO
import HaulTestSupport
import Testing
@testable import Haul

/// No server can name a working file of any download, and every download holds its final name for its
/// whole life: in one process (two tasks, two clients) and against a download of another process (seen only
/// through the lock on a `.part`, which a test takes itself here).
@Suite(.serialized) struct NameCollisionTests {
    /// The victim's bytes and the intruder's, different so that a mix shows.
    let victimBytes = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 41)
    let intruderBytes = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 42)

    func client() throws -> HaulClient {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10,
                                      checkpointBytes: 256 << 10, progressInterval: .milliseconds(20))
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(10), maxDelay: .milliseconds(100))
        // Longer than a test takes to get round to a held download, so its connections wait rather than retry.
        options.timeouts.idle = .seconds(120)
        return try HaulClient(options: options)
    }

    /// A download of the victim's bytes that stays running (past its first bytes) until `server.release()`.
    func heldVictim(_ client: HaulClient, _ destination: DownloadRequest.Destination, path: String = "/victim.bin")
        async throws -> (DownloadTask, MisbehavingServer) {
        let server = try MisbehavingServer(resource: victimBytes)
        server.hold(afterBodyBytes: 300 << 10)
        let task = client.start(DownloadRequest(url: server.url(path), destination: destination))
        let progress = await downloading(task, atLeast: 1)
        try #require(progress != nil, "the victim never started: \(task.currentProgress.phase)")
        return (task, server)
    }

    func outcome(_ task: DownloadTask) async -> Result<DownloadResult, HaulError> {
        await outcomeWithin(.seconds(120), of: task) ?? .failure(.unexpected("test deadline"))
    }

    func expectFile(_ path: String, holds resource: MisbehavingServer.Resource, _ what: String,
                    sourceLocation: SourceLocation = #_sourceLocation) {
        let contents = FileManager.default.contents(atPath: path).map { [UInt8]($0) }
        #expect(contents.map { sameBytes($0, resource.bytes) } == true,
                "\(what): \(path) holds \(contents.map { "\($0.count) other bytes" } ?? "nothing")", sourceLocation: sourceLocation)
    }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    // MARK: Server-chosen names

    /// The second defect of the issue, through the API: a server naming its file `a.bin.part` while `a.bin`
    /// downloads would, at its final rename, replace `a.bin`'s partial file — and `a.bin` would end as the
    /// intruder's bytes. Its name is changed to `a.bin_part` instead (with or without replacing allowed).
    @Test(arguments: [false, true])
    func aServerCannotNameAnotherDownloadsPartialFile(replacesExisting: Bool) async throws {
        let directory = try TemporaryDirectory()
        let client = try client()
        let (victim, victimServer) = try await heldVictim(client, .directory(directory.path), path: "/a.bin")
        defer { victimServer.stop() }
        let intruderServer = try MisbehavingServer(resource: intruderBytes, script: .always(.attachment(filename: "a.bin.part")))
        defer { intruderServer.stop() }

        let intruder = try await outcome(client.start(DownloadRequest(
            url: intruderServer.url("/x"), destination: .directory(directory.path), replacesExisting: replacesExisting))).get()
        #expect(intruder.path == directory.file("a.bin_part"))
        expectFile(directory.file("a.bin_part"), holds: intruderBytes, "the intruder")

        victimServer.release()
        let saved = try await outcome(victim).get()
        #expect(saved.path == directory.file("a.bin"))
        expectFile(directory.file("a.bin"), holds: victimBytes, "the victim")
        #expect(entries(directory.path) == ["a.bin", "a.bin_part"])
    }

    /// The first defect: `victim.bin` is an interrupted download (paused: its `.part` and journal wait for a
    /// resume); a server naming its file `victim.bin.part`, replacing allowed, must not replace that `.part`.
    @Test func anInterruptedDownloadsPartialFileSurvivesAServerNamingIt() async throws {
        let directory = try TemporaryDirectory()
        let client = try client()
        let (victim, victimServer) = try await heldVictim(client, .directory(directory.path))
        defer { victimServer.stop() }
        try await victim.pause()
        #expect(FileManager.default.fileExists(atPath: directory.file("victim.bin.part.haul")))

        let intruderServer = try MisbehavingServer(resource: intruderBytes, script: .always(.attachment(filename: "victim.bin.part")))
        defer { intruderServer.stop() }
        let intruder = try await outcome(client.start(DownloadRequest(
            url: intruderServer.url("/x"), destination: .directory(directory.path), replacesExisting: true))).get()
        #expect(intruder.path == directory.file("victim.bin_part"))

        victimServer.release()
        try await victim.resume()
        let saved = try await outcome(victim).get()
        expectFile(saved.path, holds: victimBytes, "the resumed victim")
        #expect(entries(directory.path) == ["victim.bin", "victim.bin_part"])
    }

    /// Two downloads of one process that get the same name — one from the URL, one from the server's
    /// `Content-Disposition` — and the second is told, in words about this process, not its own pid.
    @Test func aSecondDownloadOfTheSameNameInOneProcessIsRefusedClearly() async throws {
        let directory = try TemporaryDirectory()
        let client = try client()
        let (victim, victimServer) = try await heldVictim(client, .directory(directory.path), path: "/same.bin")
        defer { victimServer.stop() }
        let otherServer = try MisbehavingServer(resource: intruderBytes, script: .always(.attachment(filename: "same.bin")))
        defer { otherServer.stop() }
        // Another client of the same process: the names are the process's, not one client's.
        let otherClient = try self.client()
        let other = await outcome(otherClient.start(DownloadRequest(
            url: otherServer.url("/other"), destination: .directory(directory.path), replacesExisting: true)))
        guard case .failure(let error) = other, case .destinationBusy(let path, let holder) = error.reason else {
            Issue.record("expected destinationBusy, got \(other)")
            return
        }
        #expect(path == directory.file("same.bin"))
        #expect(holder == getpid())
        #expect(error.description.contains("another download of this process"), "\(error)")
        #expect(!error.description.contains("process \(getpid())"), "\(error)")

        victimServer.release()
        expectFile(try await outcome(victim).get().path, holds: victimBytes, "the first download")
        #expect(entries(directory.path) == ["same.bin"])
    }

    // MARK: Names given by the caller

    /// A caller may name any file, but not one a live download's name makes a working file of (or one
    /// whose working file that download would produce): `x` and `x.part`, either way round.
    @Test(arguments: [(first: "x", second: "x.part"), (first: "x.part", second: "x"),
                      (first: "x", second: "x.part.haul"), (first: "x.part.haul", second: "x")])
    func namesDifferingByAWorkingSuffixCollideWhileOneIsLive(first: String, second: String) async throws {
        let directory = try TemporaryDirectory()
        let client = try client()
        let (live, server) = try await heldVictim(client, .file(directory.file(first)))
        defer { server.stop() }
        let otherServer = try MisbehavingServer(resource: intruderBytes)
        defer { otherServer.stop() }
        let other = await outcome(client.start(DownloadRequest(
            url: otherServer.url("/other"), destination: .file(directory.file(second)), replacesExisting: true)))
        guard case .failure(let error) = other, case .destinationBusy(let path, _) = error.reason else {
            Issue.record("\(second) while \(first) downloads: expected destinationBusy, got \(other)")
            return
        }
        #expect(path == directory.file(first))

        server.release()
        expectFile(try await outcome(live).get().path, holds: victimBytes, "\(first), the live download")
        #expect(entries(directory.path) == [first])
    }

    /// Replacing is for finished files: never the `.part` or journal of an interrupted download.
    @Test(arguments: ["x.part", "x.part.haul"])
    func replacingNeverTakesAnInterruptedDownloadsWorkingFile(name: String) async throws {
        let directory = try TemporaryDirectory()
        try Data("partial".utf8).write(to: URL(fileURLWithPath: directory.file("x.part")))
        try Data("journal".utf8).write(to: URL(fileURLWithPath: directory.file("x.part.haul")))
        let server = try MisbehavingServer(resource: intruderBytes)
        defer { server.stop() }
        let result = await outcome(try client().start(DownloadRequest(
            url: server.url("/f"), destination: .file(directory.file(name)), replacesExisting: true)))
        guard case .failure(let error) = result, case .invalidDestination(let detail) = error.reason else {
            Issue.record("expected invalidDestination, got \(result)")
            return
        }
        #expect(detail.contains("interrupted download of \(directory.file("x"))"), "\(detail)")
        #expect(String(decoding: FileManager.default.contents(atPath: directory.file("x.part")) ?? Data(), as: UTF8.self) == "partial")
        #expect(entries(directory.path) == ["x.part", "x.part.haul"])
    }

    /// Another process's download shows only through its `.part` lock: taken here by the test itself.
    @Test func aLiveDownloadOfAnotherProcessIsSeenThroughItsLock() async throws {
        let directory = try TemporaryDirectory()
        let server = try MisbehavingServer(resource: intruderBytes)
        defer { server.stop() }
        let client = try client()

        // `x` downloads elsewhere: `x.part` is locked; `x.part` may not be a destination.
        let lock = try OutputFile.openForDownload(directory.file("x.part")).file
        let onWorking = await outcome(client.start(DownloadRequest(
            url: server.url("/f"), destination: .file(directory.file("x.part")), replacesExisting: true)))
        guard case .failure(let error) = onWorking, case .destinationBusy(let path, _) = error.reason else {
            Issue.record("expected destinationBusy for x.part, got \(onWorking)")
            return
        }
        #expect(path == directory.file("x"))
        _ = lock

        // `y.part` downloads elsewhere: its `.part` is `y.part.part`, and it holds `y.part` locked (created
        // empty, as its claim does). `y` may not start, since that download's final rename would replace
        // `y`'s partial file; what refuses it is the lock on `y.part`, without a look at `y.part.part`.
        let placeholder = try OutputFile.openForDownload(directory.file("y.part")).file
        let producer = try OutputFile.openForDownload(directory.file("y.part.part")).file
        let onFinal = await outcome(client.start(DownloadRequest(url: server.url("/f"), destination: .file(directory.file("y")))))
        guard case .failure(let second) = onFinal, case .destinationBusy(let busy, let holder) = second.reason else {
            Issue.record("expected destinationBusy for y, got \(onFinal)")
            return
        }
        #expect(busy == directory.file("y"))
        #expect(holder == getpid(), "the lock's holder is named")
        _ = (placeholder, producer)
        #expect(entries(directory.path) == ["x.part", "y.part", "y.part.part"])
    }

    /// The other side of the lock above: a download whose final name is a working name of `v` holds `v.part`
    /// locked for its whole claim — creating it when absent — so that a download of `v` in another process
    /// is refused; the placeholder goes when the claim does, unless the download's own final rename replaced it.
    @Test func aClaimOfAWorkingNameHoldsTheOtherNamesPartialFileLocked() throws {
        let directory = try TemporaryDirectory()
        let owner = DestinationClaims.newOwner()
        try DestinationClaims.claim(directory.file("v.part.haul"), owner: owner)
        #expect(OutputFile.isLockedForDownload(directory.file("v.part")))
        #expect(entries(directory.path) == ["v.part"])
        #expect(DestinationClaims.isCreatedPlaceholder(directory.file("v.part")))
        // What another process's download of `v` would do first: open and lock `v.part`.
        #expect(throws: SystemError.self) { try OutputFile.openForDownload(directory.file("v.part")) }
        DestinationClaims.release(owner: owner)
        #expect(entries(directory.path) == [])
        #expect(!DestinationClaims.isCreatedPlaceholder(directory.file("v.part")))

        // A `v.part` that was there is locked and left as it was.
        try Data("finished".utf8).write(to: URL(fileURLWithPath: directory.file("v.part")))
        try DestinationClaims.claim(directory.file("v.part"), owner: owner)
        #expect(OutputFile.isLockedForDownload(directory.file("v.part")))
        #expect(!DestinationClaims.isCreatedPlaceholder(directory.file("v.part")))
        DestinationClaims.release(owner: owner)
        #expect(String(decoding: FileManager.default.contents(atPath: directory.file("v.part")) ?? Data(), as: UTF8.self) == "finished")

        // Held by someone else: refused, nothing created.
        let other = try OutputFile.openForDownload(directory.file("u.part")).file
        #expect(throws: HaulError.self) { try DestinationClaims.claim(directory.file("u.part.haul.tmp"), owner: owner) }
        _ = other
        #expect(entries(directory.path) == ["u.part", "v.part"])
    }

    /// A destination named `w.part` is its own placeholder: it downloads into `w.part.part` and its final
    /// rename replaces the placeholder, which is then not removed; one that fails before its first byte leaves
    /// nothing, placeholder included; and one refused because `w.part` is a finished file keeps that file.
    @Test func aDestinationThatIsAWorkingNameEndsAsItsFileOrNothing() async throws {
        let directory = try TemporaryDirectory()
        let client = try client()
        let server = try MisbehavingServer(resource: victimBytes)
        defer { server.stop() }
        let saved = try await outcome(client.start(DownloadRequest(url: server.url("/f"), destination: .file(directory.file("w.part"))))).get()
        expectFile(saved.path, holds: victimBytes, "a download named w.part")
        #expect(entries(directory.path) == ["w.part"])

        // Refused either way: as an existing file, or as busy while the finished download's descriptor (its
        // `.part` until the rename, `w.part` now) still holds its lock for a moment.
        let refused = await outcome(client.start(DownloadRequest(url: server.url("/f"), destination: .file(directory.file("w.part")))))
        switch refused {
        case .failure(let error) where error.reason.isDestinationExistsOrBusy: break
        default: Issue.record("expected destinationExists or destinationBusy, got \(refused)")
        }
        expectFile(directory.file("w.part"), holds: victimBytes, "the finished w.part, refused to replace")

        let missing = try MisbehavingServer(resource: victimBytes, script: .always(.status(404)))
        defer { missing.stop() }
        let failed = await outcome(client.start(DownloadRequest(url: missing.url("/f"), destination: .file(directory.file("z.part")))))
        guard case .failure(let notFound) = failed, case .httpStatus = notFound.reason else {
            Issue.record("expected a 404, got \(failed)")
            return
        }
        #expect(entries(directory.path) == ["w.part"])
    }

    /// A name is free again once its download has ended, whichever way it ended.
    @Test func aNameIsFreeAgainAfterItsDownloadEnds() async throws {
        let directory = try TemporaryDirectory()
        let client = try client()
        let missing = try MisbehavingServer(resource: victimBytes, script: .always(.status(404)))
        defer { missing.stop() }
        let failed = await outcome(client.start(DownloadRequest(url: missing.url("/f"), destination: .file(directory.file("f")))))
        guard case .failure(let error) = failed, case .httpStatus = error.reason else {
            Issue.record("expected a 404, got \(failed)")
            return
        }
        let server = try MisbehavingServer(resource: victimBytes)
        defer { server.stop() }
        let first = try await outcome(client.start(DownloadRequest(url: server.url("/f"), destination: .file(directory.file("f"))))).get()
        expectFile(first.path, holds: victimBytes, "after a failed download of the same name")
        let again = try await outcome(client.start(DownloadRequest(
            url: server.url("/f"), destination: .file(directory.file("f")), replacesExisting: true))).get()
        expectFile(again.path, holds: victimBytes, "replacing a finished download")
    }
}

private extension HaulError.Reason {
    var isDestinationExistsOrBusy: Bool {
        switch self {
        case .destinationExists, .destinationBusy: true
        default: false
        }
    }
}
