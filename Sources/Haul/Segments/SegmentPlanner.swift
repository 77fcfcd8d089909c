/// The one place that decides which bytes each connection fetches.
///
/// The file is cut into segments. A segment has a fixed start, a moving `next` (bytes before it are
/// written) and an `end` that can only shrink: when a connection runs out of work it takes the second half
/// of the largest remaining segment, and the owner's `end` moves down so that no byte is fetched twice.
/// Segments released by a failed connection wait, unowned, for the next connection that needs work.
struct SegmentPlanner {
    struct Segment: Equatable {
        let id: Int
        let start: Int64
        var next: Int64
        var end: Int64
        var owner: Int?
        var remaining: Int64 { end - next }
    }

    let total: Int64
    let minimumSegment: Int64
    private(set) var segments: [Int: Segment] = [:]
    /// Bytes written by finished and active segments (in [start, next) of each).
    private(set) var written: ByteRangeSet
    private var nextSegmentID = 0

    /// Plans `0..<total` minus what `alreadyDone` covers (a resumed download), as segments of at least
    /// `minimumSegment` bytes each, at most `connections` of them per gap.
    init(total: Int64, minimumSegment: Int64, alreadyDone: ByteRangeSet = ByteRangeSet()) {
        self.total = total
        self.minimumSegment = max(1, minimumSegment)
        self.written = alreadyDone
        for gap in alreadyDone.gaps(in: 0..<total) { addSegment(gap) }
    }

    private mutating func addSegment(_ range: Range<Int64>, owner: Int? = nil) {
        let segment = Segment(id: nextSegmentID, start: range.lowerBound, next: range.lowerBound, end: range.upperBound, owner: owner)
        segments[segment.id] = segment
        nextSegmentID += 1
    }

    /// Bytes not yet written.
    var remainingBytes: Int64 { total - written.count }

    /// Whether every byte is written.
    var isComplete: Bool { written.count == total }

    /// How many connections are worth opening for what is left.
    func usefulConnections(limit: Int) -> Int {
        Int(max(1, min(Int64(limit), remainingBytes / minimumSegment)))
    }

    /// Work for connection `worker`: an unowned segment (largest first), else the second half of the
    /// largest owned segment if both halves stay at least `minimumSegment`. nil when there is nothing left to
    /// share. Returns the segment id and the byte range to request.
    mutating func assignWork(to worker: Int) -> (segment: Int, range: Range<Int64>)? {
        if let free = segments.values.filter({ $0.owner == nil && $0.remaining > 0 }).max(by: Self.smallerShare) {
            segments[free.id]!.owner = worker
            return (free.id, free.next..<free.end)
        }
        guard let victim = segments.values.filter({ $0.owner != nil }).max(by: Self.smallerShare),
              victim.remaining >= 2 * minimumSegment else { return nil }
        let middle = victim.next + victim.remaining / 2
        let stolen = middle..<victim.end
        segments[victim.id]!.end = middle
        addSegment(stolen, owner: worker)
        return (nextSegmentID - 1, stolen)
    }

    /// Splits unowned work so that `connections` workers can start at once (used at the start of a download).
    mutating func splitForStart(connections: Int) {
        var pieces = connections - segments.values.filter { $0.remaining > 0 }.count
        while pieces > 0 {
            guard let largest = segments.values.filter({ $0.owner == nil }).max(by: Self.smallerShare),
                  largest.remaining >= 2 * minimumSegment else { return }
            // Cut off 1/(pieces+1) of the largest so that equal shares come out when starting from one segment.
            let share = largest.remaining / Int64(pieces + 1)
            guard share >= minimumSegment else { return }
            let cut = largest.end - share
            segments[largest.id]!.end = cut
            addSegment(cut..<largest.end)
            pieces -= 1
        }
    }

    /// Orders by remaining bytes; among equals the later start counts as smaller, so the earliest segment
    /// wins (the first connection streams from byte 0, and the order must not depend on hashing).
    private static func smallerShare(_ a: Segment, _ b: Segment) -> Bool {
        a.remaining != b.remaining ? a.remaining < b.remaining : a.start > b.start
    }

    /// The segment's current end (it shrinks when another connection steals from it).
    func end(of segment: Int) -> Int64 { segments[segment]?.end ?? 0 }

    /// The next byte the segment needs.
    func next(of segment: Int) -> Int64 { segments[segment]?.next ?? 0 }

    /// Records `count` bytes written at the segment's `next`.
    mutating func advance(_ segment: Int, by count: Int64) {
        guard var s = segments[segment] else { return }
        precondition(s.next + count <= s.end, "wrote past the end of segment \(segment)")
        written.insert(s.next..<(s.next + count))
        s.next += count
        if s.remaining == 0 {
            segments[segment] = nil
        } else {
            segments[segment] = s
        }
    }

    /// Gives up ownership: the unwritten rest waits for another connection (or the same one, on retry).
    mutating func release(_ segment: Int) {
        guard segments[segment] != nil else { return }
        segments[segment]!.owner = nil
    }

    /// Takes the unwritten rest of a slow connection's segment away, leaving it `keep` bytes to finish what
    /// is already in flight; returns the bytes released.
    mutating func shrink(_ segment: Int, keeping keep: Int64) -> Int64 {
        guard let s = segments[segment], s.remaining > keep + minimumSegment else { return 0 }
        let cut = s.next + keep
        segments[segment]!.end = cut
        addSegment(cut..<s.end)
        return s.end - cut
    }
}
