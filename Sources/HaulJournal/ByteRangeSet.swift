/// A set of disjoint, non-adjacent half-open byte ranges, kept sorted: which parts of a file are done.
///
/// Its size depends on how fragmented the set is, not on the file size (the resume journal stores it).
public struct ByteRangeSet: Sendable, Equatable, CustomStringConvertible {
    /// The ranges, sorted, disjoint and never touching.
    public private(set) var ranges: [Range<Int64>] = []

    /// The empty set.
    public init() {}

    /// The union of `ranges` (in any order, overlapping or not).
    public init(_ ranges: [Range<Int64>]) {
        for range in ranges { insert(range) }
    }

    /// Total bytes covered.
    public var count: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// Adds `range`, merging it with any range it overlaps or touches.
    public mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        // First range that ends at or after range.lowerBound (could merge).
        var low = 0, high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < range.lowerBound { low = mid + 1 } else { high = mid }
        }
        var merged = range
        var end = low
        while end < ranges.count && ranges[end].lowerBound <= merged.upperBound {
            merged = min(merged.lowerBound, ranges[end].lowerBound)..<max(merged.upperBound, ranges[end].upperBound)
            end += 1
        }
        ranges.replaceSubrange(low..<end, with: [merged])
    }

    /// Whether every byte of `range` is in the set (a binary search: it runs for every piece of a download
    /// with piece hashes).
    public func contains(_ range: Range<Int64>) -> Bool {
        guard !range.isEmpty else { return true }
        // The last range that starts at or before range.lowerBound.
        var low = 0, high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].lowerBound <= range.lowerBound { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return false }
        return range.upperBound <= ranges[low - 1].upperBound
    }

    /// Takes `range` out of the set (a piece that failed its hash is written again).
    public mutating func remove(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var kept: [Range<Int64>] = []
        kept.reserveCapacity(ranges.count + 1)
        for existing in ranges {
            guard existing.overlaps(range) else { kept.append(existing); continue }
            if existing.lowerBound < range.lowerBound { kept.append(existing.lowerBound..<range.lowerBound) }
            if range.upperBound < existing.upperBound { kept.append(range.upperBound..<existing.upperBound) }
        }
        ranges = kept
    }

    /// The bytes in both sets.
    public func intersection(_ other: ByteRangeSet) -> ByteRangeSet {
        var result = ByteRangeSet()
        var i = 0, j = 0
        while i < ranges.count && j < other.ranges.count {
            let a = ranges[i], b = other.ranges[j]
            let lower = max(a.lowerBound, b.lowerBound), upper = min(a.upperBound, b.upperBound)
            // Appended in order and never touching (both inputs are canonical), so no merge is needed.
            if lower < upper { result.ranges.append(lower..<upper) }
            if a.upperBound < b.upperBound { i += 1 } else { j += 1 }
        }
        return result
    }

    /// The parts of `0..<total` not in the set, in order.
    public func gaps(in total: Range<Int64>) -> [Range<Int64>] {
        var result: [Range<Int64>] = []
        var cursor = total.lowerBound
        for range in ranges where range.upperBound > cursor {
            if range.lowerBound >= total.upperBound { break }
            if range.lowerBound > cursor { result.append(cursor..<range.lowerBound) }
            cursor = max(cursor, range.upperBound)
        }
        if cursor < total.upperBound { result.append(cursor..<total.upperBound) }
        return result
    }

    public var description: String {
        "[" + ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ", ") + "]"
    }
}
