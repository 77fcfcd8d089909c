import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport

/// The `haul` binary as a user runs it: names, directories, overwriting, resuming, progress formats, and an
/// exit code for each class of failure.
final class CLIFixture: Sendable {
    static let shared: CLIFixture = try! CLIFixture()

    let nginx: NginxServer
    let data: String
    let ca: TestCertificateAuthority
    let bigSize = 16 << 20
    let bigSHA256: String

    init() throws {
        data = NSTemporaryDirectory() + "haul-cli-data-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        Self.removeAtExit(data)
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        // /slow/ paces each request at 1 MB/s. That is no bound on a download (nginx paces per request, and
        // lets each new request send a second's worth at once), so a test that must act while a download
        // still runs paces it with haul's own `--limit-rate` (`paced`) instead, whatever its requests.
        configuration.rateLimitedLocation = .init(prefix: "/slow/", rate: "1m")
        // /noranges/ answers every request with the whole file (200), as a server without range support does.
        // alice:s3cret for /private/ (the hash made by openssl, as htpasswd would).
        let hash = try ChildProcess.run("/usr/bin/openssl", ["passwd", "-apr1", "s3cret"], timeout: 30).outputText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try "alice:\(hash)\n".write(toFile: data + "/.htpasswd", atomically: true, encoding: .utf8)
        configuration.extraServerDirectives = """
            location /named/ { alias \(data)/; add_header Content-Disposition 'attachment; filename="report 2026.bin"'; }
            location /noranges/ { alias \(data)/; max_ranges 0; }
            location /private/ { alias \(data)/; auth_basic "haul tests"; auth_basic_user_file \(data)/.htpasswd; }
            """
        let server = try NginxServer(configuration: configuration)
        nginx = server
        Self.serverToStop.withLock { $0 = server }
        ca = try TestCertificateAuthority.shared()
        try TestFiles.create(at: data + "/big.bin", size: bigSize, seed: 5)
        bigSHA256 = try TestFiles.sha256(ofFile: data + "/big.bin")
        for index in 0..<20 {
            try TestFiles.create(at: data + "/f\(index).bin", size: 50_000 + 997 * index, seed: UInt64(200 + index))
        }
    }

    func sha256(_ name: String) throws -> String { try TestFiles.sha256(ofFile: data + "/" + name) }

