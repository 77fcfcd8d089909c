import Haul

/// A picture of which parts of the file are written, one terminal cell per slice of the file.
///
/// Cell `i` of `n` covers bytes `[i * total / n, (i + 1) * total / n)`. A byte counts as written when it is
/// in one of the snapshot's `completedRanges` or in the written part `[start, next)` of one of its
/// `segments` (the two may overlap; nothing is counted twice). Cells show how much of their slice is written:
///
/// | glyph | written |
/// |-------|---------|
/// | `█` | all of it |
/// | `▓` | two thirds or more |
/// | `▒` | a third or more |
/// | `░` | something, less than a third |
/// | `·` | nothing |
/// | `▸` | an active connection is writing here now (its write front, `next`, is in this cell) |
///
/// The write-front mark wins over the fill glyph, so each busy connection is visible as a moving `▸`.
public enum SegmentMap {
    public static let full: Character = "█"
    public static let mostly: Character = "▓"
    public static let half: Character = "▒"
    public static let little: Character = "░"
    public static let empty: Character = "·"
    public static let writeFront: Character = "▸"

    /// The map of `progress` in `cells` cells; empty when the total is unknown or `cells` is not positive.
    /// An empty file (total 0) is all `█`.
    public static func render(_ progress: DownloadProgress, cells: Int) -> String {
        guard cells > 0, let total = progress.total, total >= 0 else { return "" }
        if total == 0 { return String(repeating: full, count: cells) }
        let written = mergedWrittenRanges(progress, total: total)
        let count = Int64(cells)
        var fronts = Set<Int>()
        for segment in progress.segments where segment.isActive && segment.next < segment.end {
            if (0..<total).contains(segment.next) { fronts.insert(cellIndex(of: segment.next, total: total, cells: count)) }
        }

        var result = ""
        var rangeIndex = 0
        for cell in 0..<count {
            let lower = boundary(cell, total: total, cells: count)
            let upper = boundary(cell + 1, total: total, cells: count)
            if fronts.contains(Int(cell)) {
                result.append(writeFront)
                continue
            }
            guard upper > lower else {
                // More cells than bytes: a zero-width cell shows the state of the byte it sits on.
                let byteWritten = written.contains { $0.contains(min(lower, total - 1)) }
                result.append(byteWritten ? full : empty)
                continue
            }
            while rangeIndex < written.count && written[rangeIndex].upperBound <= lower { rangeIndex += 1 }
            var done: Int64 = 0
            var index = rangeIndex
            while index < written.count && written[index].lowerBound < upper {
                done += min(upper, written[index].upperBound) - max(lower, written[index].lowerBound)
                index += 1
            }
            result.append(glyph(done: done, of: upper - lower))
        }
        return result
    }

    static func glyph(done: Int64, of size: Int64) -> Character {
        if done >= size { return full }
        if done <= 0 { return empty }
        if atLeast(done, times: 3, as: size, times: 2) { return mostly }
        if atLeast(done, times: 3, as: size, times: 1) { return half }
        return little
    }

    /// Whether `a * m >= b * n`, in 128 bits so nothing overflows.
    private static func atLeast(_ a: Int64, times m: Int64, as b: Int64, times n: Int64) -> Bool {
        let left = a.multipliedFullWidth(by: m), right = b.multipliedFullWidth(by: n)
        return left.high != right.high ? left.high > right.high : left.low >= right.low
    }

    /// `cell * total / cells` without overflow.
    static func boundary(_ cell: Int64, total: Int64, cells: Int64) -> Int64 {
        (total / cells) * cell + (total % cells) * cell / cells
    }

    /// The cell holding byte `offset`.
    static func cellIndex(of offset: Int64, total: Int64, cells: Int64) -> Int {
        // The largest cell whose lower boundary is <= offset.
        var low: Int64 = 0, high = cells - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if boundary(mid, total: total, cells: cells) <= offset { low = mid } else { high = mid - 1 }
        }
        return Int(low)
    }

    /// Completed ranges and the written parts of segments, clipped to `[0, total)`, sorted and merged.
    static func mergedWrittenRanges(_ progress: DownloadProgress, total: Int64) -> [Range<Int64>] {
        var ranges = progress.completedRanges
        for segment in progress.segments where segment.next > segment.start {
            ranges.append(segment.start..<segment.next)
        }
        let clipped = ranges.compactMap { range -> Range<Int64>? in
            let lower = max(0, range.lowerBound), upper = min(total, range.upperBound)
            return lower < upper ? lower..<upper : nil
        }.sorted { $0.lowerBound < $1.lowerBound }
        var merged: [Range<Int64>] = []
        for range in clipped {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}
