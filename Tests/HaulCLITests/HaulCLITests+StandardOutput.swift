import Foundation
import Glibc
import Testing
import HaulTestSupport

/// `-o -`: the file in order on standard output, a reader that stops early, a closed standard error.
extension HaulCLITests {
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
}
