import Foundation
import Glibc
import Testing
import HaulTestSupport

/// curl's output habits as a user types them: `-w`, `--max-filesize`, `-r`, `-I`, `--compressed`; the JSON
/// lines' id and URL; what 401 and exit-7 messages advise.
@Suite(.serialized) struct OutputHabitsCLITests {
    let fixture = CLIFixture.shared

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-cli-habits-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @discardableResult
    func haul(_ arguments: [String], in directory: String? = nil, timeout: Double = 60) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync"] + arguments, in: directory, timeout: timeout)
    }

    func contents(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    // MARK: -w

    @Test func writeOutPrintsCurlsVariablesAfterEachTransfer() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let size = try contents(fixture.data + "/f3.bin").count
        let path = directory + "/w.bin"
        let run = try haul(["-q", "-w", "%{http_code} %{size_download} %{filename_effective} %{num_redirects} %{exitcode}\\n",
                            "-o", path, fixture.nginx.url("/f3.bin")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(run.outputText == "206 \(size) \(path) 0 0\n", "the probe's answer is a 206: \(run.outputText)")

        let missing = try haul(["-q", "-w", "%{http_code} %{exitcode} %{errormsg}", "-o", directory + "/m.bin", fixture.nginx.url("/missing.bin")])
        #expect(missing.exitStatus == 5)
        #expect(missing.outputText.hasPrefix("404 5 ") && missing.outputText.contains("404"), "\(missing.outputText)")

        // @file, %{json}; each -Z download prints its own.
        let format = directory + "/format.txt"
        try "%{json}\\n".write(toFile: format, atomically: true, encoding: .utf8)
        let two = try haul(["-q", "-Z", "-w", "@" + format, "-d", directory + "/z", fixture.nginx.url("/f4.bin"), fixture.nginx.url("/f5.bin")])
        #expect(two.exitStatus == 0, "\(two.errorText)")
        let objects = try two.outputText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
        #expect(objects.count == 2, "\(two.outputText)")
        #expect(Set(objects.compactMap { $0["url"] as? String }) == [fixture.nginx.url("/f4.bin"), fixture.nginx.url("/f5.bin")])
        #expect(objects.allSatisfy { $0["exitcode"] as? Int == 0 && $0["http_code"] as? Int == 206 })

        let unknown = try haul(["-w", "%{http_cod}", "-o", directory + "/never.bin", fixture.nginx.url("/f3.bin")])
        #expect(unknown.exitStatus == 2 && unknown.errorText.contains("unknown variable %{http_cod}"), "\(unknown.errorText)")
        let unterminated = try haul(["-w", "%{http_code", "-o", directory + "/never.bin", fixture.nginx.url("/f3.bin")])
        #expect(unterminated.exitStatus == 2 && unterminated.errorText.contains("no closing }"), "\(unterminated.errorText)")
        let wget = try haul(["-w", "2", "-o", directory + "/never.bin", fixture.nginx.url("/f3.bin")])
        #expect(wget.exitStatus == 2 && wget.errorText.contains("--write-out"), "\(wget.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/never.bin"))
    }

    // MARK: --max-filesize

    @Test func maxFilesizeRefusesALargerFileBeforeWritingAByte() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/f3.bin")
        let size = try contents(fixture.data + "/f3.bin").count
        let run = try haul(["--max-filesize", "10K", "-o", directory + "/big.bin", url])
        #expect(run.exitStatus == 63, "\(run.errorText)")
        #expect(run.errorText.contains(url) && run.errorText.contains("\(size)") && run.errorText.contains("--max-filesize 10240"),
                "\(run.errorText)")
        #expect(run.errorText.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "nothing kept")

        let fits = try haul(["--max-filesize", "1M", "-o", directory + "/ok.bin", url])
        #expect(fits.exitStatus == 0, "\(fits.errorText)")
    }

    @Test func maxFilesizeStopsABodyWithoutALengthAndKeepsNothing() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 300_000, seed: 9),
                                           script: .always(MisbehavingServer.Behavior.ignoreRange.with { $0.framing = .chunked }))
        defer { server.stop() }
        let run = try haul(["--max-filesize", "100K", "-o", directory + "/c.bin", server.url("/c")])
        #expect(run.exitStatus == 63, "\(run.errorText)")
        #expect(run.errorText.contains("without announcing its length") && run.errorText.contains("102400"), "\(run.errorText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no .part, no journal")
    }

    // MARK: -r

    @Test func rangeFetchesOnlyThoseBytesAsCurlDoes() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = try contents(fixture.data + "/f6.bin")
        let url = fixture.nginx.url("/f6.bin")
        let closed = try haul(["-r", "100-1099", "-o", directory + "/a.bin", url])
        #expect(closed.exitStatus == 0, "\(closed.errorText)")
        #expect(try contents(directory + "/a.bin") == Array(source[100...1099]), "offset 0 of the output is byte 100")

        let suffix = try haul(["-r", "-500", "-o", directory + "/b.bin", url])
        #expect(suffix.exitStatus == 0, "\(suffix.errorText)")
        #expect(try contents(directory + "/b.bin") == Array(source.suffix(500)))

        let open = try haul(["--range", "\(source.count - 10)-", "-o", "-", url])
        #expect(open.exitStatus == 0, "\(open.errorText)")
        #expect(Array(open.standardOutput) == Array(source.suffix(10)))

        let several = try haul(["-r", "0-9,20-29", "-o", directory + "/never.bin", url])
        #expect(several.exitStatus == 2 && several.errorText.contains("one range only"), "\(several.errorText)")
        #expect(several.errorText.split(separator: "\n").count == 1)

        // A server that answers with the whole file: refused, nothing written.
        let whole = try haul(["-r", "100-199", "-o", directory + "/never.bin", fixture.nginx.url("/noranges/f6.bin")])
        #expect(whole.exitStatus == 6, "\(whole.errorText)")
        #expect(whole.errorText.contains("200"), "\(whole.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/never.bin"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/never.bin.part"))
    }

    @Test func rangeRefusesAnotherRangeFromALyingServer() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 10_000, seed: 3), script: .always(.wrongContentRange(shiftedBy: 7)))
        defer { server.stop() }
        let run = try haul(["-r", "0-99", "-o", directory + "/x.bin", server.url("/x")])
        #expect(run.exitStatus == 6, "\(run.errorText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func rangeAndHeadFollowRedirects() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let resource = MisbehavingServer.Resource.pattern(size: 20_000, seed: 4)
        let server = try MisbehavingServer(resource: resource, script: .redirects(["/old": "/new"]))
        defer { server.stop() }
        let range = try haul(["-r", "1000-1999", "-w", "%{http_code} %{num_redirects} %{url_effective}", "-o", directory + "/r.bin",
                              server.url("/old")])
        #expect(range.exitStatus == 0, "\(range.errorText)")
        #expect(range.outputText == "206 1 " + server.url("/new"), "\(range.outputText)")
        #expect(try contents(directory + "/r.bin") == Array(resource.bytes[1000...1999]))

        let head = try haul(["-I", server.url("/old")], in: directory)
        #expect(head.exitStatus == 0, "\(head.errorText)")
        let statusLines = head.outputText.split(separator: "\r\n").filter { $0.hasPrefix("HTTP/") }
        #expect(statusLines.count == 2 && statusLines[0].hasPrefix("HTTP/1.1 302") && statusLines[1].hasPrefix("HTTP/1.1 200"),
                "\(head.outputText)")

        let tooLarge = try haul(["-r", "0-9999", "--max-filesize", "1K", "-o", directory + "/big.bin", server.url("/new")])
        #expect(tooLarge.exitStatus == 63, "\(tooLarge.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/big.bin"))
    }

    /// Nothing resumes a range: Ctrl-C in the middle of one cancels it, leaves no `.part`, and exits 130.
    @Test func anInterruptedRangeLeavesNothing() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 1 << 20, seed: 6))
        defer { server.stop() }
        server.hold(afterBodyBytes: 100_000)
        let output = directory + "/held.bin"
        let run = try SignalTests.Running(["--no-sync", "-r", "0-999999", "-o", output, server.url("/held")],
                                          errorsPath: directory + "/stderr")
        poll { (server.bodyBytesSent >= 100_000 && FileManager.default.fileExists(atPath: output + ".part")) || !run.isRunning }
        #expect(run.isRunning && FileManager.default.fileExists(atPath: output + ".part"), "the range is being written: \(run.errorText)")
        run.send(SIGINT)
        #expect(run.exitStatus() == 130, "\(run.errorText)")
        #expect(!FileManager.default.fileExists(atPath: output + ".part") && !FileManager.default.fileExists(atPath: output))
    }

    // MARK: -I

    @Test func headPrintsTheResponseHeadAndWritesNothing() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let size = try contents(fixture.data + "/f7.bin").count
        let run = try haul(["-I", fixture.nginx.url("/f7.bin")], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(run.outputText.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(run.outputText)")
        #expect(run.outputText.contains("Content-Length: \(size)\r\n") && run.outputText.hasSuffix("\r\n\r\n"), "\(run.outputText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)

        let missing = try haul(["--head", fixture.nginx.url("/missing.bin")], in: directory)
        #expect(missing.exitStatus == 5, "\(missing.errorText)")
        #expect(missing.outputText.hasPrefix("HTTP/1.1 404"), "the head is printed all the same: \(missing.outputText)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    // MARK: --compressed, JSON ids, advice

    @Test func compressedIsAcceptedAndTheFileIsAsStored() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul(["--compressed", "-o", directory + "/c.bin", fixture.nginx.url("/f8.bin")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/c.bin") == fixture.sha256("f8.bin"))
        let help = try haul(["--help"]).outputText
        #expect(help.contains("--compressed") && help.contains("--write-out") && help.contains("--max-filesize"), "\(help)")
    }

    @Test func jsonLinesCarryAnIdAndTheURL() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let urls = [fixture.nginx.url("/f9.bin"), fixture.nginx.url("/f10.bin"), fixture.nginx.url("/missing.bin")]
        let run = try haul(["--progress", "json", "-Z", "-d", directory] + urls)
        #expect(run.exitStatus == 5, "\(run.errorText)")
        let lines = try run.errorText.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
        let done = lines.filter { $0["type"] as? String == "done" }
        #expect(Set(done.compactMap { $0["id"] as? Int }) == [1, 2], "\(run.errorText)")
        for line in done { #expect(line["url"] as? String == urls[(line["id"] as? Int ?? 1) - 1]) }
        let failed = lines.filter { $0["type"] as? String == "error" }
        #expect(failed.count == 1 && failed.first?["id"] as? Int == 3, "\(run.errorText)")
    }

    @Test func unauthorizedAndChangedSayWhatToDoNext() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let denied = try haul(["-o", directory + "/p.bin", fixture.nginx.url("/private/f1.bin")])
        #expect(denied.exitStatus == 5, "\(denied.errorText)")
        #expect(denied.errorText.contains("401") && denied.errorText.contains("-u USER") && denied.errorText.contains("--netrc"),
                "\(denied.errorText)")

        let server = try MisbehavingServer(resource: .pattern(size: 4 << 20, seed: 1),
                                           script: .changeResource(to: .pattern(size: 4 << 20, seed: 2), fromRequest: 2))
        defer { server.stop() }
        let changed = try haul(["-c", "4", "--min-segment", "256K", "-o", directory + "/c.bin", server.url("/f")])
        #expect(changed.exitStatus == 7, "\(changed.errorText)")
        #expect(changed.errorText.contains("--on-change restart"), "\(changed.errorText)")
    }
}
