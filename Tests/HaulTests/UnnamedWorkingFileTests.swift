import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulIO

/// A fresh download writes into a file without a name: no `NAME.part` is ever visible, the finish names it
/// once, a stop that keeps bytes gives them their `.part` name, and a destination someone else created
/// meanwhile is never replaced (exit 9's error, the bytes kept as `.part`).
@Suite(.serialized) struct UnnamedWorkingFileTests {
    let resource = MisbehavingServer.Resource.pattern(size: 512 << 10, seed: 71)
    /// The test's own directory: Swift Testing makes a new suite value for each test (and each argument), and
    /// the directory goes with it.
    let scratch: TemporaryDirectory
    /// The directory's path.
    var directory: String { scratch.path }
    /// The destination every test downloads to, `u.bin` in ``directory``.
    var path: String { scratch.file("u.bin") }

    init() throws {
        scratch = try TemporaryDirectory(prefix: "haul-unnamed")
    }

    func options(synchronizes: Bool = false) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: synchronizes, connections: 2, minimumSegment: 64 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(10), maxDelay: .milliseconds(100))
        // A held download's connections wait for the test rather than time out.
        options.timeouts.idle = .seconds(120)
        options.lowSpeedLimit = nil
        return options
    }

    /// The names in ``directory``, sorted.
    func entries() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }

    /// Starts a download of `resource` into `destination` that stays running (past its first 128 KiB) until
    /// `server.release()`, and returns once it has written `bytes`.
    func held(_ destination: DownloadRequest.Destination, options: DownloadOptions,
              atLeast bytes: Int64 = 1) async throws -> (DownloadTask, MisbehavingServer) {
        let server = try MisbehavingServer(resource: resource)
        server.hold(afterBodyBytes: 128 << 10)
        let task = try HaulClient(options: options).start(DownloadRequest(url: server.url("/u.bin"), destination: destination))
        try #require(await downloading(task, atLeast: bytes) != nil,
                     "the download never wrote \(bytes) bytes: \(task.currentProgress.phase), \(task.currentProgress.bytesDone)")
        return (task, server)
    }

    @Test(arguments: [false, true])
    func aFreshDownloadShowsNoPartAndEndsUnderItsName(synchronizes: Bool) async throws {
        for destination in [DownloadRequest.Destination.file(path), .directory(directory)] {
            try? FileManager.default.removeItem(atPath: path)
            let (task, server) = try await held(destination, options: options(synchronizes: synchronizes))
            defer { server.stop() }
            #expect(entries().isEmpty, "nothing has a name while the body arrives: \(entries())")
            server.release()
            let result = try await #require(outcomeWithin(.seconds(120), of: task)).get()
            #expect(result.path == path)
            #expect(entries() == ["u.bin"])
            #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
            // The server's validators went with the file before it had a name.
            #expect(StoredValidators.read(path: path).entityTag != nil)
        }
    }

    /// A failure after the first body byte keeps the bytes as `NAME.part`, as a named `.part` would have kept
    /// them; a rerun ends with the right file and no working file left.
    @Test func aFailureMidBodyKeepsThePartAndARerunFinishes() async throws {
        var options = options()
        options.retry = .none
        let (task, server) = try await held(.file(path), options: options)
        server.stop()   // cuts the body mid-way
        let outcome = try #require(await outcomeWithin(.seconds(120), of: task))
        guard case .failure = outcome else { Issue.record("a cut body cannot succeed: \(outcome)"); return }
        #expect(entries() == ["u.bin.part"], "the written bytes are kept")

        let again = try MisbehavingServer(resource: resource)
        defer { again.stop() }
        _ = try await HaulClient(options: self.options()).download(DownloadRequest(url: again.url("/u.bin"), destination: .file(path)))
        #expect(entries() == ["u.bin"])
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
    }

    /// A pause keeps `NAME.part` and its journal; the resume fetches only the rest.
    @Test func aPauseMidBodyNamesThePartWithAJournalAndResumes() async throws {
        let (task, server) = try await held(.file(path), options: options(), atLeast: 64 << 10)
        defer { server.stop() }
        try await task.pause()
        #expect(entries() == ["u.bin.part", "u.bin.part.haul"])
        server.release()
        try await task.resume()
        _ = try await #require(outcomeWithin(.seconds(120), of: task)).get()
        #expect(entries() == ["u.bin"])
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
    }

    /// A pause whose `.part` name another program took meanwhile cannot keep a journal; it still ends, and
    /// the other file is left alone.
    @Test func aPauseWhosePartNameIsTakenStillEnds() async throws {
        let (task, server) = try await held(.file(path), options: options(), atLeast: 64 << 10)
        defer { server.stop() }
        FileManager.default.createFile(atPath: path + ".part", contents: Data("another's".utf8))
        try await task.pause()
        #expect(task.currentProgress.phase == .paused)
        #expect(contents(path + ".part") == Array("another's".utf8))
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"))
    }

    /// Another program creates the destination while the download runs: it is not replaced; the download
    /// fails as "destination exists" and keeps its complete bytes as `NAME.part`. For a file without a name
    /// (`linkat`), and for a named `.part` (`renameat2(RENAME_NOREPLACE)`; a `.part` from an earlier run
    /// without a journal makes the download take it), with and without syncing (the group commit).
    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func aDestinationCreatedMeanwhileIsNeverReplaced(synchronizes: Bool, named: Bool) async throws {
        if named { FileManager.default.createFile(atPath: path + ".part", contents: Data()) }
        let (task, server) = try await held(.file(path), options: options(synchronizes: synchronizes))
        defer { server.stop() }
        #expect(entries() == (named ? ["u.bin.part"] : []))
        FileManager.default.createFile(atPath: path, contents: Data("someone else's".utf8))
        server.release()
        let outcome = try #require(await outcomeWithin(.seconds(120), of: task))
        guard case .failure(let error) = outcome, case .destinationExists(let existing) = error.reason else {
            Issue.record("expected destination exists, got \(outcome)")
            return
        }
        #expect(existing == path)
        #expect(contents(path) == Array("someone else's".utf8))
        #expect(entries() == ["u.bin", "u.bin.part"])
        #expect(contents(path + ".part").map { sameBytes($0, resource.bytes) } == true, "the downloaded bytes are kept")
    }

    /// A checksum that does not match fails the finish; the bytes stay as `NAME.part`, as they always have.
    @Test(arguments: [false, true])
    func aChecksumMismatchKeepsTheBytesAsPart(synchronizes: Bool) async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let request = DownloadRequest(url: server.url("/u.bin"), destination: .file(path),
                                      checksum: try Checksum("sha256=" + String(repeating: "0", count: 64)))
        let (outcome, _) = try await runToEnd(request, options: options(synchronizes: synchronizes), within: .seconds(120))
        guard case .failure(let error) = outcome, case .checksumMismatch = error.reason else {
            Issue.record("expected a checksum mismatch, got \(outcome)")
            return
        }
        #expect(entries() == ["u.bin.part"])
        #expect(contents(path + ".part").map { sameBytes($0, resource.bytes) } == true)
    }

    /// With `--allow-overwrite` the named path is taken, as before: a file there is replaced.
    @Test func anAllowedOverwriteStillReplaces() async throws {
        FileManager.default.createFile(atPath: path, contents: Data("old".utf8))
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        _ = try await HaulClient(options: options()).download(
            DownloadRequest(url: server.url("/u.bin"), destination: .file(path), replacesExisting: true))
        #expect(entries() == ["u.bin"])
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
    }
}
