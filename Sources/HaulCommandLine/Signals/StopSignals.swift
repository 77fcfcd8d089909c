import CHaulSystem
import Glibc
import HaulIO

/// SIGINT and SIGTERM, turned into a call on a thread of their own, so that a program can stop cleanly
/// (write its journal, then exit) instead of dying mid-write. A second signal ends the process at once.
///
/// Signals belong to the program, not to a library embedded in it, so this lives with the command line
/// (the `haul` CLI and the session daemon install it; the engine never does).
public enum StopSignals {
    /// Installs the handlers; `onStop` runs once, on a dedicated thread, with the signal number.
    /// A second SIGINT or SIGTERM exits immediately with `immediateExitStatus`.
    public static func install(immediateExitStatus: Int32, onStop: @escaping @Sendable (Int32) -> Void) throws(SystemError) {
        var fds: [Int32] = [0, 0]
        _ = try blockingSyscall("pipe2") { haul_pipe2_nonblocking(&fds) }
        let readEnd = fds[0], writeEnd = fds[1]
        // The reader blocks, so its end must block; the handler's write end stays non-blocking.
        let flags = fcntl(readEnd, F_GETFL)
        _ = fcntl(readEnd, F_SETFL, flags & ~O_NONBLOCK)
        try PosixThread.spawnDetached(name: "haul-signals") {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 { return onStop(Int32(byte)) }
                if count < 0 && errno == EINTR { continue }
                return
            }
        }
        _ = try blockingSyscall("sigaction") { haul_install_stop_signals(writeEnd, immediateExitStatus) }
    }
}
