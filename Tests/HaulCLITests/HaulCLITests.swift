import Foundation
import Glibc
import Testing
import HaulTestSupport

/// The `haul` binary as a user runs it: names, directories, overwriting, resuming, progress formats, and an
/// exit code for each class of failure.
///
/// The suite spans the `HaulCLITests+*.swift` files, one topic each; `CLIFixture.swift` holds the servers.
@Suite(.serialized) struct HaulCLITests {
    let fixture = CLIFixture.shared

    /// `--limit-rate` for a download a test acts on while it runs: the 16 MiB file takes about four seconds
    /// whatever requests haul makes and however the server paces them.
    static let paced = "4M"

    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("haul").path
    }

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-cli-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @discardableResult
    func haul(_ arguments: [String], in directory: String? = nil, timeout: Double = 60) throws -> ProcessResult {
        try ChildProcess.run(Self.binary, ["--no-sync"] + arguments, in: directory, timeout: timeout)
    }

    // MARK: Naming and destinations

    @Test func withoutOutputTheFileIsNamedAfterTheURLInTheCurrentDirectory() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul([fixture.nginx.url("/f3.bin")], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/f3.bin") == fixture.sha256("f3.bin"))
        #expect(run.errorText.contains("saved"), "a non-terminal gets a plain summary line: \(run.errorText)")
    }

    @Test func dirIsCreatedAndTheServersSuggestedNameIsUsed() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let target = directory + "/not/yet/there"
        let run = try haul(["-d", target, fixture.nginx.url("/named/f1.bin")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: target + "/report 2026.bin") == fixture.sha256("f1.bin"))

        let named = try haul(["-d", target, "-o", "chosen.bin", fixture.nginx.url("/named/f2.bin")])
        #expect(named.exitStatus == 0, "\(named.errorText)")
        #expect(try TestFiles.sha256(ofFile: target + "/chosen.bin") == fixture.sha256("f2.bin"), "-o wins, inside -d")
    }

    /// Short options take their value joined, as with curl (`-ofile`) and aria2c (`-x16`).
    @Test func shortOptionsAcceptJoinedValues() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul(["-c4", "-d" + directory, "-ojoined.bin", "-HX-Haul-Test: 1", fixture.nginx.url("/f5.bin")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/joined.bin") == fixture.sha256("f5.bin"))

        let zero = try haul(["-c0", "-o", directory + "/never.bin", fixture.nginx.url("/f5.bin")])
        #expect(zero.exitStatus == 2, "-c0 is read as zero connections: \(zero.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/never.bin"))
    }

    @Test func anExistingFileIsNotOverwrittenUnlessAllowed() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/keep.bin"
        try Data("mine".utf8).write(to: URL(fileURLWithPath: path))
        let refused = try haul(["-o", path, fixture.nginx.url("/f4.bin")])
        #expect(refused.exitStatus == 9)
        #expect(refused.errorText == "haul: \(path) already exists (use --allow-overwrite to replace it, or --skip-existing)\n",
                "the CLI names its own options, not the API's: \(refused.errorText)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")

        let skipped = try haul(["--skip-existing", "-o", path, fixture.nginx.url("/f4.bin")])
        #expect(skipped.exitStatus == 0, "\(skipped.errorText)")
        #expect(skipped.errorText == "haul: \(path): already complete\n", "\(skipped.errorText)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine", "a skipped file is not touched")
        let contradiction = try haul(["--skip-existing", "--allow-overwrite", "-o", path, fixture.nginx.url("/f4.bin")])
        #expect(contradiction.exitStatus == 2, "\(contradiction.errorText)")

        let allowed = try haul(["--allow-overwrite", "-o", path, fixture.nginx.url("/f4.bin")])
        #expect(allowed.exitStatus == 0)
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256("f4.bin"))
    }

    /// `-o DIR` saves into DIR under the name the download would have without `-o` (curl's --output-dir,
    /// wget's -P); `-o DIR/` too, creating DIR. Neither leaves a `DIR.part` or a hidden `DIR/.part`.
    @Test func dashOWithADirectorySavesIntoIt() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let existing = directory + "/existing"
        try FileManager.default.createDirectory(atPath: existing, withIntermediateDirectories: false)
        for arguments in [["-o", existing], ["--allow-overwrite", "-o", existing]] {
            let run = try haul(arguments + [fixture.nginx.url("/f6.bin")])
            #expect(run.exitStatus == 0, "\(arguments): \(run.errorText)")
            #expect(try TestFiles.sha256(ofFile: existing + "/f6.bin") == fixture.sha256("f6.bin"))
            #expect(!FileManager.default.fileExists(atPath: existing + ".part"), "\(arguments)")
            try FileManager.default.removeItem(atPath: existing + "/f6.bin")
        }
        let slashed = directory + "/new/"
        let named = try haul(["-o", slashed, fixture.nginx.url("/named/f7.bin")])
        #expect(named.exitStatus == 0, "\(named.errorText)")
        #expect(try TestFiles.sha256(ofFile: slashed + "report 2026.bin") == fixture.sha256("f7.bin"), "the server's name, inside")
        #expect(!FileManager.default.fileExists(atPath: slashed + ".part"))
    }

    /// A body without a length (a chunked directory listing) is all fetched by this run: its summary says
    /// "363 B in …", not "363 B; 0 B fetched".
    @Test func aBodyWithoutALengthIsSummarizedAsFetched() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 363),
                                           script: .always(MisbehavingServer.Behavior.chunked.with { $0.rangeHandling = .ignore }))
        defer { server.stop() }
        let run = try haul(["-o", directory + "/listing.html", server.url("/")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(run.errorText.contains("(363 B in "), "\(run.errorText)")
        #expect(!run.errorText.contains("fetched"), "\(run.errorText)")
    }

    // MARK: Lists and many downloads

    @Test func inputFileWithTwentyURLsAndFourJobs() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var list = "# twenty files, some renamed\n"
        for index in 0..<20 {
            list += fixture.nginx.url("/f\(index).bin") + (index % 5 == 0 ? "\tout=renamed-\(index).bin" : "") + "\n"
        }
        try list.write(toFile: directory + "/list.txt", atomically: true, encoding: .utf8)
        let run = try haul(["-i", directory + "/list.txt", "-j", "4", "-d", directory + "/out"])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        for index in 0..<20 {
            let name = index % 5 == 0 ? "renamed-\(index).bin" : "f\(index).bin"
            #expect(try TestFiles.sha256(ofFile: directory + "/out/" + name) == fixture.sha256("f\(index).bin"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/out").count == 20, "no leftovers")
    }

    /// Running a finished list again reports its files as already complete (exit 0), including one the
    /// server named (its name is only known after asking); a file with a `.part` beside it is not.
    @Test func rerunningAFinishedInputFileReportsItsFilesAsAlreadyComplete() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let list = directory + "/list.txt"
        try [fixture.nginx.url("/f13.bin"), fixture.nginx.url("/f14.bin") + "\tout=fourteen.bin", fixture.nginx.url("/named/f15.bin")]
            .joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let out = directory + "/out"
        let first = try haul(["-i", list, "-d", out])
        #expect(first.exitStatus == 0, "\(first.errorText)")
        #expect(try TestFiles.sha256(ofFile: out + "/report 2026.bin") == fixture.sha256("f15.bin"))

        let again = try haul(["-i", list, "-d", out])
        #expect(again.exitStatus == 0, "\(again.errorText)")
        for path in [out + "/f13.bin", out + "/fourteen.bin", out + "/report 2026.bin"] {
            #expect(again.errorText.contains("haul: \(path): already complete\n"), "\(path): \(again.errorText)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).count == 3, "nothing left behind")

        let json = try haul(["-q", "--progress", "json", "-i", list, "-d", out])
        #expect(json.exitStatus == 0, "\(json.errorText)")
        let objects = try json.errorText.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        #expect(objects.count == 0, "-q shows no outcomes, only errors: \(json.errorText)")
        let jsonLoud = try haul(["--progress", "json", "-i", list, "-d", out])
        let skipped = try jsonLoud.errorText.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }.filter { $0["type"] as? String == "done" && $0["skipped"] as? Bool == true }
        #expect(skipped.count == 3, "\(jsonLoud.errorText)")

        // A `.part` without a journal beside the file is nothing any run resumes (a concurrent run's copy, a
        // download stopped before its first checkpoint): the file is still complete.
        _ = FileManager.default.createFile(atPath: out + "/f13.bin.part", contents: Data())
        let stale = try haul(["-i", list, "-d", out])
        #expect(stale.exitStatus == 0, "\(stale.errorText)")
        #expect(stale.errorText.contains("\(out)/f13.bin: already complete"), "\(stale.errorText)")
        // An interrupted download (its journal) beside the file is not "complete": the engine decides (here:
        // refuses, the journal being unreadable).
        _ = FileManager.default.createFile(atPath: out + "/f13.bin.part.haul", contents: Data("not a journal".utf8))
        let partial = try haul(["-i", list, "-d", out])
        #expect(partial.exitStatus == 9, "\(partial.errorText)")
        #expect(partial.errorText.contains("cannot resume"), "\(partial.errorText)")
    }

    /// Several URLs are mirrors of one file (aria2); with -Z each is its own download, -j at a time.
    @Test func parallelDownloadsEachURLAsItsOwnFile() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let urls = [fixture.nginx.url("/f8.bin"), fixture.nginx.url("/f9.bin"), fixture.nginx.url("/named/f10.bin")]
        let run = try haul(["-Z", "-j", "2", "-d", directory + "/out"] + urls)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/out/f8.bin") == fixture.sha256("f8.bin"))
        #expect(try TestFiles.sha256(ofFile: directory + "/out/f9.bin") == fixture.sha256("f9.bin"))
        #expect(try TestFiles.sha256(ofFile: directory + "/out/report 2026.bin") == fixture.sha256("f10.bin"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/out").count == 3)

        let inDirectory = try haul(["--parallel", fixture.nginx.url("/f11.bin"), fixture.nginx.url("/f12.bin")], in: directory)
        #expect(inDirectory.exitStatus == 0, "without --dir, the current directory: \(inDirectory.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/f12.bin") == fixture.sha256("f12.bin"))

        let output = try haul(["-Z", "-o", directory + "/one.bin"] + urls)
        #expect(output.exitStatus == 2 && output.errorText.contains("--output names one file"), "\(output.errorText)")
    }

    /// Different files given as mirrors: the engine fails with a mirror mismatch, and the CLI says how to
    /// download them as files of their own.
    @Test func mirrorsThatAreDifferentFilesGetAHint() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // f0 and f1 differ in length: whichever connection notices, the download fails (exit 6).
        for connections in ["16", "4"] {
            let run = try haul(["-c", connections, "--min-segment", "2K", "-o", directory + "/m.bin", fixture.nginx.url("/f0.bin"), fixture.nginx.url("/f1.bin")])
            #expect(run.exitStatus == 6, "\(run.errorText)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/m.bin"))
            let partSize = (try? FileManager.default.attributesOfItem(atPath: directory + "/m.bin.part")[.size] as? Int) ?? 0
            #expect(partSize == 0, "failed before anything was written")
        }
        let run = try haul(["-c", "16", "--min-segment", "2K", "-o", directory + "/m.bin", fixture.nginx.url("/f0.bin"), fixture.nginx.url("/f1.bin")])
        #expect(run.errorText.hasPrefix("haul: mirror ") && run.errorText.contains("disagrees"), "\(run.errorText)")
        #expect(run.errorText.hasSuffix("; if these are different files, use -Z (or -i)\n"), "\(run.errorText)")
        #expect(run.errorText.split(separator: "\n").count == 1, "\(run.errorText)")
    }
}
