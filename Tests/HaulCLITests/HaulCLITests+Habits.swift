import Foundation
import Glibc
import Testing
import HaulTestSupport

/// Habits from curl, wget and aria2: each works, or is answered in one line with haul's way.
extension HaulCLITests {
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

    @Test func limitRateZeroMeansUnlimited() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for zero in ["0", "0K", "0/s"] {
            let output = directory + "/r\(zero.count).bin"
            let run = try haul(["--limit-rate", zero, "-o", output, fixture.nginx.url("/big.bin")])
            #expect(run.exitStatus == 0, "\(zero): \(run.errorText)")
            #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
        }
        // A real limit still limits: 16 MiB at 16 MiB/s takes most of a second, not the unlimited few ms.
        let started = Date()
        let limited = try haul(["--limit-rate", "16M", "-o", directory + "/limited.bin", fixture.nginx.url("/big.bin")])
        #expect(limited.exitStatus == 0, "\(limited.errorText)")
        #expect(Date().timeIntervalSince(started) > 0.5)
        let negative = try haul(["--limit-rate", "-1", fixture.nginx.url("/big.bin")])
        #expect(negative.exitStatus == 2, "\(negative.errorText)")
    }
}
