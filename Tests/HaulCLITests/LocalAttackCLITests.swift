import Foundation
import Glibc
import Testing
import HaulTestSupport

/// Attacks from the local side — the disk, odd entries at the output's name, other processes, the user's
/// input — against the `haul` binary: each ends in the right file or a clear error with a documented exit
/// code, and leaves nothing it made behind.
@Suite(.serialized) struct LocalAttackCLITests {
    let fixture = CLIFixture.shared

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-local-attack-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @discardableResult
    func haul(_ arguments: [String], in directory: String? = nil, timeout: Double = 60) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync"] + arguments, in: directory, timeout: timeout)
    }

    // MARK: The output's name is already taken by something that is no file

    /// A dangling symbolic link at the output's name is a name that exists: the final `linkat`/`renameat2`
    /// never follows it and never replaces it, so the download is refused before anything is fetched (exit 9,
    /// naming the path), not after the whole body with its bytes left in a `.part`. Every way of naming the
    /// output, on the small-file path (a file without a name) and on the `.part` path (a big file).
    @Test(arguments: ["-o small", "-o big", "-d small", "-d big"])
    func aDanglingSymbolicLinkAtTheOutputNameIsRefusedBeforeAnythingIsFetched(form: String) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let big = form.hasSuffix("big")
        let name = form.hasPrefix("-d") ? "report 2026.bin" : "out.bin"
        let link = directory + "/" + name
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory + "/nowhere")
        let source = big ? "big.bin" : "f1.bin"
        let arguments = form.hasPrefix("-d") ? ["-d", directory, fixture.nginx.url("/named/" + source)]
                                             : ["-o", link, fixture.nginx.url("/" + source)]
        let run = try haul(arguments)
        #expect(run.exitStatus == 9, "\(form): \(run.exitStatus) \(run.errorText)")
        #expect(run.errorText.contains("\(name) already exists"), "\(form): \(run.errorText)")
        #expect(entries(directory) == [name], "\(form): nothing but the link: \(entries(directory))")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == directory + "/nowhere")
        // With --allow-overwrite the link itself is replaced (never followed): the file is where it was asked for.
        let replaced = try haul(["--allow-overwrite"] + arguments)
        #expect(replaced.exitStatus == 0, "\(form): \(replaced.errorText)")
        #expect(try TestFiles.sha256(ofFile: link) == fixture.sha256(source))
        #expect(entries(directory) == [name], "\(form): \(entries(directory))")
    }

    /// Held already, kept as attacks: a FIFO at the output name is never opened (that would wait forever for a
    /// reader), a symbolic link to someone's file is never followed — each refused as existing (exit 9) with
    /// the FIFO, the link and its target as they were; `--allow-overwrite` replaces the entry itself, never
    /// writing through it. Small file (no name until complete) and big file (`.part`).
    @Test(arguments: ["fifo", "link"], [false, true])
    func aFifoOrASymbolicLinkAtTheOutputNameIsNeitherOpenedNorFollowed(kind: String, big: Bool) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/out.bin", target = directory + "/target.txt"
        try Data("someone's file".utf8).write(to: URL(fileURLWithPath: target))
        if kind == "fifo" { #expect(mkfifo(output, 0o644) == 0) } else { try FileManager.default.createSymbolicLink(atPath: output, withDestinationPath: target) }
        let source = big ? "big.bin" : "f2.bin"
        let refused = try haul(["-o", output, fixture.nginx.url("/" + source)], timeout: 60)
        #expect(refused.exitStatus == 9, "\(kind): \(refused.exitStatus) \(refused.errorText)")
        #expect(refused.errorText.contains("out.bin already exists"), "\(refused.errorText)")
        #expect(entries(directory) == ["out.bin", "target.txt"])
        let replaced = try haul(["--allow-overwrite", "-o", output, fixture.nginx.url("/" + source)], timeout: 60)
        #expect(replaced.exitStatus == 0, "\(kind): \(replaced.errorText)")
        #expect(try TestFiles.sha256(ofFile: output) == fixture.sha256(source))
        #expect(FileManager.default.contents(atPath: target) == Data("someone's file".utf8), "the link's target is untouched")
        #expect(entries(directory) == ["out.bin", "target.txt"])
    }

    // MARK: Another program takes the `.part` away mid-download

    /// Starts `haul` (paced, so that it is still running when the test acts) and returns the process.
    /// Standard error goes to the file `errors` (read once haul has exited) or nowhere: a pipe nobody drains
    /// while the test polls for the exit fills at 64 KiB and holds haul in its write for good (two runs of one
    /// list at once, each saying "already exists" per raced file, wrote more and hung the suite).
    func startHaul(_ arguments: [String], errors: String? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        if let errors {
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// Another program removes the download's `NAME.part`, or puts a file of its own there (a browser's or a
    /// script's `NAME.part`), while haul still writes the file it opened. The rename works on the name: it used
    /// to give the other program's file the final name and say "saved" (exit 0, a wrong file), or fail with a
    /// bare `renameat2: No such file or directory` leaving a journal without its file. Now: exit 9 saying what
    /// happened, nothing under the final name, the other program's file untouched, and no journal left that a
    /// rerun would trust with another file's bytes. Durable (the group commit) and `--no-sync` (a file on its own).
    @Test(arguments: ["replaced", "removed"], [true, false])
    func aPartReplacedOrRemovedByAnotherProgramIsNeverSavedUnderTheFinalName(attack: String, durable: Bool) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/out.bin", part = output + ".part", journal = part + ".haul"
        let process = try startHaul((durable ? [] : ["--no-sync"])
            + ["-q", "-c", "4", "--limit-rate", "4M", "--checkpoint-bytes", "1M", "-o", output, fixture.nginx.url("/big.bin")],
            errors: directory + "/errors.txt")
        defer { if process.isRunning { process.terminate() }; process.waitUntilExit() }
        #expect(poll(within: 60) { FileManager.default.fileExists(atPath: journal) }, "the download started and wrote its journal")
        try FileManager.default.removeItem(atPath: part)
        let imposter = Data(repeating: 0x5A, count: fixture.bigSize)
        if attack == "replaced" { try imposter.write(to: URL(fileURLWithPath: part)) }
        #expect(poll(within: 120) { !process.isRunning }, "haul ended")
        process.waitUntilExit()
        let errors = String(decoding: FileManager.default.contents(atPath: directory + "/errors.txt") ?? Data(), as: UTF8.self)
        #expect(process.terminationStatus == 9, "\(attack): \(process.terminationStatus) \(errors)")
        #expect(errors.contains("out.bin.part was \(attack == "replaced" ? "replaced by another file" : "removed")"), "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: output), "nothing saved under the final name")
        #expect(!FileManager.default.fileExists(atPath: journal), "no journal left to resume another file's bytes")
        if attack == "replaced" { #expect(FileManager.default.contents(atPath: part) == imposter, "the other program's file is left alone") }
        // A rerun starts over (or resumes nothing of the other file) and saves the right bytes.
        if attack == "removed" {
            let rerun = try haul(["-o", output, fixture.nginx.url("/big.bin")])
            #expect(rerun.exitStatus == 0, "\(rerun.errorText)")
            #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
        }
    }

    // MARK: Filesystems without what the fast paths use

    /// Runs `body` with a ramfs mounted at a fresh directory: no size (statvfs reports 0 blocks), no
    /// `O_TMPFILE`, no user extended attributes — as some FUSE and network filesystems.
    func withRamfs(_ body: (String) throws -> Void) throws {
        let mountPoint = try scratch()
        defer { try? FileManager.default.removeItem(atPath: mountPoint) }
        let mount = try ChildProcess.run("/bin/mount", ["-t", "ramfs", "ramfs", mountPoint], timeout: 30)
        try #require(mount.exitStatus == 0, "mounting a ramfs needs root (the test command runs as root in CI): \(mount.errorText)")
        // Lazy: haul has ended, but nothing may keep the mount (and its directory in /tmp) behind.
        defer { _ = try? ChildProcess.run("/bin/umount", ["--lazy", mountPoint], timeout: 30) }
        try body(mountPoint)
    }

    /// On a filesystem that reports no size (ramfs), the free-space check used to refuse every download with
    /// "not enough space …: need N bytes, 0 available" (exit 9) where curl and wget write the file. Its space
    /// is unknown, not zero: every path saves the right bytes there, falling back from `O_TMPFILE` to a `.part`
    /// and storing no validators (`-N` then asks by the file's time).
    @Test func aFilesystemWithoutSizeTmpfileOrXattrsTakesEveryPath() throws {
        try withRamfs { mountPoint in
            let small = try haul(["-o", mountPoint + "/f1.bin", fixture.nginx.url("/f1.bin")])
            #expect(small.exitStatus == 0, "small: \(small.errorText)")
            #expect(try TestFiles.sha256(ofFile: mountPoint + "/f1.bin") == fixture.sha256("f1.bin"))
            let big = try haul(["-c", "8", "--min-segment", "256K", "-o", mountPoint + "/big.bin", fixture.nginx.url("/big.bin")])
            #expect(big.exitStatus == 0, "big: \(big.errorText)")
            #expect(try TestFiles.sha256(ofFile: mountPoint + "/big.bin") == fixture.bigSHA256)
            let list = mountPoint + "/list.txt"
            try (0..<20).map { fixture.nginx.url("/f\($0).bin") }.joined(separator: "\n").write(toFile: list, atomically: false, encoding: .utf8)
            // Durable, as the group commit flushes it (syncfs, fdatasync on ramfs: no-ops that succeed).
            let listed = try ChildProcess.run(HaulCLITests.binary, ["-q", "-j", "8", "-i", list, "-d", mountPoint + "/list"], timeout: 60)
            #expect(listed.exitStatus == 0, "list: \(listed.errorText)")
            for index in 0..<20 {
                #expect(try TestFiles.sha256(ofFile: mountPoint + "/list/f\(index).bin") == fixture.sha256("f\(index).bin"))
            }
            #expect(entries(mountPoint + "/list").count == 20, "no working file left: \(entries(mountPoint + "/list"))")
            let again = try haul(["-N", "-o", mountPoint + "/f1.bin", fixture.nginx.url("/f1.bin")])
            #expect(again.exitStatus == 0, "-N: \(again.errorText)")
            #expect(try TestFiles.sha256(ofFile: mountPoint + "/f1.bin") == fixture.sha256("f1.bin"))
        }
    }

    // MARK: Odd option values

    /// Seconds that are no usable wait — infinite, not a number, beyond any clock, zero — used to trap in the
    /// Swift runtime (exit 132 with a stack trace) or fail every connection after 0 ms (exit 3). Each is a
    /// usage error naming the option, before anything is fetched.
    @Test(arguments: ["--max-time", "--connect-timeout", "--stall-timeout", "--checkpoint-interval"], ["inf", "nan", "1e30", "0"])
    func secondsThatAreNoUsableWaitAreAUsageError(option: String, value: String) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try haul([option, value, "-o", directory + "/f1.bin", fixture.nginx.url("/f1.bin")])
        #expect(run.exitStatus == 2, "\(option) \(value): \(run.exitStatus) \(run.errorText)")
        #expect(run.errorText.contains("\(option) must be between"), "\(run.errorText)")
        #expect(entries(directory).isEmpty)
    }

    // MARK: Signals

    /// A stop signal while a list runs: once the stop began no download starts, so the run loop could end
    /// (every running download paused or finished) before the stop had said what was left and exited 130 —
    /// and the process exited 0, "every download finished", with most of the list never fetched (3 of 30
    /// runs of a 10,000-file list). Now the loop waits for the stop: exit 0 only when every file is there.
    /// Signals at seeded random moments after the first files are saved, each of SIGINT, SIGTERM, SIGHUP.
    @Test func aStopSignalDuringAListNeverEndsInExitZeroWithFilesLeft() throws {
        let seed = TestSeed(for: "LocalAttackCLITests.aStopSignalDuringAList", default: 0x5349_4753)
        var generator = seed.generator()
        print("aStopSignalDuringAListNeverEndsInExitZeroWithFilesLeft: \(seed)")
        let scratchDirectory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: scratchDirectory) }
        let count = 400
        let list = scratchDirectory + "/list.txt"
        try (0..<count).map { "\(fixture.nginx.url("/f\($0 % 20).bin"))\tout=n\($0).bin" }.joined(separator: "\n")
            .write(toFile: list, atomically: false, encoding: .utf8)
        for round in 0..<12 {
            let output = scratchDirectory + "/out\(round)"
            let signal = [SIGINT, SIGTERM, SIGHUP][Int.random(in: 0..<3, using: &generator)]
            let after = Int.random(in: 1...(count / 2), using: &generator)
            let process = try startHaul(["-q", "-j", "16", "-i", list, "-d", output])
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) }; process.waitUntilExit() }
            // The signal's moment (the test's input): once `after` files are saved, or the run ended by itself.
            #expect(poll(within: 60) { !process.isRunning || entries(output).count >= after })
            kill(process.processIdentifier, signal)
            #expect(poll(within: 120) { !process.isRunning }, "round \(round) ended (\(seed))")
            process.waitUntilExit()
            let saved = entries(output).filter { $0.hasSuffix(".bin") }.count
            if process.terminationStatus == 0 {
                #expect(saved == count, "round \(round): signal \(signal) after \(after) files: exit 0 with \(saved) of \(count) files (\(seed))")
            } else {
                #expect(process.terminationStatus == 130, "round \(round): signal \(signal): exit \(process.terminationStatus) (\(seed))")
            }
        }
    }

    /// `nohup haul …` (SIGHUP ignored when haul starts): a closed terminal must not stop the download, as it
    /// stops no curl or wget under nohup. haul took SIGHUP over anyway, paused and exited 130.
    @Test func aHangUpUnderNohupDoesNotStopTheDownload() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nohup")
        process.arguments = [HaulCLITests.binary, "--no-sync", "-q", "-c", "4", "--limit-rate", "8M",
                             "--checkpoint-bytes", "1M", "-o", output, fixture.nginx.url("/big.bin")]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) }; process.waitUntilExit() }
        // Running (nohup has exec'd haul, whose handlers are installed before its first journal is written).
        #expect(poll(within: 60) { FileManager.default.fileExists(atPath: output + ".part.haul") })
        kill(process.processIdentifier, SIGHUP)
        kill(process.processIdentifier, SIGHUP)
        #expect(poll(within: 120) { !process.isRunning })
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "exit \(process.terminationStatus)")
        #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
    }

    // MARK: A single range (-r) beside another download's working file

    /// `haul -r A-B -o NAME` where `NAME` is a download that is running or was interrupted: -r opened
    /// `NAME.part` with `O_TRUNC`, wrote its range and renamed it to `NAME` (exit 0) — the interrupted
    /// download's progress gone (its journal orphaned, the resume refused), a running one's writes landing in
    /// the range's file. Now a held `.part` is busy (exit 9) and one with a journal is refused (exit 2), both
    /// left as they were; the download then resumes to the right file.
    @Test(arguments: [false, true])
    func aRangeNeverTakesTheWorkingFileOfAnotherDownload(running: Bool) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin", part = output + ".part", journal = part + ".haul"
        let download = try startHaul(["--no-sync", "-q", "-c", "4", "--limit-rate", "2M", "--checkpoint-bytes", "1M",
                                      "-o", output, fixture.nginx.url("/big.bin")])
        defer { if download.isRunning { kill(download.processIdentifier, SIGKILL) }; download.waitUntilExit() }
        #expect(poll(within: 60) { FileManager.default.fileExists(atPath: journal) })
        if !running {
            kill(download.processIdentifier, SIGINT)
            #expect(poll(within: 60) { !download.isRunning })
            download.waitUntilExit()
            #expect(download.terminationStatus == 130)
        }
        let partBefore = try FileManager.default.attributesOfItem(atPath: part)[.size] as? Int
        let range = try haul(["-r", "0-99", "-o", output, fixture.nginx.url("/big.bin")])
        #expect(range.exitStatus == (running ? 9 : 2), "running \(running): \(range.exitStatus) \(range.errorText)")
        #expect(range.errorText.contains(running ? "being written by another download" : "working file of an interrupted download"),
                "\(range.errorText)")
        #expect(!FileManager.default.fileExists(atPath: output) || running, "the range saved nothing under the name")
        #expect(FileManager.default.fileExists(atPath: journal), "the download's journal is kept")
        #expect(try FileManager.default.attributesOfItem(atPath: part)[.size] as? Int == partBefore, "its .part is untouched")
        if running {
            #expect(poll(within: 120) { !download.isRunning })
            download.waitUntilExit()
            #expect(download.terminationStatus == 0)
        } else {
            let resumed = try haul(["-o", output, fixture.nginx.url("/big.bin")])
            #expect(resumed.exitStatus == 0, "\(resumed.errorText)")
        }
        #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
    }

    // MARK: Two runs of one list at once

    /// Two `haul -i LIST -d DIR` at once: a small file has no name until it is complete (O_TMPFILE), so both
    /// fetch it and the one that names it second finds the name taken — "already exists", exit 9, its copy
    /// kept as `NAME.part`, as for any name that appears while a download fetches. But since a `.part` beside a
    /// finished file made the list's check call for the engine, every later run of the list exited 9 too, for
    /// each such file, until the `.part` files were removed by hand. A `.part` without a journal is nothing
    /// any run resumes: for the next run the files are already complete.
    @Test func twoRunsOfOneListAtOnceGiveTheRightFilesAndTheNextRunEndsWell() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let count = 400
        let list = directory + "/list.txt", output = directory + "/out"
        try (0..<count).map { "\(fixture.nginx.url("/f\($0 % 20).bin"))\tout=n\($0).bin" }.joined(separator: "\n")
            .write(toFile: list, atomically: false, encoding: .utf8)
        let arguments = ["--no-sync", "-q", "-j", "8", "-i", list, "-d", output]
        let runs = try (0..<2).map { try startHaul(arguments, errors: directory + "/errors\($0).txt") }
        defer { for run in runs where run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        for (index, run) in runs.enumerated() {
            #expect(poll(within: 120) { !run.isRunning })
            run.waitUntilExit()
            let errors = String(decoding: FileManager.default.contents(atPath: directory + "/errors\(index).txt") ?? Data(), as: UTF8.self)
            // 0, or 9 for files the other run named first or held (each such line says so).
            let lines = errors.split(separator: "\n")
            let racedFor = { (line: Substring) in
                line.hasSuffix("already exists (use --allow-overwrite to replace it, or --skip-existing)") || line.contains("is being written by another download")
            }
            #expect(run.terminationStatus == 0 || (run.terminationStatus == 9 && lines.allSatisfy(racedFor)),
                    "\(run.terminationStatus): \(lines.prefix(3))")
        }
        for index in 0..<count {
            #expect(try TestFiles.sha256(ofFile: output + "/n\(index).bin") == fixture.sha256("f\(index % 20).bin"), "n\(index).bin")
        }
        let again = try ChildProcess.run(HaulCLITests.binary, ["--no-sync", "-j", "8", "-i", list, "-d", output], timeout: 120)
        #expect(again.exitStatus == 0, "\(again.errorText.split(separator: "\n").prefix(3))")
        #expect(again.errorText.components(separatedBy: "already complete").count - 1 == count)
    }
}

