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
        // A closed stderr or stdout (`haul URL 2>&1 | head -1`, `haul -o - URL | head`) must be an EPIPE that
        // haul handles (``StandardError``, HaulError.outputClosed), not a signal that kills it mid-download.
        // Set before any thread starts, so every thread inherits it; children reset it (ChildProcesses).
        signal(SIGPIPE, SIG_IGN)
        Task.detached { await HaulCommand.start() }
        var nothingBlocked = sigset_t()
        sigemptyset(&nothingBlocked)
        while true { sigsuspend(&nothingBlocked) }
    }
}
