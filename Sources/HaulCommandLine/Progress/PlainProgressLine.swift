import Haul

/// Progress for output that is not a terminal (a log file, a CI console): a whole line now and then,
/// never a carriage return or an escape sequence.
///
/// ```
/// haul: file.iso 42% 431.2 MiB of 1.0 GiB at 118.4 MiB/s, ETA 0:05
/// haul: stream.bin 431.2 MiB at 118.4 MiB/s, 0:42 elapsed
/// haul: file.iso 100% 1.0 GiB of 1.0 GiB in 0:09, done
/// ```
///
/// ``PlainProgressThrottle`` decides which snapshots deserve a line.
public enum PlainProgressLine {
    /// The line for `progress` (no trailing newline). The name's control characters are shown as `?`.
    public static func line(name: String, progress: DownloadProgress) -> String {
        var text = "haul: " + TerminalText.sanitized(name) + " "
        let done = UnitFormatting.bytes(progress.bytesDone)
        if let total = progress.total {
            let percent = total <= 0 || progress.bytesDone >= total
                ? 100 : min(99, max(0, Int(Double(progress.bytesDone) / Double(total) * 100)))
            text += "\(percent)% \(done) of \(UnitFormatting.bytes(total))"
        } else {
            text += done
        }
        switch progress.phase {
        case .downloading:
            text += " at " + UnitFormatting.rate(progress.bytesPerSecond)
            if progress.total != nil {
                text += ", ETA " + (progress.estimatedTimeRemaining.map(UnitFormatting.clock) ?? "unknown")
            } else {
                text += ", " + UnitFormatting.clock(progress.elapsed) + " elapsed"
            }
        case .connecting: text += ", connecting"
        case .finishing: text += ", finishing"
        case .paused: text += " in " + UnitFormatting.clock(progress.elapsed) + ", paused (run again to resume)"
        case .completed: text += " in " + UnitFormatting.clock(progress.elapsed) + ", done"
        case .failed: text += " in " + UnitFormatting.clock(progress.elapsed) + ", failed"
        case .cancelled: text += ", cancelled"
        }
        return text
    }
}

/// Decides when a ``PlainProgressLine`` is worth printing: at most one line per `interval` or per
/// `percentStep` of progress, whichever comes first, and always the final state.
///
/// - The first snapshot is not printed unless it is final: a line saying 0% is noise.
/// - A line is due when `interval` has passed since the last one (so a stalled download still reports), or
///   when progress entered a new `percentStep` band (10%, 20%, ...) since the last line.
/// - A final phase (`completed`, `failed`, `paused`, `cancelled`) is always printed, once.
///
/// Time is the snapshot's `elapsed` unless a clock reading is passed, so the type is pure and testable.
public struct PlainProgressThrottle: Sendable {
    /// Longest time without a line while the download runs.
    public var interval: Duration
    /// Percent band that earns a line on its own (ignored when the total is unknown).
    public var percentStep: Int

    private var lastTime: Duration?
    private var lastBand: Int?
    private var printedFinal = false

    public init(interval: Duration = .seconds(5), percentStep: Int = 10) {
        self.interval = interval
        self.percentStep = max(1, percentStep)
    }

    /// Whether `progress` should be printed, recording it as printed if so. `now` defaults to
    /// `progress.elapsed`.
    public mutating func shouldPrint(_ progress: DownloadProgress, now: Duration? = nil) -> Bool {
        let now = now ?? progress.elapsed
        let band = progress.fractionDone.map { Int(($0 * 100).rounded(.down)) / percentStep }
        if Self.isFinal(progress.phase) {
            guard !printedFinal else { return false }
            printedFinal = true
            record(now, band)
            return true
        }
        guard !printedFinal else { return false }
        guard let lastTime else {
            // First snapshot: remember where we started, print nothing.
            self.lastTime = now
            lastBand = band
            return false
        }
        if now - lastTime >= interval || (band != nil && band! > (lastBand ?? -1)) {
            record(now, band)
            return true
        }
        return false
    }

    private mutating func record(_ now: Duration, _ band: Int?) {
        lastTime = now
        if let band { lastBand = band }
    }

    static func isFinal(_ phase: DownloadProgress.Phase) -> Bool {
        switch phase {
        case .completed, .failed, .paused, .cancelled: true
        case .connecting, .downloading, .finishing: false
        }
    }
}
