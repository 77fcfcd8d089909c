import HaulCommandLine

/// The second SIGINT or SIGTERM: say what happens, then exit at once with 130.
///
/// ``StopSignals`` (HaulCommandLine) turns the first signal into a clean pause. Once haul has said that it is
/// saving progress, ``acknowledge(_:)`` arms the immediate exit with the line for the output in use: the C
/// handler then `write(2)`s that constant line and calls `_exit(2)` — both async-signal-safe. Until then a
/// repeated signal is the same stop (``StopSignalPolicy``).
enum SecondInterrupt {
    enum Form {
        /// A plain line, for a log or pipe.
        case text
        /// The same after clearing the live bar's line.
        case terminal
        /// A JSON error object (`--progress json`).
        case json
    }

    static func acknowledge(_ form: Form) {
        switch form {
        case .text: StopSignals.acknowledge(exitLine: InterruptText.secondInterruptLine)
        case .terminal: StopSignals.acknowledge(exitLine: InterruptText.secondInterruptTerminalLine)
        case .json: StopSignals.acknowledge(exitLine: InterruptText.secondInterruptJSONLine)
        }
    }
}
