import Haul

/// The one-line progress display for a terminal, redrawn in place:
///
/// ```
/// ubuntu-24.04.iso   42% [████████▓▸·····▸·····]  431.2 MiB/1.0 GiB 118.4 MiB/s ETA 0:05 8 conn
/// ```
///
/// Fields, left to right: the file name (middle cut with `…` when long), percent done, the
/// ``SegmentMap`` in brackets, bytes written / total, the rate, the time left (or what the download is
/// doing when it is not downloading: `connecting`, `finishing`, `paused`, `done`, `failed`, `cancelled`) and
/// the number of connections transferring. With an unknown total there is no percent and no map, the
/// amount is the bytes so far, and the time slot shows the time elapsed.
///
/// The line never exceeds the given width. As the terminal narrows it gives things up in this order: the
/// name shrinks to 24 columns and the map from 40 cells to 16; the name shrinks to 12; the map shrinks to
/// 10; the connection count goes; the map goes (and the connection count comes back while it fits); the total goes; then the time, the rate and the amount; the
/// name shrinks to 4; and on absurdly narrow terminals the line is simply cut. Numbers are padded to fixed
/// widths so the map does not change size from one redraw to the next.
///
/// Rendering is pure: it returns strings and never writes.
public struct ProgressBar: Sendable {
    /// The name shown first, usually the output file's name. Control characters are shown as `?`.
    public var name: String

    /// Most cells the segment map takes, however wide the terminal.
    public static let maximumMapCells = 40
    /// Fewest cells worth drawing; below this the map is dropped.
    public static let minimumMapCells = 10

    public init(name: String) {
        self.name = name
    }

    /// The line for `progress`, at most `columns` wide (empty if `columns` is not positive).
    public func line(for progress: DownloadProgress, columns: Int) -> String {
        guard columns > 0 else { return "" }
        let fields = Fields(progress: progress, name: TerminalText.sanitized(name.isEmpty ? "-" : name))
        let hasMap = progress.total != nil

        if hasMap, let text = lineWithMap(fields, progress: progress, columns: columns) { return text }
        // Without a map: drop fields one at a time.
        let plainAttempts: [Layout] = [
            Layout(nameCap: 24),
            Layout(nameCap: 12),
            Layout(nameCap: 12, connections: false),
            Layout(nameCap: 12, connections: false, total: false),
            Layout(nameCap: 12, connections: false, total: false, time: false),
            Layout(nameCap: 12, connections: false, total: false, time: false, rate: false),
            Layout(nameCap: 12, connections: false, total: false, time: false, rate: false, amount: !hasMap),
            Layout(nameCap: 4, connections: false, total: false, time: false, rate: false, amount: !hasMap),
        ]
        for layout in plainAttempts {
            let text = fields.compose(layout, map: nil)
            if TerminalText.width(text) <= columns { return text }
        }
        return TerminalText.prefix(fields.compose(plainAttempts.last!, map: nil), columns: columns)
    }

    /// The line with a segment map, or nil when not even the smallest map fits.
    ///
    /// Each step below starts where the previous one gave up, so as the width shrinks the map and the name
    /// only ever shrink: the name to 24 columns with the map down to 16 cells; the name down to 12 with the
    /// map at 16; the map down to 10; then the connection count goes and the map stays at 10.
    private func lineWithMap(_ fields: Fields, progress: DownloadProgress, columns: Int) -> String? {
        let nameWidth = TerminalText.width(fields.name)
        let longName = min(nameWidth, 24), shortName = min(nameWidth, 12)
        let preferredCells = 16, minimumCells = Self.minimumMapCells
        for connections in [true, false] {
            var layout = Layout(nameCap: 0, connections: connections)
            // Columns left for the name and the map cells, measured untrimmed so the map keeps its size
            // while the time text changes length.
            let available = columns - TerminalText.width(fields.compose(layout, map: "", trimmed: false))
            let cells: Int
            if connections && available - longName >= preferredCells {
                layout.nameCap = longName
                cells = min(Self.maximumMapCells, available - longName)
            } else if connections && available - shortName >= preferredCells {
                layout.nameCap = available - preferredCells
                cells = preferredCells
            } else if connections && available - shortName >= minimumCells {
                layout.nameCap = shortName
                cells = available - shortName
            } else if !connections && available - shortName >= minimumCells {
                layout.nameCap = shortName
                cells = minimumCells
            } else {
                continue
            }
            return fields.compose(layout, map: SegmentMap.render(progress, cells: cells))
        }
        return nil
    }

