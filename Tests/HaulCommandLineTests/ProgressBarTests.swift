import Testing
import Haul
import HaulCommandLine

/// A snapshot of a 1 GiB download: 431.2 MiB written by eight connections at 118.4 MiB/s.
func sampleProgress(total: Int64? = 1 << 30, bytesDone: Int64 = 452_145_152, rate: Double = 118.4 * 1_048_576,
                    eta: Duration? = .seconds(5), connections: Int = 8, phase: DownloadProgress.Phase = .downloading,
                    completed: [Range<Int64>] = [], segments: [DownloadProgress.Segment] = [],
                    elapsed: Duration = .seconds(42)) -> DownloadProgress {
    DownloadProgress(phase: phase, bytesDone: bytesDone, total: total, bytesPerSecond: rate,
                     estimatedTimeRemaining: eta, activeConnections: connections, completedRanges: completed,
                     segments: segments, elapsed: elapsed, partialPath: "/tmp/file.part")
}

@Suite struct SegmentMapTests {
    @Test func fillGlyphsFollowTheWrittenFractionOfEachCell() {
        // 10 cells of 100 bytes: full, 70%, 40%, 10%, empty, then full again from completed ranges.
        let progress = sampleProgress(total: 1000, bytesDone: 0, completed: [0..<170, 200..<240, 300..<310, 500..<1000])
        #expect(SegmentMap.render(progress, cells: 10) == "█▓▒░·█████")
    }

    @Test func segmentsWrittenPartsCountAndActiveWriteFrontsAreMarked() {
        let segments = [
            DownloadProgress.Segment(start: 0, next: 250, end: 500, isActive: true),
            DownloadProgress.Segment(start: 500, next: 700, end: 1000, isActive: false),
        ]
        let progress = sampleProgress(total: 1000, bytesDone: 450, segments: segments)
        // Cell 2 holds byte 250, the active write front; the idle segment shows only as fill.
        #expect(SegmentMap.render(progress, cells: 10) == "██▸··██···")
    }

    @Test func overlappingRangesAreNotCountedTwice() {
        let segments = [DownloadProgress.Segment(start: 0, next: 50, end: 100, isActive: false)]
        let progress = sampleProgress(total: 100, bytesDone: 50, completed: [0..<50], segments: segments)
        #expect(SegmentMap.render(progress, cells: 2) == "█·")
    }

    @Test func unknownTotalHasNoMapAndEmptyFilesAreFull() {
        #expect(SegmentMap.render(sampleProgress(total: nil), cells: 20) == "")
        #expect(SegmentMap.render(sampleProgress(total: 0, bytesDone: 0), cells: 5) == "█████")
        #expect(SegmentMap.render(sampleProgress(), cells: 0) == "")
    }

    @Test func moreCellsThanBytesStillDrawsEveryCell() {
        let progress = sampleProgress(total: 3, bytesDone: 1, completed: [0..<1])
        let map = SegmentMap.render(progress, cells: 12)
        #expect(map.count == 12)
        #expect(map.hasPrefix("█"))
        #expect(map.hasSuffix("·"))
    }

    @Test func hugeFilesDoNotOverflow() {
        let total = Int64.max - 1
        let progress = sampleProgress(total: total, bytesDone: total / 2, completed: [0..<(total / 2)])
        #expect(SegmentMap.render(progress, cells: 4) == "██··")
    }
}

@Suite struct ProgressBarTests {
    let bar = ProgressBar(name: "ubuntu-24.04-desktop-amd64.iso")

    @Test(arguments: [40, 80, 200])
    func fitsTheWidthAndShowsTheEssentials(columns: Int) {
        let line = bar.line(for: sampleProgress(), columns: columns)
        #expect(TerminalText.width(line) <= columns, "\(line)")
        #expect(line.contains("42%"))
        #expect(!line.contains("\n"))
        if columns >= 80 {
            #expect(line.contains("431.2 MiB/1.0 GiB"))
            #expect(line.contains("118.4 MiB/s"))
            #expect(line.contains("ETA 0:05"))
            #expect(line.contains("8 conn"))
            #expect(line.contains("["))
        }
    }

    @Test func mapIsAtMostFortyCellsAndShrinksBeforeItDrops() {
        func mapCells(_ columns: Int) -> Int? {
            let line = bar.line(for: sampleProgress(), columns: columns)
            guard let open = line.firstIndex(of: "["), let close = line.firstIndex(of: "]") else { return nil }
            return line.distance(from: open, to: close) - 1
        }
        #expect(mapCells(200) == 40)
        #expect(mapCells(120) == 40)
        #expect(mapCells(80).map { (10...39).contains($0) } == true)
        #expect(mapCells(40) == nil)
        var previous = Int.max
        for columns in stride(from: 200, through: 50, by: -1) {
            let cells = mapCells(columns) ?? 0
            #expect(cells <= previous, "map grew at \(columns) columns")
            #expect(cells == 0 || cells >= ProgressBar.minimumMapCells)
            previous = cells
        }
    }

