import Testing
@testable import HaulIO

/// When a recent free-space figure stands in for a `statvfs` (``FreeSpaceFigures``).
@Suite struct FreeSpaceFiguresTests {
    let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    let plenty: Int64 = 10 << 30

    @Test func aSmallFileIsAnsweredFromARecentFigureThatHandsItsLengthOut() {
        var figures = FreeSpaceFigures()
        #expect(figures.recent(in: "/d", forWriting: 100, at: start) == nil, "nothing measured yet")
        figures.record(plenty, in: "/d", forWriting: 100, at: start)
        let later = start.advanced(by: .milliseconds(500))
        #expect(figures.recent(in: "/d", forWriting: 1000, at: later) == plenty - 100)
        #expect(figures.recent(in: "/d", forWriting: 0, at: later) == plenty - 1100)
        #expect(figures.recent(in: "/elsewhere", forWriting: 0, at: later) == nil)
    }

    @Test func anOldFigureOrALargeFileMeasuresAgain() {
        var figures = FreeSpaceFigures()
        figures.record(plenty, in: "/d", forWriting: 0, at: start)
        #expect(figures.recent(in: "/d", forWriting: 1, at: start.advanced(by: .seconds(1))) == nil)
        #expect(figures.recent(in: "/d", forWriting: FreeSpaceFigures.smallFileLimit + 1, at: start) == nil)
        #expect(figures.recent(in: "/d", forWriting: -1, at: start) == nil, "an unknown length")
        #expect(figures.recent(in: "/d", forWriting: FreeSpaceFigures.smallFileLimit, at: start) == plenty)
    }

    @Test func nearTheMarginEveryFileMeasures() {
        var figures = FreeSpaceFigures()
        figures.record(FreeSpaceFigures.spaceMargin + 500, in: "/d", forWriting: 0, at: start)
        #expect(figures.recent(in: "/d", forWriting: 500, at: start) == FreeSpaceFigures.spaceMargin + 500)
        #expect(figures.recent(in: "/d", forWriting: 1, at: start) == nil, "what would remain is under the margin")
    }

    @Test func manyDirectoriesAreForgottenAllAtOnce() {
        var figures = FreeSpaceFigures()
        for index in 0..<FreeSpaceFigures.directoryLimit {
            figures.record(plenty, in: "/d\(index)", forWriting: 0, at: start)
        }
        #expect(figures.recent(in: "/d0", forWriting: 0, at: start) == plenty)
        figures.record(plenty, in: "/one-more", forWriting: 0, at: start)
        #expect(figures.recent(in: "/d0", forWriting: 0, at: start) == nil)
        #expect(figures.recent(in: "/one-more", forWriting: 0, at: start) == plenty)
    }

    /// ramfs (and some FUSE and network filesystems) report no blocks at all: their free space is unknown,
    /// never "0 available" — a download there used to be refused before its first byte.
    @Test func aFilesystemThatReportsNoSizeHasUnknownSpaceNotNone() {
        #expect(FreeSpaceFigures.available(totalBlocks: 0, availableBlocks: 0, fragmentSize: 4096) == nil)
        #expect(FreeSpaceFigures.available(totalBlocks: 100, availableBlocks: 0, fragmentSize: 4096) == 0, "a full disk is full")
        #expect(FreeSpaceFigures.available(totalBlocks: 100, availableBlocks: 25, fragmentSize: 4096) == Int64(102_400))
        #expect(FreeSpaceFigures.available(totalBlocks: .max, availableBlocks: .max, fragmentSize: 4096) == .max, "clamped, never a trap")
    }
}

