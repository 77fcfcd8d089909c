import CHaulSystem
import Glibc
import HaulIO
import SystemPackage

/// SIGINT, SIGTERM and SIGHUP, turned into a call on a thread of their own, so that a program can stop
/// cleanly (write its journal, then exit) instead of dying mid-write. What a later signal does is
/// ``StopSignalPolicy``: ignored until the program ``acknowledge(exitLine:)``s the stop, then a SIGINT or
/// SIGTERM ends the process at once.
///
/// Signals belong to the program, not to a library embedded in it, so this lives with the command line
/// (the `haul` CLI and the session daemon install it; the engine never does).
public enum StopSignals {
    /// Installs the handlers; `onStop` runs once, on a dedicated thread, with the signal number. An
    /// immediate exit (after ``acknowledge(exitLine:)``) uses `immediateExitStatus`.
    public static func install(immediateExitStatus: Int32, onStop: @escaping @Sendable (Int32) -> Void) throws(SystemError) {
        let pipe = try FileDescriptor.openingSignalPipe()
        try PosixThread.spawnDetached(name: "haul-signals") {
            var byte: UInt8 = 0
            // swift-system's read retries EINTR; the pipe's write end is never closed, so only a signal's byte
            // (or a failure) ends the wait.
            guard let count = try? withUnsafeMutableBytes(of: &byte, { try pipe.readEnd.read(into: $0) }), count == 1 else { return }
            onStop(Int32(byte))
        }
        let table = StopSignalPolicy.table
        let window = StopSignalPolicy.sameDeliveryWindow.components
        let windowNanoseconds = window.seconds * 1_000_000_000 + window.attoseconds / 1_000_000_000
        _ = try blockingSyscall("sigaction") {
            haul_install_stop_signals(pipe.writeEnd.rawValue, immediateExitStatus, table, windowNanoseconds)
        }
    }

    /// Says that the user now knows a second signal quits (the program printed so): from now on a SIGINT or
    /// SIGTERM writes `exitLine` to stderr and exits at once. Only the first call counts; `exitLine` is copied
    /// (at most 1024 bytes) since the handler may not allocate.
    public static func acknowledge(exitLine: StaticString) {
        haul_acknowledge_stop(UnsafeRawPointer(exitLine.utf8Start).assumingMemoryBound(to: CChar.self), exitLine.utf8CodeUnitCount)
    }
}
