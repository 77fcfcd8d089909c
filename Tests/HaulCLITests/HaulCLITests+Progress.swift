import Foundation
import Glibc
import Testing
import HaulTestSupport

/// What haul says while it works: JSON progress lines, the bar redrawn in place on a terminal, and the
/// reason for using one connection.
extension HaulCLITests {
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
}
