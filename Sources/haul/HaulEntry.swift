#if canImport(Glibc)
import Glibc
#endif

/// The process entry: runs ``HaulCommand/start()`` as a task and parks the main thread until it exits the
/// process.
///
/// Not an `async` main on purpose. Swift's async main hands the main thread to `dispatch_main`, which ends it
/// with `pthread_exit`; that unwinds the thread's stack through libgcc, which binary-searches the executable's
/// unwind tables (`.eh_frame_hdr`, `.eh_frame`) and faulted in about 0.4 MiB of them, a twentieth of the
/// CLI's peak RSS, for nothing. Nothing in haul runs on the main actor or the main dispatch queue, so the
/// parked thread is never needed for work.
///
/// It is needed for signals: it waits as `dispatch_main` left it, in `sigsuspend` with every signal
/// unblocked. haul's other threads start from Swift's thread pool and inherit its mask, which blocks SIGINT
/// and SIGTERM, and haul may have been started with them blocked (a parent that spawns from such a thread);
/// this thread is then the one that runs the stop handlers (``StopSignals``).
@main
enum HaulEntry {
    static func main() {
        Task.detached { await HaulCommand.start() }
        var nothingBlocked = sigset_t()
        sigemptyset(&nothingBlocked)
        while true { sigsuspend(&nothingBlocked) }
    }
}
