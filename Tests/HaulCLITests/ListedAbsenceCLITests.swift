import Foundation
import Glibc
import Testing
import HaulTestSupport

/// `haul -i LIST -d DIR` lists DIR once before the first download, and tells the engine which files were not
/// there, so that it does not look for `NAME` and `NAME.part` itself. A file that appears after that listing
/// — created by another program while an earlier download of the list runs — is still never replaced,
/// overwritten or lost.
@Suite(.serialized) struct ListedAbsenceCLITests {
    let firstBytes = MisbehavingServer.Resource.pattern(size: 2 << 20, seed: 81)
    let secondBytes = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 82)

    func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Runs `haul -j 1 -i LIST -d DIR` over two files, `first.bin` (held by its server after its first bytes)
    /// and `second.bin`; once the first is under way (the listing made), `meanwhile` runs, then the first is
    /// let finish and the second starts. Returns the exit status and stderr.
    func run(_ mode: [String], in directory: TemporaryDirectory, meanwhile: () throws -> Void) throws -> (status: Int32, errorText: String) {
        let first = try MisbehavingServer(resource: firstBytes)
        defer { first.stop() }
        let second = try MisbehavingServer(resource: secondBytes)
        defer { second.stop() }
        first.hold(afterBodyBytes: 256 << 10)
        let out = try directory.makeSubdirectory("out")
        let list = directory.file("list.txt")
        try "\(first.url("/first.bin"))\n\(second.url("/second.bin"))\n".write(toFile: list, atomically: false, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        process.arguments = mode + ["-j", "1", "-i", list, "-d", out]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        try #require(poll(within: 60) { first.bodyBytesSent > 0 }, "the run never started")
        try meanwhile()
        first.release()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(contents(out + "/first.bin").map { sameBytes($0, firstBytes.bytes) } == true, "\(errorText)")
        #expect(second.bodyBytesSent >= secondBytes.bytes.count, "the second file was fetched: the engine did not look (\(errorText))")
        return (process.terminationStatus, errorText)
    }

    /// `second.bin` appears after the listing: its download fetches (it was told the name was free), its
    /// `linkat` refuses the name — exit 9, "already exists", the other program's file untouched, the bytes kept
    /// as `second.bin.part` (with `--no-sync` and durable).
    @Test(arguments: [["--no-sync"], []])
    func aDestinationCreatedAfterTheListingIsExit9AndNeverReplaced(mode: [String]) throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-listed")
        let out = directory.file("out")
        let run = try run(mode, in: directory) {
            FileManager.default.createFile(atPath: out + "/second.bin", contents: Data("someone else's".utf8))
        }
        #expect(run.status == 9, "\(run.errorText)")
        #expect(run.errorText.contains("second.bin already exists (use --allow-overwrite to replace it, or --skip-existing)"), "\(run.errorText)")
        #expect(contents(out + "/second.bin") == Array("someone else's".utf8))
        #expect(contents(out + "/second.bin.part").map { sameBytes($0, secondBytes.bytes) } == true, "the bytes are kept")
        #expect(entries(out) == ["first.bin", "second.bin", "second.bin.part"])
    }

    /// Another `haul` starts writing `second.bin.part` (locked) after the listing: this run's download never
    /// opens it — it saves `second.bin` from a file of its own (exit 0), and the other `.part` keeps its bytes
    /// (the other run, finishing later, finds the name taken and keeps them: exit 9 there).
    @Test func anotherRunsPartCreatedAfterTheListingIsLeftAlone() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cli-listed")
        let part = directory.file("out") + "/second.bin.part"
        var descriptor: Int32 = -1
        let run = try run(["--no-sync"], in: directory) {
            FileManager.default.createFile(atPath: part, contents: Data("another run's".utf8))
            descriptor = open(part, O_RDWR)
            try #require(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0, "cannot lock \(part)")
        }
        defer { close(descriptor) }
        #expect(run.status == 0, "\(run.errorText)")
        #expect(contents(directory.file("out") + "/second.bin").map { sameBytes($0, secondBytes.bytes) } == true)
        #expect(contents(part) == Array("another run's".utf8), "the other run's .part is not written")
        #expect(entries(directory.file("out")) == ["first.bin", "second.bin", "second.bin.part"])
    }
}
