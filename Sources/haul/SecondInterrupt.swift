import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// The second SIGINT or SIGTERM: say what happens, then exit at once with 130.
///
/// ``StopSignals`` (HaulCommandLine) turns the first signal into a clean pause; its C handler would end the process
/// silently on the second. Right after the first arrives (before the pause begins, so before haul says it
/// is saving progress) the CLI puts these handlers in its place: each `write(2)`s one constant line and
/// calls `_exit(2)` — both async-signal-safe; nothing is allocated, locked or formatted in the handler.
enum SecondInterrupt {
    enum Form {
        /// A plain line, for a log or pipe.
        case text
        /// The same after clearing the live bar's line.
        case terminal
        /// A JSON error object (`--progress json`).
        case json
    }

    static func install(_ form: Form) {
        var action = sigaction()
        switch form {
        case .text: action.__sigaction_handler.sa_handler = onText
        case .terminal: action.__sigaction_handler.sa_handler = onTerminal
        case .json: action.__sigaction_handler.sa_handler = onJSON
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
        sigaction(SIGTERM, &action, nil)
    }
}

private func writeAndExit(_ line: StaticString) -> Never {
    _ = write(2, line.utf8Start, line.utf8CodeUnitCount)
    _exit(130)
}

private let onText: @convention(c) (Int32) -> Void = { _ in writeAndExit(InterruptText.secondInterruptLine) }
private let onTerminal: @convention(c) (Int32) -> Void = { _ in writeAndExit(InterruptText.secondInterruptTerminalLine) }
private let onJSON: @convention(c) (Int32) -> Void = { _ in writeAndExit(InterruptText.secondInterruptJSONLine) }
