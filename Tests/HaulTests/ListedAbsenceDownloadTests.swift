import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulIO

/// A download told that its destination's directory held neither `NAME` nor `NAME.part` when its caller
/// listed it (``DownloadRequest/listedAbsentPath``) does not look for them — and still never replaces,
/// overwrites or loses a file that appeared since: not a destination (the download fails as "destination
/// exists", its bytes kept as `NAME.part`), not another download's `.part` (left alone), and a resume after a
/// pause looks for its own `.part` again.
@Suite(.serialized) struct ListedAbsenceDownloadTests {
    let resource = MisbehavingServer.Resource.pattern(size: 512 << 10, seed: 73)

    func options(synchronizes: Bool = false) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: synchronizes, connections: 2, minimumSegment: 64 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(10), maxDelay: .milliseconds(100))
        options.timeouts.idle = .seconds(120)
        options.lowSpeedLimit = nil
        return options
    }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

    func request(_ server: MisbehavingServer, _ destination: DownloadRequest.Destination, listed: String?) -> DownloadRequest {
        var request = DownloadRequest(url: server.url("/u.bin"), destination: destination)
        request.listedAbsentPath = listed
        return request
    }

    /// The destination appeared after the listing (another program wrote it): the told download does not
    /// look, fetches, and its `linkat` refuses the name — "destination exists", the other file untouched, the
    /// bytes kept as `NAME.part`. Untold, the same download looks and refuses before fetching anything.
    /// For a file and a directory destination, with and without syncing (the group commit names the file then).
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func aDestinationThatAppearedAfterTheListingIsNeverReplaced(synchronizes: Bool, intoDirectory: Bool) async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/u.bin"
        let destination: DownloadRequest.Destination = intoDirectory ? .directory(directory) : .file(path)
        FileManager.default.createFile(atPath: path, contents: Data("someone else's".utf8))
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }

        let (untold, _) = try await runToEnd(request(server, destination, listed: nil), options: options(synchronizes: synchronizes), within: .seconds(120))
        guard case .failure(let refusal) = untold, case .destinationExists = refusal.reason else {
            Issue.record("expected destination exists, got \(untold)")
            return
        }
        #expect(entries(directory) == ["u.bin"], "refused before anything was kept")

        let (told, _) = try await runToEnd(request(server, destination, listed: path), options: options(synchronizes: synchronizes), within: .seconds(120))
        guard case .failure(let error) = told, case .destinationExists(let existing) = error.reason else {
            Issue.record("expected destination exists, got \(told)")
            return
        }
        #expect(existing == path)
        #expect(contents(path) == Array("someone else's".utf8), "never replaced")
        #expect(entries(directory) == ["u.bin", "u.bin.part"])
        #expect(contents(path + ".part").map { sameBytes($0, resource.bytes) } == true, "the downloaded bytes are kept")
    }

    /// Another download's `.part` appeared after the listing, locked (another `haul` writing it): the told
    /// download never opens it — it writes a file of its own and names it `NAME`, and the other `.part` keeps
    /// its bytes and its lock. (That other download then finds `NAME` taken when it finishes, and keeps its
    /// `.part`: ``UnnamedWorkingFileTests``.) Untold, the same download looks and finds it busy.
    @Test func anotherDownloadsPartThatAppearedAfterTheListingIsLeftAlone() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/u.bin"
        FileManager.default.createFile(atPath: path + ".part", contents: Data("another download's".utf8))
        let other = try OutputFile.openForDownload(path + ".part").file
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }

        let (untold, _) = try await runToEnd(request(server, .directory(directory), listed: nil), options: options(), within: .seconds(120))
        guard case .failure(let busy) = untold, case .destinationBusy = busy.reason else {
            Issue.record("expected destination busy, got \(untold)")
            return
        }

        let result = try await HaulClient(options: options()).download(request(server, .directory(directory), listed: path))
        #expect(result.path == path)
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
        #expect(contents(path + ".part") == Array("another download's".utf8), "the other .part is not written")
        #expect(OutputFile.isLockedForDownload(path + ".part"), "nor unlocked")
        withExtendedLifetime(other) {}
    }

    /// The server names the file otherwise (`Content-Disposition`): the listing says nothing about that name,
    /// which is looked for as before — a file there is refused before a byte is kept.
    @Test func aServerChosenNameIsLookedForAsBefore() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        FileManager.default.createFile(atPath: directory + "/named.bin", contents: Data("there".utf8))
        let server = try MisbehavingServer(resource: resource, script: .always(.attachment(filename: "named.bin")))
        defer { server.stop() }
        let (outcome, _) = try await runToEnd(request(server, .directory(directory), listed: directory + "/u.bin"),
                                              options: options(), within: .seconds(120))
        guard case .failure(let error) = outcome, case .destinationExists(let existing) = error.reason else {
            Issue.record("expected destination exists, got \(outcome)")
            return
        }
        #expect(existing == directory + "/named.bin")
        #expect(entries(directory) == ["named.bin"], "refused before anything was kept")
        #expect(contents(directory + "/named.bin") == Array("there".utf8))
    }

    /// Paused mid-body, a told download keeps `NAME.part` and its journal; the resume is prepared without the
    /// listing (which predates that `.part`), finds them and continues, leaving nothing behind.
    @Test func aResumeAfterAPauseLooksForItsOwnPart() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/u.bin"
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        server.hold(afterBodyBytes: 128 << 10)
        let task = try HaulClient(options: options()).start(request(server, .directory(directory), listed: path))
        _ = try #require(await downloading(task, atLeast: 64 << 10), "the download never started: \(task.currentProgress.phase)")
        try await task.pause()
        #expect(entries(directory) == ["u.bin.part", "u.bin.part.haul"])
        let requestsBeforeResume = server.requests.count
        server.release()
        try await task.resume()
        _ = try await #require(outcomeWithin(.seconds(120), of: task)).get()
        #expect(entries(directory) == ["u.bin"], "continued in its .part, not started over beside it")
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
        // A directory download asks for its name first (the probe), then continues the journal's gaps.
        let continued = server.requests.dropFirst(requestsBeforeResume + 1)
        #expect(!continued.isEmpty && continued.allSatisfy { $0.header("If-Range") != nil && $0.rangeHeader?.hasPrefix("bytes=0-") == false },
                "the resume continued from the journal: \(continued.map { "\($0.rangeHeader ?? "-") \($0.header("If-Range") ?? "-")" })")
    }
}