    /// What to write to redraw the line in place: carriage return, the line, and erase-to-end-of-line
    /// (`\r` + line + `ESC[K`).
    ///
    /// The line is rendered one column narrower than the terminal: writing the last column leaves many
    /// terminals about to wrap, and the next `\r` would then start a new line instead of redrawing this one.
    public func redraw(for progress: DownloadProgress, columns: Int) -> String {
        Self.redraw(line: line(for: progress, columns: columns - 1))
    }

    /// `\r` + `line` + `ESC[K`: returns to the start of the line, writes it, and clears what an earlier,
    /// longer line left to its right.
    public static func redraw(line: String) -> String {
        "\r" + line + "\u{1B}[K"
    }

    /// Which fields a layout attempt shows.
    struct Layout {
        var nameCap: Int
        var connections = true
        var total = true
        var time = true
        var rate = true
        var amount = true
    }

    /// The texts of the fields, computed once per line.
    struct Fields {
        let name: String
        let percent: String?
        let done: String
        let total: String?
        let rate: String
        let time: String
        let connections: String

        init(progress: DownloadProgress, name: String) {
            self.name = name
            if let total = progress.total {
                let percent: Int
                if total <= 0 || progress.bytesDone >= total {
                    percent = 100
                } else {
                    // Never 100% before the last byte; floor so 99.6% shows 99%.
                    percent = min(99, max(0, Int(Double(progress.bytesDone) / Double(total) * 100)))
                }
                self.percent = TerminalText.padLeft("\(percent)%", to: 4)
                self.total = UnitFormatting.bytes(total)
            } else {
                percent = nil
                total = nil
            }
            done = TerminalText.padLeft(UnitFormatting.bytes(progress.bytesDone), to: 9)
            rate = TerminalText.padLeft(UnitFormatting.rate(progress.bytesPerSecond), to: 11)
            time = TerminalText.padRight(Self.timeText(progress), to: 8)
            connections = "\(progress.activeConnections) conn"
        }

        static func timeText(_ progress: DownloadProgress) -> String {
            switch progress.phase {
            case .connecting: "connecting"
            case .finishing: "finishing"
            case .paused: "paused"
            case .completed: "done"
            case .failed: "failed"
            case .cancelled: "cancelled"
            case .downloading:
                if progress.total == nil {
                    "elapsed " + UnitFormatting.clock(progress.elapsed)
                } else {
                    "ETA " + (progress.estimatedTimeRemaining.map(UnitFormatting.clock) ?? "--:--")
                }
            }
        }

        /// The line with `layout`'s fields and, unless `map` is nil, ` [map]` after the percent.
        func compose(_ layout: Layout, map: String?, trimmed: Bool = true) -> String {
            let shownName = TerminalText.truncatedMiddle(name, columns: layout.nameCap)
            var line = shownName + "  "
            var stats: [String] = []
            if let percent {
                stats.append(map.map { percent + " [" + $0 + "]" } ?? percent)
            }
            if layout.amount {
                stats.append(layout.total && total != nil ? done + "/" + total! : done)
            }
            if layout.rate { stats.append(rate) }
            if layout.time { stats.append(time) }
            if layout.connections { stats.append(connections) }
            line += stats.joined(separator: " ")
            // Trailing padding (of the time field) is no use at the end of a line.
            while trimmed && line.last == " " { line.removeLast() }
            return line
        }
    }
}