    /// The fixture lives for the whole test run, and Swift Testing has no run-wide teardown: when the test
    /// process exits, nginx is stopped (which removes its own directory) and the data directory removed.
    private static func removeAtExit(_ directory: String) {
        dataToRemove.withLock { $0 = directory }
        atexit {
            CLIFixture.serverToStop.withLock { $0 }?.stop()
            guard let directory = CLIFixture.dataToRemove.withLock({ $0 }) else { return }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private static let dataToRemove = Mutex<String?>(nil)
    fileprivate static let serverToStop = Mutex<NginxServer?>(nil)
}

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

    // MARK: Interrupting and resuming

    @Test func sigintPausesWithExit130AndARerunResumes() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let arguments = ["--no-sync", "-c", "8", "--checkpoint-bytes", "1M", "--limit-rate", Self.paced, "-o", output,
                         fixture.nginx.url("/big.bin")]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        // Interrupted once there is progress to save: the first checkpoint (1 MiB) has written the journal.
        #expect(poll { FileManager.default.fileExists(atPath: output + ".part.haul") || !process.isRunning },
                "no journal before the deadline")
        #expect(process.isRunning, "still downloading when interrupted")
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 130, "\(text)")
        #expect(text.contains("run the same command again to resume"), "\(text)")
        #expect(FileManager.default.fileExists(atPath: output + ".part.haul"), "the journal is written before exiting")
        #expect(!FileManager.default.fileExists(atPath: output))

        let again = try haul(Array(arguments.dropFirst()))
        #expect(again.exitStatus == 0, "\(again.errorText)")
        #expect(again.errorText.contains(" fetched in "), "the summary counts what this run fetched: \(again.errorText)")
        #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
        #expect(!FileManager.default.fileExists(atPath: output + ".part.haul"))
    }

    @Test func aSecondHaulOnTheSameOutputIsRefusedAndTouchesNothing() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let first = Process()
        first.executableURL = URL(fileURLWithPath: Self.binary)
        first.arguments = ["--no-sync", "-c", "4", "-q", "--limit-rate", Self.paced, "-o", output, fixture.nginx.url("/big.bin")]
        try first.run()
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL); first.waitUntilExit() } }
        // Wait for the first to hold its `.part` (a deadline, not a guess).
        poll { FileManager.default.fileExists(atPath: output + ".part") || !first.isRunning }
        #expect(FileManager.default.fileExists(atPath: output + ".part"), "the first download started")

        for extra in [[String](), ["--restart"]] {
            let second = try haul(extra + ["-o", output, fixture.nginx.url("/big.bin")])
            #expect(second.exitStatus == 9, "\(second.errorText)")
            #expect(second.errorText.contains("\(output) is being written by another download (process \(first.processIdentifier))"), "\(second.errorText)")
        }
        first.waitUntilExit()
        #expect(first.terminationStatus == 0, "the first download is unharmed")
        #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
    }

    // MARK: Progress formats

    @Test func progressJSONIsOneObjectPerLine() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul(["--progress", "json", "-c", "4", "--limit-rate", Self.paced, "-o", directory + "/j.bin",
                            fixture.nginx.url("/big.bin")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        let lines = run.errorText.split(separator: "\n")
        var types: [String] = []
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
            types.append(try #require(object["type"] as? String))
            if object["type"] as? String == "progress" {
                #expect(object["bytes"] is NSNumber && object["connections"] is NSNumber && object["rate"] is NSNumber)
            }
        }
        #expect(types.filter { $0 == "progress" }.count >= 2, "progress lines while it runs: \(types)")
        #expect(types.last == "done")
        let done = try JSONSerialization.jsonObject(with: Data(lines.last!.utf8)) as! [String: Any]
        #expect((done["bytes"] as? NSNumber)?.int64Value == Int64(fixture.bigSize))
    }

    @Test func onATerminalTheBarIsRedrawnInPlace() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // `script` gives haul a pseudo-terminal as stderr; what haul draws comes out on script's stdout.
        let command = [Self.binary, "--no-sync", "-c", "4", "--limit-rate", Self.paced, "-o", directory + "/tty.bin",
                       fixture.nginx.url("/big.bin")]
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let run = try ChildProcess.run("/usr/bin/script", ["-q", "-e", "-c", "stty cols 100; exec " + command, "/dev/null"])
        #expect(run.exitStatus == 0, "\(run.outputText)")
        let screen = run.outputText
        let redraws = screen.components(separatedBy: "\r").filter { $0.hasSuffix("\u{1B}[K") && $0.contains("%") }
        #expect(redraws.count >= 3, "the bar is redrawn in place several times: \(screen.debugDescription.prefix(600))")
        for frame in redraws {
            let line = String(frame.dropLast(3))
            #expect(line.count < 100, "a frame fits the 100-column terminal: \(line)")
        }
        #expect(redraws.contains { $0.contains("tty.bin") && $0.contains("MiB/s") && $0.contains("conn") && $0.contains("█") },
                "name, rate, connections and the segment map appear: \(redraws.last ?? "")")
        #expect(screen.contains("saved"), "the bar gives way to a summary line")
        #expect(try TestFiles.sha256(ofFile: directory + "/tty.bin") == fixture.bigSHA256)
    }

    // MARK: Many downloads

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

    // MARK: Exit codes, one per class

    @Test func usageErrorsExit2WithAClearMessage() throws {
        let cases: [([String], String)] = [
            (["ftp://example.org/x"], "is not a usable http(s) URL"),
            (["-H", "NoColon", fixture.nginx.url("/f0.bin")], "is not 'Name: value'"),
            (["-H", "X-Bad: a\u{01}b", fixture.nginx.url("/f0.bin")], "cannot be sent"),
            (["--checksum", "sha256=abc", fixture.nginx.url("/f0.bin")], "--checksum"),
            (["--limit-rate", "fast", fixture.nginx.url("/f0.bin")], "limit-rate"),
            (["--no-such-option", fixture.nginx.url("/f0.bin")], "no-such-option"),
            ([], "no URL given"),
        ]
        for (arguments, message) in cases {
            let run = try haul(arguments)
            #expect(run.exitStatus == 2, "\(arguments): \(run.exitStatus) \(run.errorText)")
            #expect(run.errorText.hasPrefix("haul: ") && run.errorText.contains(message), "\(arguments): \(run.errorText)")
        }
    }

    /// curl's `-fsSL -O -C -`, wget's `--continue -P DIR`: accepted, and the download is haul's usual one;
    /// spellings haul would misread are answered in one line with exit 2.
    @Test func otherToolsHabitsWorkOrAreAnsweredInOneLine() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/f6.bin")
        let run = try haul(["-fsSL", "-O", "-J", "-C", "-", "--create-dirs", "--continue", "-P", directory + "/in", url])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(run.errorText.isEmpty, "-s is -q: \(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/in/f6.bin") == fixture.sha256("f6.bin"))

        let answered: [([String], String)] = [
            (["-c", url], "haul resumes by default; -c is the number of connections (wget's -c is not needed)"),
            (["-x", "4", url], "aria2's -x 4 is haul's -c 4"),
            (["-C", "100", url], "takes only '-'"),
            (["--retry", "3", url], "unknown option '--retry'; haul's is --retries"),
            (["--no-check-certificate", url], "haul's is --insecure"),
        ]
        for (arguments, message) in answered {
            let refused = try haul(arguments + ["-d", directory + "/never"])
            #expect(refused.exitStatus == 2, "\(arguments): \(refused.errorText)")
            #expect(refused.errorText.hasPrefix("haul: ") && refused.errorText.contains(message), "\(arguments): \(refused.errorText)")
            #expect(refused.errorText.split(separator: "\n").count == 1, "\(arguments): one line")
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/never"))
        let help = try haul(["--help"]).outputText
        #expect(help.contains("Compatibility:") && help.contains("-P/--directory-prefix"), "\(help)")
    }

    /// aria2's `--checksum=sha-256=HEX` and SHA-512 verify the file; a wrong SHA-512 is exit 8.
    @Test func aria2sChecksumSpellingAndSHA512Verify() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/f7.bin")
        let sha512 = try ChildProcess.run("/usr/bin/sha512sum", [fixture.data + "/f7.bin"], timeout: 30).outputText.prefix(128)
        let aria2 = try haul(["--checksum=sha-256=" + fixture.sha256("f7.bin"), "-o", directory + "/a.bin", url])
        #expect(aria2.exitStatus == 0, "\(aria2.errorText)")
        let right = try haul(["--checksum", "sha-512=" + sha512, "-o", directory + "/b.bin", url])
        #expect(right.exitStatus == 0, "\(right.errorText)")
        let wrong = try haul(["--checksum", "sha512=" + String(repeating: "0", count: 128), "-o", directory + "/c.bin", url])
        #expect(wrong.exitStatus == 8, "\(wrong.errorText)")
    }

    /// `-u alice` without a terminal: a usage error naming the fix, not an empty password and a 401.
    @Test func dashUWithoutAPasswordAndNoTerminalIsAUsageError() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul(["-u", "alice", "-o", directory + "/p.bin", fixture.nginx.url("/private/f1.bin")])
        #expect(run.exitStatus == 2, "\(run.errorText)")
        #expect(run.errorText.contains("-u alice gives no password") && run.errorText.contains("-u alice:PASSWORD"), "\(run.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/p.bin"))
    }

    /// A URL with a space, on the command line or in a list, is refused naming where: never percent-encoded
    /// into a URL nobody meant.
    @Test func aURLWithASpaceIsRefusedNamingTheColumn() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let typed = try haul(["-d", directory, fixture.nginx.url("/f8.bin") + " out=x.bin"])
        #expect(typed.exitStatus == 2, "\(typed.errorText)")
        #expect(typed.errorText.contains("has a space at column"), "\(typed.errorText)")
        let list = directory + "/list.txt"
        try (fixture.nginx.url("/f8.bin") + " out=x.bin\n").write(toFile: list, atomically: true, encoding: .utf8)
        let listed = try haul(["-i", list, "-d", directory])
        #expect(listed.exitStatus == 2, "\(listed.errorText)")
        #expect(listed.errorText.contains("line 1: a space in the URL at column") && listed.errorText.contains("after a TAB"), "\(listed.errorText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["list.txt"])
    }

    /// `-i -` reads the list from standard input (checked, then read again as downloads start).
    @Test func dashIDashReadsTheListFromStandardInput() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let list = directory + "/list.txt"
        try (fixture.nginx.url("/f9.bin") + "\n" + fixture.nginx.url("/f10.bin") + "\n  out=ten.bin\n")
            .write(toFile: list, atomically: true, encoding: .utf8)
        let run = try ChildProcess.run("/bin/sh", ["-c", "exec \"$0\" --no-sync -i - -d \"$1\" < \"$2\"", Self.binary, directory + "/out", list],
                                       timeout: 60)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/out/f9.bin") == fixture.sha256("f9.bin"))
        #expect(try TestFiles.sha256(ofFile: directory + "/out/ten.bin") == fixture.sha256("f10.bin"))
    }

    @Test func helpListsTheOptionsAndExitCodes() throws {
        let run = try haul(["--help"])
        #expect(run.exitStatus == 0)
        for text in ["--input-file", "--limit-rate", "--progress", "130", "interrupted", "checksum"] {
            #expect(run.outputText.contains(text), "help mentions \(text)")
        }
    }

    @Test func eachFailureClassHasItsExitCode() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closedPort = try LoopbackPorts.freePort()
        let garbage = try MisbehavingServer(resource: .pattern(size: 1000), script: .always(.garbageHead))
        defer { garbage.stop() }
        let cases: [(String, [String], Int32, String)] = [
            ("network", ["--retries", "0", "http://127.0.0.1:\(closedPort)/x"], 3, "127.0.0.1"),
            ("tls", [fixture.nginx.url("/f0.bin", tls: true)], 4, "certificate"),
            ("http", [fixture.nginx.url("/missing.bin")], 5, "404"),
            ("protocol", ["--retries", "0", garbage.url("/f")], 6, "malformed"),
            ("checksum", ["--checksum", "sha256=" + String(repeating: "0", count: 64), fixture.nginx.url("/f0.bin")], 8, "sha256"),
        ]
        for (name, arguments, status, message) in cases {
            let run = try haul(["-o", directory + "/\(name).bin"] + arguments)
            #expect(run.exitStatus == status, "\(name): \(run.exitStatus) \(run.errorText)")
            #expect(run.errorText.contains(message), "\(name): \(run.errorText)")
            #expect(run.errorText.split(separator: "\n").count == 1, "\(name): one clear line: \(run.errorText)")
        }
        // TLS with the test CA trusted works.
        let trusted = try haul(["--cacert", fixture.ca.caCertificatePath, "-o", directory + "/ok.bin", fixture.nginx.url("/f0.bin", tls: true)])
        #expect(trusted.exitStatus == 0, "\(trusted.errorText)")
    }

    @Test func aFileChangedOnTheServerExits7() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 4 << 20, seed: 1),
                                           script: .changeResource(to: .pattern(size: 4 << 20, seed: 2), fromRequest: 2))
        defer { server.stop() }
        let run = try haul(["-c", "4", "--min-segment", "256K", "-o", directory + "/c.bin", server.url("/f")])
        #expect(run.exitStatus == 7, "\(run.errorText)")
        #expect(run.errorText.contains("changed on the server"), "\(run.errorText)")
    }

    // MARK: Habits from other download tools

    @Test func versionPrintsTheNumberAndTheBuild() throws {
        for flag in ["--version", "-V"] {
            let run = try haul([flag])
            #expect(run.exitStatus == 0, "\(flag): \(run.errorText)")
            let lines = run.outputText.split(separator: "\n")
            #expect(lines.count == 2, "\(flag): \(run.outputText)")
            #expect(lines.first?.wholeMatch(of: /haul \d+\.\d+\.\d+/) != nil, "\(flag): \(run.outputText)")
            #expect(lines.last?.contains("Swift") == true, "\(flag): \(run.outputText)")
            #expect(run.errorText.isEmpty)
        }
    }

    /// As in curl: no scheme means http://; an unknown scheme stays a usage error.
    @Test func aURLWithoutASchemeMeansHTTP() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/f6.bin")
        #expect(url.hasPrefix("http://"))
        let bare = String(url.dropFirst("http://".count))
        let run = try haul([bare], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/f6.bin") == fixture.sha256("f6.bin"))

        let list = directory + "/list.txt"
        try (String(fixture.nginx.url("/f7.bin").dropFirst(7)) + "\tout=seven.bin\n").write(toFile: list, atomically: true, encoding: .utf8)
        let listed = try haul(["-i", list, "-d", directory])
        #expect(listed.exitStatus == 0, "an input file's URLs too: \(listed.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/seven.bin") == fixture.sha256("f7.bin"))

        let ftp = try haul(["ftp://127.0.0.1/f6.bin"])
        #expect(ftp.exitStatus == 2)
        #expect(ftp.errorText.contains("unsupported scheme \"ftp\""), "\(ftp.errorText)")
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

    // MARK: Standard output

    @Test func dashOStreamsTheFileInOrderToStandardOutput() throws {
        let streamed = try haul(["-c", "8", "--min-segment", "1M", "-o", "-", fixture.nginx.url("/slow/big.bin")], timeout: 120)
        #expect(streamed.exitStatus == 0, "\(streamed.errorText)")
        #expect(streamed.standardOutput.count == fixture.bigSize)
        #expect(try TestFiles.sha256(of: streamed.standardOutput) == fixture.bigSHA256, "the bytes in order")
        #expect(streamed.errorText.contains("saved to standard output"), "\(streamed.errorText)")

        let checked = try haul(["--checksum", "sha256=" + fixture.bigSHA256, "-o", "-", fixture.nginx.url("/big.bin")])
        #expect(checked.exitStatus == 2 && checked.errorText.contains("a checksum needs the whole file"), "\(checked.errorText)")
    }

    @Test func aReaderThatStopsEarlyEndsTheDownloadQuietly() throws {
        let script = "\"$0\" --no-sync -c 4 -o - \"$1\" | head -c 1000 > /dev/null; exit ${PIPESTATUS[0]}"
        let run = try ChildProcess.run("/bin/bash", ["-c", script, Self.binary, fixture.nginx.url("/slow/big.bin")], timeout: 120)
        #expect(run.exitStatus == 9, "\(run.errorText)")
        #expect(run.errorText.isEmpty, "no error line for a closed pipe: \(run.errorText)")
    }

    /// `haul URL 2>&1 | head -1`: once stderr's reader is gone haul stops writing messages and finishes the
    /// download with its usual status, as curl does (it used to die of SIGPIPE, exit 141). The reader is gone
    /// before haul starts (the pipe's read end closed), so every write meets it, whatever the timing.
    @Test func aClosedStandardErrorDoesNotStopTheDownload() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        let process = Process()
        // With SIGPIPE's default action, as a shell starts haul (the test process ignores SIGPIPE, and a child
        // would inherit that).
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal=PIPE", Self.binary, "--no-sync", "-v", "-c", "4", "--min-segment", "64K", "-o", directory + "/f8.bin", fixture.nginx.url("/f8.bin")]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        try process.run()
        poll(every: .milliseconds(2), within: 60) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                "\(process.terminationReason == .uncaughtSignal ? "signal" : "exit") \(process.terminationStatus)")
        #expect(try TestFiles.sha256(ofFile: directory + "/f8.bin") == fixture.sha256("f8.bin"))
    }

    // MARK: Proxies

    @Test func dashXEnvironmentAndNoproxyDecideTheRouteAsInCurl() throws {
        let squid = try SquidProxy(credentials: ("alice", "pw"))
        defer { squid.stop() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/f6.bin")

        let viaFlag = try haul(["-c", "8", "--min-segment", "4K", "-x", squid.url(user: "alice", password: "pw"), "-o", directory + "/a.bin", url])
        #expect(viaFlag.exitStatus == 0, "\(viaFlag.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/a.bin") == fixture.sha256("f6.bin"))
        let proxied = squid.accessLog(waitingUntil: { $0.count >= 1 })
        #expect(!proxied.isEmpty && proxied.allSatisfy { $0.user == "alice" && $0.url.hasSuffix("/f6.bin") }, "\(proxied)")

        // The environment, read as curl reads it (http_proxy in lower case), unless --noproxy names the host.
        let before = squid.accessLog().count
        let viaEnvironment = try ChildProcess.run("/usr/bin/env", ["http_proxy=" + squid.url(user: "alice", password: "pw"), Self.binary,
                                                                   "--no-sync", "-o", directory + "/b.bin", url])
        #expect(viaEnvironment.exitStatus == 0, "\(viaEnvironment.errorText)")
        let afterEnvironment = squid.accessLog(waitingUntil: { $0.count > before })
        #expect(afterEnvironment.count > before, "http_proxy was used")
        let bypassed = try ChildProcess.run("/usr/bin/env", ["http_proxy=" + squid.url(user: "alice", password: "pw"), Self.binary,
                                                             "--no-sync", "--noproxy", "127.0.0.1", "-o", directory + "/c.bin", url])
        #expect(bypassed.exitStatus == 0, "\(bypassed.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/c.bin") == fixture.sha256("f6.bin"))
        #expect(squid.accessLog().count == afterEnvironment.count, "--noproxy went direct")

        let wrong = try haul(["-x", squid.url(user: "alice", password: "nope"), "-o", directory + "/d.bin", url])
        #expect(wrong.exitStatus == 3, "\(wrong.errorText)")
        #expect(wrong.errorText.contains("407"), "\(wrong.errorText)")
        #expect(squid.accessLog().filter { $0.status == 407 }.count <= 2, "a refused password is not retried")

        let unknown = try haul(["-x", "ftp://127.0.0.1:1", "-o", directory + "/e.bin", url])
        #expect(unknown.exitStatus == 2 && unknown.errorText.contains("unsupported proxy scheme"), "\(unknown.errorText)")
    }

    // MARK: Credentials

    @Test func userPasswordFromDashUTheURLOrNetrcReachesTheServer() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/private/f5.bin")
        let refused = try haul(["-c", "2", "-o", directory + "/no.bin", url])
        #expect(refused.exitStatus == 5 && refused.errorText.contains("401"), "\(refused.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/no.bin"))

        let withUser = try haul(["-c", "4", "-u", "alice:s3cret", "-o", directory + "/u.bin", url])
        #expect(withUser.exitStatus == 0, "\(withUser.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/u.bin") == fixture.sha256("f5.bin"))

        let inURL = try haul(["-c", "4", "-o", directory + "/i.bin", url.replacingOccurrences(of: "http://", with: "http://alice:s3cret@")])
        #expect(inURL.exitStatus == 0, "\(inURL.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/i.bin") == fixture.sha256("f5.bin"))

        let netrc = directory + "/netrc"
        try "machine 127.0.0.1\n  login alice\n  password s3cret\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o600)
        let fromNetrc = try haul(["-c", "4", "--netrc-file", netrc, "-o", directory + "/n.bin", url])
        #expect(fromNetrc.exitStatus == 0, "\(fromNetrc.errorText)")
        #expect(!fromNetrc.errorText.contains("can be read by other users"))
        #expect(try TestFiles.sha256(ofFile: directory + "/n.bin") == fixture.sha256("f5.bin"))

        chmod(netrc, 0o644)
        let readable = try haul(["--netrc-file", netrc, "-o", directory + "/r.bin", url])
        #expect(readable.exitStatus == 0, "\(readable.errorText)")
        #expect(readable.errorText.contains("haul: warning: \(netrc) can be read by other users"), "\(readable.errorText)")

        let wrong = try haul(["-u", "alice:nope", "-o", directory + "/w.bin", url])
        #expect(wrong.exitStatus == 5 && wrong.errorText.contains("401"), "\(wrong.errorText)")
    }

    @Test func limitRateZeroMeansUnlimited() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for zero in ["0", "0K", "0/s"] {
            let output = directory + "/r\(zero.count).bin"
            let run = try haul(["--limit-rate", zero, "-o", output, fixture.nginx.url("/big.bin")], timeout: 30)
            #expect(run.exitStatus == 0, "\(zero): \(run.errorText)")
            #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
        }
        // A real limit still limits: 16 MiB at 16 MiB/s takes most of a second, not the unlimited few ms.
        let started = Date()
        let limited = try haul(["--limit-rate", "16M", "-o", directory + "/limited.bin", fixture.nginx.url("/big.bin")], timeout: 30)
        #expect(limited.exitStatus == 0, "\(limited.errorText)")
        #expect(Date().timeIntervalSince(started) > 0.5)
        let negative = try haul(["--limit-rate", "-1", fixture.nginx.url("/big.bin")])
        #expect(negative.exitStatus == 2, "\(negative.errorText)")
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

        // An interrupted download beside the file is not "complete": the engine decides (here: refuses).
        _ = FileManager.default.createFile(atPath: out + "/f13.bin.part", contents: Data())
        let partial = try haul(["-i", list, "-d", out])
        #expect(partial.exitStatus == 9, "\(partial.errorText)")
        #expect(partial.errorText.contains("haul: \(out)/f13.bin already exists (use --allow-overwrite"), "\(partial.errorText)")
    }

    /// The exit-code table in --help keeps its three columns at 80 columns: long meanings continue on
    /// lines indented to the meaning column instead of wrapping to the margin.
    @Test func helpExitCodeTableKeepsItsColumnsAtEightyColumns() throws {
        let run = try ChildProcess.run("/usr/bin/env", ["COLUMNS=80", Self.binary, "--help"])
        #expect(run.exitStatus == 0)
        let lines = run.outputText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.allSatisfy { $0.count < 80 }, "\(lines.filter { $0.count >= 80 })")
        let start = try #require(lines.firstIndex(of: "Exit codes:"))
        let table = lines[(start + 1)...].prefix { !$0.isEmpty }
        let rows = table.filter { $0.wholeMatch(of: /\s{2,4}\d{1,3}  [a-z-]+ +\S.*/) != nil }
        #expect(rows.map { $0.split(separator: " ")[0] } == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "63", "130"], "\(table)")
        let meaningColumn = try #require(rows.first.map { row in row.distance(from: row.startIndex, to: row.firstRange(of: "every")!.lowerBound) })
        for line in table where !rows.contains(line) {
            #expect(line.hasPrefix(String(repeating: " ", count: meaningColumn)) && line.dropFirst(meaningColumn).first != " ",
                    "a continuation line starts at the meaning column: \(line.debugDescription)")
        }
        for row in rows {
            #expect(row.dropFirst(meaningColumn - 2).hasPrefix("  ") && row.dropFirst(meaningColumn).first != " ", "\(row)")
        }
    }

    /// One `haul: ` prefix on every error line, whichever part of haul found the error.
    /// The engine's words name the URL and the tries; `--progress json` gives them as fields too.
    @Test func aRetriedFailureNamesTheURLAndTheTries() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closedPort = try LoopbackPorts.freePort()
        let url = "http://127.0.0.1:\(closedPort)/x"
        let run = try haul(["--retries", "2", "-o", directory + "/x.bin", url])
        #expect(run.exitStatus == 3, "\(run.errorText)")
        #expect(run.errorText.hasPrefix("haul: \(url): connect to 127.0.0.1:\(closedPort): "), "\(run.errorText)")
        #expect(run.errorText.hasSuffix(" (after 3 tries)\n"), "--retries 2 is three tries: \(run.errorText)")

        let json = try haul(["-q", "--progress", "json", "--retries", "1", "-o", directory + "/y.bin", url])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.errorText.utf8)) as? [String: Any],
                                  "one JSON object: \(json.errorText)")
        #expect(object["url"] as? String == url)
        #expect((object["attempts"] as? NSNumber)?.intValue == 2)
        #expect((object["message"] as? String)?.hasSuffix(" (after 2 tries)") == true, "\(json.errorText)")
    }

    /// `--retries 7` is seven retries even when every one falls on the same range (the CLI used to stop
    /// after 5 tries a range whatever N was). The server asks for no wait, so the test takes no backoff.
    @Test func retriesAreTheWholeBudgetForOneURL() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 1000), script: .always(.status(503, retryAfter: "0")))
        defer { server.stop() }
        let run = try haul(["--retries", "7", "-o", directory + "/x.bin", server.url("/x")])
        #expect(run.exitStatus == 5, "\(run.errorText)")
        #expect(run.errorText.hasSuffix(" (after 8 tries)\n"), "--retries 7 is eight tries: \(run.errorText)")
    }

    @Test func everyErrorLineHasOnePrefix() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let existing = directory + "/there.bin"
        _ = FileManager.default.createFile(atPath: existing, contents: Data("x".utf8))
        let cases: [[String]] = [
            ["--no-such-option", fixture.nginx.url("/f0.bin")],   // the argument parser
            ["-c", "many", fixture.nginx.url("/f0.bin")],
            ["--progress"],
            ["-o", "a", "-i", directory + "/missing.txt"],        // the plan
            ["--retries", "0", fixture.nginx.url("/missing.bin")],  // the engine
            ["-o", existing, fixture.nginx.url("/f0.bin")],       // the CLI's own wording
        ]
        for arguments in cases {
            let run = try haul(arguments)
            #expect(run.exitStatus != 0)
            let lines = run.errorText.split(separator: "\n")
            #expect(!lines.isEmpty, "\(arguments)")
            for line in lines {
                #expect(line.hasPrefix("haul: ") && !line.hasPrefix("haul: haul:") && !line.contains("Error: "),
                        "\(arguments): \(line)")
            }
            #expect(lines.count == 1, "\(arguments): one line: \(run.errorText)")
        }
    }

    /// With `--progress json`, even with `-q`, every line on stderr is a JSON object: errors too.
    @Test func quietJSONErrorsAreJSONObjects() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cases: [([String], Int32, String)] = [
            (["--retries", "0", "-o", directory + "/x.bin", fixture.nginx.url("/missing.bin")], 5, "http"),
            (["--no-such-option", fixture.nginx.url("/f0.bin")], 2, "usage"),
            (["--checksum", "nope", fixture.nginx.url("/f0.bin")], 2, "usage"),
        ]
        for (arguments, status, className) in cases {
            for quiet in [["-q"], []] {
                let run = try haul(quiet + ["--progress", "json"] + arguments)
                #expect(run.exitStatus == status, "\(arguments): \(run.errorText)")
                let objects = try run.errorText.split(separator: "\n").map { line in
                    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
                }
                let errors = objects.filter { $0["type"] as? String == "error" }
                #expect(errors.count == 1, "\(quiet + arguments): \(run.errorText)")
                #expect((errors.first?["code"] as? NSNumber)?.int32Value == status)
                #expect(errors.first?["class"] as? String == className)
                if quiet == ["-q"] { #expect(objects.count == 1, "-q: the error only: \(run.errorText)") }
            }
        }
    }

    /// `-c 16` against a server without ranges says why it used one connection; with ranges, nothing.
    @Test func aServerWithoutRangesIsNamedAsTheReasonForOneConnection() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul(["-c", "16", "-o", directory + "/n.bin", fixture.nginx.url("/noranges/big.bin")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(run.errorText.contains("haul: note: n.bin: the server does not support ranges; used one connection\n"), "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/n.bin") == fixture.bigSHA256)

        let ranged = try haul(["-c", "16", "-o", directory + "/r.bin", fixture.nginx.url("/big.bin")])
        #expect(ranged.exitStatus == 0, "\(ranged.errorText)")
        #expect(!ranged.errorText.contains("note:"), "\(ranged.errorText)")
        let single = try haul(["-c", "1", "-o", directory + "/s.bin", fixture.nginx.url("/noranges/big.bin")])
        #expect(!single.errorText.contains("note:"), "one connection asked for, one used: \(single.errorText)")
        let quiet = try haul(["-q", "-c", "16", "-o", directory + "/q.bin", fixture.nginx.url("/noranges/big.bin")])
        #expect(quiet.exitStatus == 0 && quiet.errorText.isEmpty, "\(quiet.errorText)")
    }

    /// The second Ctrl-C exits at once (130), saying so without claiming a journal; what the last checkpoint
    /// recorded still resumes.
    ///
    /// The second signal (SIGTERM here) must arrive between the first one's "saving progress" line and the end of the
    /// pause, a window of milliseconds on loopback (the fdatasync of the checkpoint is most of it). When the
    /// pause wins the race — haul has already said "paused at" and exited 130 — the attempt proves nothing
    /// and is made again, up to five times.
    @Test func aSecondInterruptSaysItExitsNow() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let arguments = ["-c", "8", "--checkpoint-bytes", "1M", "--limit-rate", Self.paced, "-o", output, fixture.nginx.url("/big.bin")]
        var secondCaught = false
        for attempt in 0..<5 where !secondCaught {
            try? FileManager.default.removeItem(atPath: output + ".part")
            try? FileManager.default.removeItem(atPath: output + ".part.haul")
            let errorsPath = directory + "/stderr-\(attempt).txt"
            _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = arguments
            let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
            defer { try? errors.close() }
            process.standardError = errors
            try process.run()
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
            func errorText() -> String { (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? "" }
            poll { FileManager.default.fileExists(atPath: output + ".part.haul") || !process.isRunning }
            #expect(process.isRunning, "still downloading when interrupted")
            kill(process.processIdentifier, SIGINT)
            // Looked at every 0.2 ms: the window for the second signal is milliseconds wide.
            poll(every: .microseconds(200)) { errorText().contains("saving progress") || !process.isRunning }
            // SIGTERM: the same signal again from the same process at once is `timeout` delivering one stop
            // twice (StopSignalPolicy.isSameDelivery); a terminal's second Ctrl-C, which a test cannot send, is not.
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            let text = errorText()
            #expect(process.terminationStatus == 130, "\(text)")
            #expect(text.hasPrefix("haul: interrupted; saving progress"), "\(text)")
            if text.hasSuffix("haul: second interrupt: exiting now; each journal keeps its last checkpoint; a download without one starts over\n") {
                secondCaught = true
            } else {
                #expect(text.hasSuffix("; run the same command again to resume\n"), "the first interrupt finished first: \(text)")
            }
        }
        #expect(secondCaught, "the second interrupt arrived during the pause in one of five tries")

        let again = try haul(arguments)
        #expect(again.exitStatus == 0, "\(again.errorText)")
        #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
    }

    /// bash completes the subcommands' words after `haul queue` (haul's URLs, any number of positionals, used
    /// to swallow `queue`, so `haul queue <Tab>` offered the top-level words and `haul queue a<Tab>` nothing).
    @Test func bashCompletesTheQueueSubcommands() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let script = """
            source "$0"
            COMP_WORDS=("${@}"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
            _haul haul "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            echo "${COMPREPLY[*]}"
            """
        func complete(_ words: String...) throws -> String {
            let run = try ChildProcess.run("/bin/bash", ["-c", script, root + "/docs/completions/haul.bash"] + words, timeout: 30)
            #expect(run.exitStatus == 0, "\(run.errorText)")
            return run.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try complete("haul", "queue", "") == "-h --help add list pause resume cancel remove wait events stop")
        #expect(try complete("haul", "queue", "a") == "add")
        #expect(try complete("haul", "queue", "add", "--ret") == "--retries")
        #expect(try complete("haul", "qu") == "queue", "the top level still completes")
        #expect(try complete("haul", "--on-change", "re") == "restart")
    }

    /// The committed completions and man page are what the argument parser makes of today's options
    /// (run Scripts/generate-docs.sh after changing one).
    @Test func committedCompletionsAndManPageMatchTheOptions() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        for (shell, file) in [("bash", "haul.bash"), ("zsh", "_haul"), ("fish", "haul.fish")] {
            let generated = try haul(["--generate-completion-script", shell])
            #expect(generated.exitStatus == 0)
            let committed = try String(contentsOfFile: root + "/docs/completions/" + file, encoding: .utf8)
            #expect(committed == generated.outputText, "docs/completions/\(file) is stale: run Scripts/generate-docs.sh")
        }
        let manual = try String(contentsOfFile: root + "/docs/haul.1", encoding: .utf8)
        let help = try haul(["--help"]).outputText
        // The options --help documents: each line that starts with one (`  -c, --connections <n>`, `  --restart`).
        let options = help.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^  (?:-[A-Za-z], )?(--[a-z][a-z-]+)/).map { String($0.output.1) }
        }
        #expect(options.count > 25 && options.contains("--skip-existing"), "\(options)")
        // Listed in DESCRIPTION as `.It Fl -restart` or, with a short name, `.It Fl o , -output` (the SYNOPSIS is
        // the usage, not every option).
        for option in options {
            let name = option.dropFirst(2)
            #expect(manual.contains(".It Fl -" + name) || manual.contains(" , -" + name),
                    "docs/haul.1 lacks \(option): run Scripts/generate-docs.sh")
        }
    }
}
