import CHaulSystem
import Glibc
import HaulIO
import SystemPackage

/// SIGINT and SIGTERM, turned into a call on a thread of their own, so that a program can stop cleanly
/// (write its journal, then exit) instead of dying mid-write. A second signal ends the process at once.
///
/// Signals belong to the program, not to a library embedded in it, so this lives with the command line
/// (the `haul` CLI and the session daemon install it; the engine never does).
public enum StopSignals {
    /// Installs the handlers; `onStop` runs once, on a dedicated thread, with the signal number.
    /// A second SIGINT or SIGTERM exits immediately with `immediateExitStatus`.
    public static func install(immediateExitStatus: Int32, onStop: @escaping @Sendable (Int32) -> Void) throws(SystemError) {
        let pipe = try FileDescriptor.openingSignalPipe()
        try PosixThread.spawnDetached(name: "haul-signals") {
            var byte: UInt8 = 0
            // swift-system's read retries EINTR; the pipe's write end is never closed, so only a signal's byte
            // (or a failure) ends the wait.
            guard let count = try? withUnsafeMutableBytes(of: &byte, { try pipe.readEnd.read(into: $0) }), count == 1 else { return }
            onStop(Int32(byte))
        }
        _ = try blockingSyscall("sigaction") { haul_install_stop_signals(pipe.writeEnd.rawValue, immediateExitStatus) }
    }
}
