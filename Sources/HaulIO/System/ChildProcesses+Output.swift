import CHaulSystem
import Glibc

/// What a command run by ``ChildProcesses/run(_:environment:timeout:outputLimit:)`` did.
package struct CommandOutcome: Sendable, Equatable {
    package enum End: Sendable, Equatable {
        /// It ended by itself with this status (128 + N when signal N killed it).
        case exited(Int32)
        /// It was still running at the timeout, and was killed with its process group.
        case timedOut
    }

    package var end: End
    /// What it wrote to its standard output, at most the limit.
    package var output: [UInt8]
    /// Whether it wrote more than the limit (the rest was not read).
    package var outputTruncated: Bool

    package init(end: End, output: [UInt8], outputTruncated: Bool = false) {
        self.end = end
        self.output = output
        self.outputTruncated = outputTruncated
    }
}

extension ChildProcesses {
    /// Runs `arguments` (stdin `/dev/null`, stderr this process's) and returns once it has ended, with at
    /// most `outputLimit` bytes of its standard output. Blocking: call it from ``BlockingWork``.
    ///
    /// Bounded in time: at `timeout` the child's process group (it leads one of its own, so `sh -c` and what
    /// it started go together) is killed with `SIGKILL`. Bounded in memory: output past the limit is not
    /// read (the pipe is closed, so a child that keeps writing gets `SIGPIPE`).
    package static func run(_ arguments: [String], environment: [String: String], timeout: Duration,
                            outputLimit: Int) throws(SystemError) -> CommandOutcome {
        var ends: [CInt] = [-1, -1]
        // Close-on-exec from the start, so that no other child started meanwhile inherits an end; blocking
        // again (the child's stdout must be, and the read end is polled first).
        _ = try blockingSyscall("pipe2") { haul_pipe2_nonblocking(&ends) }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        for end in [readEnd, writeEnd] {
            let flags = (try? blockingSyscall("fcntl") { fcntl(end, F_GETFL) }) ?? 0
            _ = try? blockingSyscall("fcntl") { fcntl(end, F_SETFL, flags & ~O_NONBLOCK) }
        }
        let pid: pid_t
        do {
            pid = try spawn(arguments, environment: environment, outputPath: nil, newSession: false,
                            standardOutput: writeEnd, newProcessGroup: true)
        } catch {
            close(readEnd)
            close(writeEnd)
            throw error
        }
        close(writeEnd)
        let deadline = MonotonicInstant.now().advanced(by: timeout)
        var output: [UInt8] = []
        var truncated = false
        var chunk = [UInt8](repeating: 0, count: 4096)
        // Read until the output ends, passes the limit, or the time is up; a failed poll or read (none is
        // expected of a pipe) ends the reading as an end of output would.
        while true {
            let left = deadline.nanoseconds(since: .now())
            guard left > 0 else { break }
            var descriptor = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            guard let ready = try? blockingSyscall("poll", { poll(&descriptor, 1, CInt(clamping: left / 1_000_000 + 1)) }) else { break }
            guard ready > 0 else { continue }   // the deadline is checked at the top
            let count = (try? blockingSyscall("read") { chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) } }) ?? 0
            guard count > 0 else { break }
            let room = outputLimit - output.count
            output += chunk[0..<min(count, room)]
            if count > room {
                truncated = true
                break
            }
        }
        close(readEnd)
        // The output ended; the process may still run (it closed its stdout, or a child of it holds none).
        while MonotonicInstant.now() < deadline {
            var status: Int32 = 0
            guard let reaped = try? blockingSyscall("waitpid", { waitpid(pid, &status, WNOHANG) }) else {
                return CommandOutcome(end: .exited(255), output: output, outputTruncated: truncated)
            }
            if reaped == pid { return CommandOutcome(end: .exited(exitStatus(status)), output: output, outputTruncated: truncated) }
            usleep(5_000)
        }
        kill(-pid, SIGKILL)
        _ = wait(for: pid)
        return CommandOutcome(end: .timedOut, output: output, outputTruncated: truncated)
    }

    /// WIFEXITED / WEXITSTATUS / WTERMSIG, which are macros Swift cannot import.
    static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }
}
