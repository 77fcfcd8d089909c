import Glibc
import Testing
@testable import HaulIO

/// `ChildProcesses.run`: a command's output, bounded in size and time, with its whole process group killed at
/// the timeout.
@Suite struct ChildProcessOutputTests {
    func run(_ command: String, timeout: Duration = .seconds(10), limit: Int = 1024,
             environment: [String: String] = [:]) throws -> CommandOutcome {
        try ChildProcesses.run(["/bin/sh", "-c", command], environment: environment, timeout: timeout, outputLimit: limit)
    }

    @Test func theOutputAndExitStatusComeBack() throws {
        let outcome = try run("printf '%s\\n' \"$HAUL_URL\"; exit 3", environment: ["HAUL_URL": "http://a.test/x"])
        #expect(outcome == CommandOutcome(end: .exited(3), output: Array("http://a.test/x\n".utf8)))
    }

    @Test func outputPastTheLimitIsNotRead() throws {
        let outcome = try run("yes 0123456789", limit: 100)
        #expect(outcome.output.count == 100 && outcome.outputTruncated)
        // `yes` ends by SIGPIPE once the pipe is closed (or is killed at the timeout, well after).
        #expect(outcome.end == .exited(128 + SIGPIPE))
    }

    @Test func aCommandPastItsTimeoutIsKilledWithWhatItStarted() throws {
        let started = ContinuousClock.now
        let outcome = try run("echo started; sleep 30 & wait", timeout: .milliseconds(300))
        #expect(outcome.end == .timedOut && outcome.output == Array("started\n".utf8))
        #expect(ContinuousClock.now - started < .seconds(10), "the background sleep holds the pipe, but not the run")
        // A command that closed its output and lives on is waited for only up to the timeout too.
        let closed = try run("exec >&-; sleep 30", timeout: .milliseconds(300))
        #expect(closed.end == .timedOut && closed.output.isEmpty)
    }
}
