import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport

/// The `haul` binary against servers that name their files after another download's working files, and
/// against itself: two downloads of one run that get the same name.
@Suite(.serialized) struct NameCollisionCLITests {
    let victimBytes = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 51)
    /// Another length than the victim's, so that its file is told apart by its size alone.
    let intruderBytes = MisbehavingServer.Resource.pattern(size: 3 << 20, seed: 52)

    func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Runs `haul` (`--no-sync`, as the other CLI tests) and calls `onLine` with each line it writes to
    /// stderr as it comes, so that a test can act on what a run says while it still runs. A run that has not
    /// ended after `deadline` seconds (a test whose condition never came) is killed: the deadline decides only
    /// how long a broken test takes to fail.
    func haul(_ arguments: [String], deadline: Double = 120,
              onLine: @escaping @Sendable (String) -> Void) throws -> (status: Int32, errorText: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        process.arguments = ["--no-sync"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let ended = EndFlag()
        DispatchQueue.global().asyncAfter(deadline: .now() + deadline) {
            // Never a pid reused after the run ended: the flag is set, under the lock, once it was reaped.
            ended.state.withLock { if !$0 { kill(pid, SIGKILL) } }
        }
        defer { ended.state.withLock { $0 = true } }
        var text = ""
        var pending = Data()
        let handle = errors.fileHandleForReading
        while case let chunk = handle.availableData, !chunk.isEmpty {
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                text += line + "\n"
                onLine(line)
            }
        }
        process.waitUntilExit()
        return (process.terminationStatus, text + String(decoding: pending, as: UTF8.self))
    }

    /// A server of the victim's bytes that holds the body after its first 256 KiB until ``MisbehavingServer/release()``.
    func heldVictimServer() throws -> MisbehavingServer {
        let server = try MisbehavingServer(resource: victimBytes)
        server.hold(afterBodyBytes: 256 << 10)
        return server
    }

    /// Starts `haul ARGUMENTS` in the background (standard output discarded, standard error into `errors` or
    /// discarded) and returns once `server` has sent body bytes: the run has opened its file and is held there.
    /// A run that never gets there is stopped, and the test fails.
    func startHeldRun(_ arguments: [String], server: MisbehavingServer, errors: Pipe? = nil) throws -> Process {
        let run = Process()
        run.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        run.arguments = arguments
        run.standardError = errors ?? FileHandle.nullDevice
        run.standardOutput = FileHandle.nullDevice
        try run.run()
        do {
            try #require(poll(within: 60) { server.bodyBytesSent > 0 }, "the run never started: haul \(arguments)")
        } catch {
            stop(run)
            throw error
        }
        return run
    }

    /// Ends a background run that is still running (a test that failed before it ended).
    func stop(_ run: Process) {
        if run.isRunning { run.terminate(); run.waitUntilExit() }
    }

    /// `-Z -d DIR URL1 URL2`, URL2's server naming its file `a.bin.part` while `a.bin` (URL1) downloads: both
    /// used to say "saved", and `a.bin` held URL2's bytes. URL2's file is `a.bin_part` now.
    @Test func parallelDownloadsCannotNameEachOthersWorkingFiles() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-names")
        let victim = try heldVictimServer()
        defer { victim.stop() }
        let intruder = try MisbehavingServer(resource: intruderBytes, script: .always(.attachment(filename: "a.bin.part")))
        defer { intruder.stop() }
        // `a.bin` is held until the intruder's download has ended one way or the other (its line says so).
        let run = try haul(["-Z", "-d", directory.path, victim.url("/a.bin"), intruder.url("/x")]) { line in
            if line.contains("saved") || line.contains("exists") || line.contains("being written") { victim.release() }
        }
        victim.release()
        #expect(run.status == 0, "\(run.errorText)")
        #expect(contents(directory.file("a.bin")).map { sameBytes($0, victimBytes.bytes) } == true, "a.bin is not URL1's: \(run.errorText)")
        #expect(contents(directory.file("a.bin_part")).map { sameBytes($0, intruderBytes.bytes) } == true, "\(run.errorText)")
        #expect(entries(directory.path) == ["a.bin", "a.bin_part"])
    }

    /// `--allow-overwrite` replaces finished files: an interrupted download's `.part`, named by a server,
    /// is not one, and the interrupted download resumes into the right bytes.
    @Test func allowOverwriteNeverReplacesAnInterruptedDownloadsPartialFile() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-names")
        let victim = try MisbehavingServer(resource: victimBytes, script: .always(.closeMidBody(afterBytes: 512 << 10)))
        defer { victim.stop() }
        let interrupted = try haul(["--retries", "0", "-c", "1", "--checkpoint-bytes", "64K", "-d", directory.path, victim.url("/victim.bin")]) { _ in }
        #expect(interrupted.status != 0)
        try #require(FileManager.default.fileExists(atPath: directory.file("victim.bin.part.haul")), "\(interrupted.errorText)")

        let intruder = try MisbehavingServer(resource: intruderBytes, script: .always(.attachment(filename: "victim.bin.part")))
        defer { intruder.stop() }
        let replacing = try haul(["--allow-overwrite", "-d", directory.path, intruder.url("/x")]) { _ in }
        #expect(replacing.status == 0, "\(replacing.errorText)")
        #expect(contents(directory.file("victim.bin_part")).map { sameBytes($0, intruderBytes.bytes) } == true)

        victim.setScript(.normal)
        let resumed = try haul(["-d", directory.path, victim.url("/victim.bin")]) { _ in }
        #expect(resumed.status == 0, "\(resumed.errorText)")
        #expect(contents(directory.file("victim.bin")).map { sameBytes($0, victimBytes.bytes) } == true, "the resume mixed two files")
        #expect(entries(directory.path) == ["victim.bin", "victim.bin_part"])
    }

    /// `-Z URL URL`: the second download of one name is refused in words about this run, not with haul's
    /// own pid as if another program held the file.
    @Test func theSameURLTwiceSaysAnotherDownloadOfThisRun() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-names")
        let server = try heldVictimServer()
        defer { server.stop() }
        let run = try haul(["-Z", "-d", directory.path, server.url("/same.bin"), server.url("/same.bin")]) { line in
            if line.contains("being written") { server.release() }
        }
        server.release()
        #expect(run.status == 9, "\(run.errorText)")
        #expect(run.errorText.contains("same.bin is being written by another download of this process"), "\(run.errorText)")
        #expect(!run.errorText.contains("(process "), "\(run.errorText)")
        #expect(contents(directory.file("same.bin")).map { sameBytes($0, victimBytes.bytes) } == true)
        #expect(entries(directory.path) == ["same.bin"])
    }

    /// Across processes: while one `haul` downloads `x`, a second may not name its file `x.part`, even with
    /// `--allow-overwrite` — its final rename would replace the first one's partial file.
    @Test func aSecondHaulCannotNameTheFirstOnesPartialFile() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-names")
        let server = try heldVictimServer()
        defer { server.stop() }
        let other = try MisbehavingServer(resource: intruderBytes)
        defer { other.stop() }
        // A file larger than one checkpoint window has its `.part` (and journal) from its first response: a file
        // without a name (below) has no `.part` to protect. Body bytes flow only once the first run has opened
        // and locked `x.part`.
        let first = try startHeldRun(["--no-sync", "--checkpoint-bytes", "1M", "-o", directory.file("x"), server.url("/x")], server: server)
        defer { stop(first) }

        let second = try haul(["--allow-overwrite", "-o", directory.file("x.part"), other.url("/y")]) { _ in }
        server.release()
        first.waitUntilExit()
        #expect(second.status == 9, "\(second.errorText)")
        #expect(second.errorText.contains("\(directory.file("x")) is being written by another download"), "\(second.errorText)")
        #expect(first.terminationStatus == 0)
        #expect(contents(directory.file("x")).map { sameBytes($0, victimBytes.bytes) } == true, "x is not the first run's")
        #expect(entries(directory.path) == ["x"])
    }

    /// While one `haul` writes `x` into a file without a name, nothing of it is on disk to protect: a second
    /// `haul` may finish `x.part`, and the first still ends with its own complete `x`.
    @Test func aSecondHaulMayNameXPartWhileTheFirstHasNoName() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-names")
        let server = try heldVictimServer()
        defer { server.stop() }
        let other = try MisbehavingServer(resource: intruderBytes)
        defer { other.stop() }
        let first = try startHeldRun(["--no-sync", "-o", directory.file("x"), server.url("/x")], server: server)
        defer { stop(first) }
        #expect(entries(directory.path).isEmpty, "the first run's file has no name")

        let second = try haul(["-o", directory.file("x.part"), other.url("/y")]) { _ in }
        server.release()
        first.waitUntilExit()
        #expect(second.status == 0, "\(second.errorText)")
        #expect(first.terminationStatus == 0)
        #expect(contents(directory.file("x")).map { sameBytes($0, victimBytes.bytes) } == true, "x is the first run's")
        #expect(contents(directory.file("x.part")).map { sameBytes($0, intruderBytes.bytes) } == true, "x.part is the second run's")
        #expect(entries(directory.path) == ["x", "x.part"])
    }

    /// Another program creates `x` while `haul` downloads it: exit 9, `x` untouched, the bytes kept as `x.part`
    /// (with `--no-sync` and durable).
    @Test(arguments: [["--no-sync"], []])
    func aDestinationCreatedMeanwhileIsExit9AndTheBytesAreKept(mode: [String]) throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-names")
        let server = try heldVictimServer()
        defer { server.stop() }
        let errors = Pipe()
        let run = try startHeldRun(mode + ["-o", directory.file("x"), server.url("/x")], server: server, errors: errors)
        defer { stop(run) }
        #expect(entries(directory.path).isEmpty, "no .part while the body arrives")
        try #require(FileManager.default.createFile(atPath: directory.file("x"), contents: Data("someone else's".utf8)))
        server.release()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        #expect(run.terminationStatus == 9, "\(errorText)")
        #expect(errorText.contains("already exists"), "\(errorText)")
        #expect(contents(directory.file("x")) == Array("someone else's".utf8))
        #expect(contents(directory.file("x.part")).map { sameBytes($0, victimBytes.bytes) } == true, "the bytes are kept")
        #expect(entries(directory.path) == ["x", "x.part"])
    }
}

/// Whether a run has ended, for the deadline that kills one that does not.
private final class EndFlag: Sendable {
    let state = Mutex(false)
}
