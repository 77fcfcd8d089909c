import Glibc

/// What SIGINT, SIGTERM and SIGHUP do, as a pure table: the C handler (``StopSignals``) only looks it up.
///
/// - The first of them begins a stop: every download pauses after a final checkpoint, then the program exits
///   with ``ExitStatus/interrupted`` (130, whichever signal it was).
/// - A copy of the first signal from the same sender moments later is the same stop
///   (``isSameDelivery(_:as:after:)``), and so is any signal that arrives before the program has said
///   "press Ctrl-C again to quit at once": it is the same
///   stop, not a second one: `timeout -s INT` signals haul and then its whole process group, and a closed
///   terminal sends SIGHUP from the kernel to the foreground group and again from the shell — one event,
///   delivered twice within microseconds, which used to end the process at once with nothing saved.
/// - Once acknowledged, a SIGINT or SIGTERM exits at once: the user asked twice. Whatever the last finished
///   checkpoint recorded stays on disk (journal writes are atomic), so nothing durable is lost.
/// - A SIGHUP never exits at once: a hang-up is not a request, nobody saw the prompt, and the pause under
///   way ends by itself.
public enum StopSignalPolicy {
    public enum Signal: Int, CaseIterable, Sendable {
        case interrupt = 0, terminate = 1, hangUp = 2

        public init?(number: Int32) {
            switch number {
            case SIGINT: self = .interrupt
            case SIGTERM: self = .terminate
            case SIGHUP: self = .hangUp
            default: return nil
            }
        }
    }

    public enum Phase: Int, CaseIterable, Sendable {
        /// No stop signal yet.
        case running = 0
        /// A stop began; the user has not yet been told that another signal quits.
        case stopping = 1
        /// The user has been told (``StopSignals/acknowledge(exitLine:)``).
        case acknowledged = 2
    }

    public enum Action: UInt8, Sendable {
        /// Pause every download, then exit.
        case beginStop = 0
        /// The stop under way covers it.
        case ignore = 1
        /// Exit now, leaving the journals as their last finished checkpoints wrote them.
        case exitNow = 2
    }

    public static func action(for signal: Signal, in phase: Phase) -> Action {
        switch (phase, signal) {
        case (.running, _): .beginStop
        case (.stopping, _): .ignore
        case (.acknowledged, .hangUp): .ignore
        case (.acknowledged, .interrupt), (.acknowledged, .terminate): .exitNow
        }
    }

    /// Who sent a signal, as `siginfo_t` says.
    public struct Sender: Sendable, Equatable {
        /// `si_code`: `SI_USER` for kill(2), `SI_KERNEL` for a terminal's Ctrl-C or hang-up.
        public var code: Int32
        /// `si_pid`.
        public var pid: Int32
        public init(code: Int32, pid: Int32) {
            self.code = code
            self.pid = pid
        }
    }

    /// How long after the first signal a copy of it is the same delivery (``isSameDelivery(_:as:after:)``).
    public static let sameDeliveryWindow: Duration = .milliseconds(250)

    /// Whether `next` is the first stop signal delivered again rather than a second request: the same signal,
    /// sent with kill(2) (`SI_USER`) by the same process, within ``sameDeliveryWindow``. That is `timeout`
    /// passing a signal to haul and then to its process group; a loaded machine can let haul acknowledge the
    /// first in between, so "before the acknowledgement" alone does not catch it. A terminal's Ctrl-C
    /// (`SI_KERNEL`) is never a copy: pressed twice, it means twice. Checked before ``action(for:in:)``.
    public static func isSameDelivery(_ next: (Signal, Sender), as first: (Signal, Sender), after elapsed: Duration) -> Bool {
        next.0 == first.0 && next.1 == first.1 && next.1.code == Int32(SI_USER) && elapsed < sameDeliveryWindow
    }

    /// The table the C handler reads: `[phase * 3 + signal]`.
    public static var table: [UInt8] {
        Phase.allCases.flatMap { phase in Signal.allCases.map { action(for: $0, in: phase).rawValue } }
    }

    /// How a run ends after `events`, in order: a signal, or the program acknowledging the stop, or the
    /// pause finishing (every journal written).
    public enum Event: Sendable, Equatable {
        case signal(Signal)
        case acknowledged
        case pauseFinished
    }

    public enum Ending: Sendable, Equatable {
        /// No signal: the run ends as usual.
        case normally
        /// Paused, every journal written, exit 130.
        case afterPause
        /// Exited at once on this event's signal (the journals are their last finished checkpoints).
        case atOnce(afterEvent: Int)
    }

    public static func ending(of events: [Event]) -> Ending {
        var phase = Phase.running
        for (index, event) in events.enumerated() {
            switch event {
            case .signal(let signal):
                switch action(for: signal, in: phase) {
                case .beginStop: phase = .stopping
                case .ignore: break
                case .exitNow: return .atOnce(afterEvent: index)
                }
            case .acknowledged:
                if phase == .stopping { phase = .acknowledged }
            case .pauseFinished:
                if phase != .running { return .afterPause }
            }
        }
        return phase == .running ? .normally : .afterPause
    }
}
