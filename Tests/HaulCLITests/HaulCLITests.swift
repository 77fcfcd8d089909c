import Foundation
import Glibc
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
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        // 8 connections × 1 MB/s: the 16 MiB file takes about two seconds, time enough to interrupt it.
        configuration.rateLimitedLocation = .init(prefix: "/slow/", rate: "1m")
        configuration.extraServerDirectives = """
            location /named/ { alias \(data)/; add_header Content-Disposition 'attachment; filename="report 2026.bin"'; }
            """
        nginx = try NginxServer(configuration: configuration)
        ca = try TestCertificateAuthority.shared()
        try TestFiles.create(at: data + "/big.bin", size: bigSize, seed: 5)
        bigSHA256 = try TestFiles.sha256(ofFile: data + "/big.bin")
        for index in 0..<20 {
            try TestFiles.create(at: data + "/f\(index).bin", size: 50_000 + 997 * index, seed: UInt64(200 + index))
        }
    }

    func sha256(_ name: String) throws -> String { try TestFiles.sha256(ofFile: data + "/" + name) }
}

@Suite(.serialized) struct HaulCLITests {
    let fixture = CLIFixture.shared

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
        #expect(refused.errorText.contains("\(path) already exists"), "\(refused.errorText)")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")

        let allowed = try haul(["--allow-overwrite", "-o", path, fixture.nginx.url("/f4.bin")])
        #expect(allowed.exitStatus == 0)
        #expect(try TestFiles.sha256(ofFile: path) == fixture.sha256("f4.bin"))
    }

    // MARK: Interrupting and resuming

    @Test func sigintPausesWithExit130AndARerunResumes() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let arguments = ["--no-sync", "-c", "8", "--checkpoint-bytes", "1M", "-o", output, fixture.nginx.url("/slow/big.bin")]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        usleep(800_000)
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
        first.arguments = ["--no-sync", "-c", "4", "-q", "-o", output, fixture.nginx.url("/slow/big.bin")]
        try first.run()
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL); first.waitUntilExit() } }
        // Wait for the first to hold its `.part` (a deadline, not a guess).
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: output + ".part") && Date() < deadline && first.isRunning { usleep(10_000) }
        #expect(FileManager.default.fileExists(atPath: output + ".part"), "the first download started")

        for extra in [[String](), ["--restart"]] {
            let second = try haul(extra + ["-o", output, fixture.nginx.url("/slow/big.bin")])
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
        let run = try haul(["--progress", "json", "-c", "4", "-o", directory + "/j.bin", fixture.nginx.url("/slow/big.bin")])
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
        let command = [Self.binary, "--no-sync", "-c", "4", "-o", directory + "/tty.bin", fixture.nginx.url("/slow/big.bin")]
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
}
