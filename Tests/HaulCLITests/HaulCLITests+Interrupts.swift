import Foundation
import Glibc
import Testing
import HaulTestSupport

/// Stopping a download and running it again: SIGINT pauses with exit 130 and a rerun resumes, a second
/// interrupt exits at once, and a second haul on the same output is refused.
extension HaulCLITests {
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

    @Test func aSecondHaulOnTheSameOutputIsRefusedAndTouchesNothing() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let first = Process()
        first.executableURL = URL(fileURLWithPath: Self.binary)
        // Larger than one checkpoint window: its `.part` (and journal) from the first response. (A smaller fresh
        // file has no name until it is done; a second run then finds it only at the end: exit 9 too, see
        // `NameCollisionCLITests`.)
        first.arguments = ["--no-sync", "-c", "4", "-q", "--limit-rate", Self.paced, "--checkpoint-bytes", "1M", "-o", output,
                           fixture.nginx.url("/big.bin")]
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
}
