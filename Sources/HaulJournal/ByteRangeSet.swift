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

    /// Whether every byte of `range` is in the set.
    public func contains(_ range: Range<Int64>) -> Bool {
        guard !range.isEmpty else { return true }
        return ranges.contains { $0.lowerBound <= range.lowerBound && range.upperBound <= $0.upperBound }
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