    @Test func neverExceedsAnyWidth() {
        let names = ["a", "ubuntu-24.04-desktop-amd64.iso", "日本語のファイル名がとても長い.zip", "e\u{301}te\u{301}.txt", ""]
        let snapshots = [
            sampleProgress(), sampleProgress(total: nil), sampleProgress(rate: 0, eta: nil),
            sampleProgress(phase: .connecting), sampleProgress(bytesDone: 1 << 30, phase: .completed),
        ]
        for name in names {
            for progress in snapshots {
                for columns in 0...220 {
                    let line = ProgressBar(name: name).line(for: progress, columns: columns)
                    #expect(TerminalText.width(line) <= columns, "\(columns): \(line)")
                }
            }
        }
    }

    @Test func exactLayoutAtTwoHundredColumns() {
        let progress = sampleProgress(total: 1000, bytesDone: 500, rate: 100, completed: [0..<500])
        let line = ProgressBar(name: "file.iso").line(for: progress, columns: 200)
        #expect(line == "file.iso   50% [" + String(repeating: "█", count: 20) + String(repeating: "·", count: 20)
            + "]     500 B/1.0 KiB     100 B/s ETA 0:05 8 conn")
    }

    @Test func unknownTotalShowsBytesAndElapsedButNoPercentOrMap() {
        let line = ProgressBar(name: "stream.bin").line(for: sampleProgress(total: nil), columns: 80)
        #expect(line == "stream.bin  431.2 MiB 118.4 MiB/s elapsed 0:42 8 conn")
    }

    @Test func zeroRateAndUnknownETAShowDashes() {
        let line = ProgressBar(name: "f").line(for: sampleProgress(rate: 0, eta: nil), columns: 200)
        #expect(line.contains("0 B/s ETA --:--"))
    }

    @Test func phasesOtherThanDownloadingShowWhatIsHappening() {
        #expect(bar.line(for: sampleProgress(bytesDone: 0, phase: .connecting), columns: 120).contains("connecting"))
        #expect(bar.line(for: sampleProgress(phase: .paused), columns: 120).contains("paused"))
        let done = bar.line(for: sampleProgress(bytesDone: 1 << 30, phase: .completed), columns: 120)
        #expect(done.contains("100%"))
        #expect(done.contains("done"))
    }

    @Test func percentIsNeverHundredBeforeTheLastByte() {
        let line = bar.line(for: sampleProgress(total: 10_000, bytesDone: 9_999), columns: 120)
        #expect(line.contains(" 99%"))
    }

    @Test func longNamesAreCutInTheMiddleAndControlCharactersNeutralised() {
        let line = bar.line(for: sampleProgress(), columns: 200)
        #expect(line.hasPrefix("ubuntu-24.04…p-amd64.iso   42% ["))
        let nasty = ProgressBar(name: "evil\u{1B}[2J\nname").line(for: sampleProgress(), columns: 120)
        #expect(nasty.hasPrefix("evil?[2J?name"))
        #expect(!nasty.unicodeScalars.contains { $0.value < 0x20 })
    }

    @Test func narrowTerminalsDropFieldsThenCut() {
        #expect(bar.line(for: sampleProgress(), columns: 60) == "ubuntu…4.iso   42% 431.2 MiB/1.0 GiB 118.4 MiB/s ETA 0:05")
        #expect(bar.line(for: sampleProgress(), columns: 40) == "ubuntu…4.iso   42% 431.2 MiB 118.4 MiB/s")
        #expect(bar.line(for: sampleProgress(), columns: 20) == "ubuntu…4.iso   42%")
        #expect(bar.line(for: sampleProgress(), columns: 12) == "ub…o   42%")
        #expect(bar.line(for: sampleProgress(), columns: 5) == "ub…o ")
    }

    @Test func redrawReturnsToTheLineStartAndClearsItsEnd() {
        let redraw = bar.redraw(for: sampleProgress(), columns: 80)
        #expect(redraw.hasPrefix("\r"))
        #expect(redraw.hasSuffix("\u{1B}[K"))
        #expect(redraw == ProgressBar.redraw(line: bar.line(for: sampleProgress(), columns: 79)))
        #expect(ProgressBar.redraw(line: "x") == "\rx\u{1B}[K")
    }
}

@Suite struct TerminalTextTests {
    @Test func widthCountsColumnsNotCharacters() {
        #expect(TerminalText.width("abc") == 3)
        #expect(TerminalText.width("日本") == 4)
        #expect(TerminalText.width("e\u{301}") == 1)
        #expect(TerminalText.width("█▓▒░·▸") == 6)
    }

    @Test func truncatedMiddleKeepsBothEnds() {
        #expect(TerminalText.truncatedMiddle("ubuntu-24.04-desktop-amd64.iso", columns: 16) == "ubuntu-2…d64.iso")
        #expect(TerminalText.truncatedMiddle("short", columns: 16) == "short")
        #expect(TerminalText.truncatedMiddle("日本語ファイル", columns: 7) == "日…イル")
        #expect(TerminalText.width(TerminalText.truncatedMiddle("日本語ファイル", columns: 6)) <= 6)
    }
}
