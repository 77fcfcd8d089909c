import HaulJournal

/// The one place that decides which bytes each connection fetches.
///
/// The file is cut into segments. A segment has a fixed start, a moving `next` (bytes before it are
/// written), a `requested` mark (bytes before it are asked for, in flight on the owner's connection) and an
/// `end` that can only shrink. The owner asks for its segment a chunk at a time; when a connection runs out
/// of work it takes the second half of the largest *unrequested* remainder, and the owner's `end` moves
/// down. Requests therefore never overlap: no byte is fetched twice. Segments released by a failed
/// connection wait, unowned, for the next connection that needs work.
struct SegmentPlanner {
    struct Segment: Equatable {
        let id: Int
        let start: Int64
        var next: Int64
        var requested: Int64
        var end: Int64
        var owner: Int?
        /// The size of the latest request for this segment (0: none yet under this owner).
        var lastRequest: Int64 = 0
        var remaining: Int64 { end - next }
        var unrequested: Int64 { end - requested }
    }

    let total: Int64
    let minimumSegment: Int64
    /// Most bytes one request asks for: small enough that the tail can be shared out, large enough that
    /// request overhead stays negligible.
    let requestChunk: Int64
    /// ``requestChunk`` unless the minimum segment is larger or the caller asks for another.
    static let defaultRequestChunk: Int64 = 4 << 20
    /// Most bytes a request grows to while its segment has much left (``chunk(base:maximum:previous:unrequested:)``):
    /// ``requestChunk`` when the caller chose that (a stream, whose window bounds what it fetches ahead).
    let maximumRequestChunk: Int64
    /// ``maximumRequestChunk`` unless the caller chooses the request size.
    static let defaultMaximumRequestChunk: Int64 = 32 << 20
    private(set) var segments = SegmentTable()
    /// Bytes written by finished and active segments (in [start, next) of each).
    private(set) var written: ByteRangeSet
    private var nextSegmentID = 0
    /// Bytes at and past this offset are not handed out yet (a download streamed in order keeps what it
    /// fetches ahead of what it has delivered bounded); ``advanceHorizon(to:)`` releases more.
    private(set) var horizon: Int64

    /// Plans `0..<total` minus what `alreadyDone` covers (a resumed download), as segments of at least
    /// `minimumSegment` bytes each, at most `connections` of them per gap; with a `horizon`, only the bytes
    /// before it for now.
    init(total: Int64, minimumSegment: Int64, alreadyDone: ByteRangeSet = ByteRangeSet(), horizon: Int64? = nil,
         requestChunk: Int64? = nil) {
        self.total = total
        self.minimumSegment = max(1, minimumSegment)
        self.requestChunk = requestChunk ?? max(self.minimumSegment, Self.defaultRequestChunk)
        self.maximumRequestChunk = requestChunk == nil ? max(self.requestChunk, Self.defaultMaximumRequestChunk) : self.requestChunk
        self.written = alreadyDone
        self.horizon = min(total, max(0, horizon ?? total))
        for gap in alreadyDone.gaps(in: 0..<self.horizon) { addSegment(gap) }
    }

    /// Hands out the bytes before `offset` too (it only ever grows); true when that released any.
    mutating func advanceHorizon(to offset: Int64) -> Bool {
        let next = min(total, offset)
        guard next > horizon else { return false }
        for gap in written.gaps(in: horizon..<next) { addSegment(gap) }
        horizon = next
        return true
    }

    private mutating func addSegment(_ range: Range<Int64>, owner: Int? = nil) {
        let segment = Segment(id: nextSegmentID, start: range.lowerBound, next: range.lowerBound,
                              requested: range.lowerBound, end: range.upperBound, owner: owner)
        segments[segment.id] = segment
        nextSegmentID += 1
    }

    /// The planned segments by id, read and changed as a dictionary of them would be. A download has a few at
    /// a time (about one per connection; a finished one is forgotten), so they are kept in a list in the order
    /// they were planned and searched: no hashing per lookup, no hash table made and grown per download (a
    /// dictionary cost each small file several thousand instructions and three allocations).
    struct SegmentTable {
        /// The segments, in the order they were planned.
        private(set) var values: [Segment] = []

        var count: Int { values.count }

        /// The segment with this id, nil when none; setting nil forgets it, setting a new id adds it.
        subscript(id: Int) -> Segment? {
            get {
                guard let index = index(of: id) else { return nil }
                return values[index]
            }
            set {
                let index = index(of: id)
                switch (index, newValue) {
                case (let index?, let segment?): values[index] = segment
                case (let index?, nil): values.remove(at: index)
                case (nil, let segment?):
                    precondition(segment.id == id, "segment \(segment.id) stored as \(id)")
                    values.append(segment)
                case (nil, nil): break
                }
            }
        }

        private func index(of id: Int) -> Int? {
            values.firstIndex { $0.id == id }
        }
    }

    /// Bytes not yet written.
    var remainingBytes: Int64 { total - written.count }

    /// Whether every byte is written.
    var isComplete: Bool { written.count == total }

    /// How many connections are worth opening for what is left.
    func usefulConnections(limit: Int) -> Int {
        Int(max(1, min(Int64(limit), remainingBytes / minimumSegment)))
    }

    /// The next request for connection `worker`: more of `current` (its own segment) while it lasts, else an
    /// unowned segment (largest first), else the second half of the largest unrequested remainder if both
    /// halves stay at least `minimumSegment`. nil when there is nothing left to share.
    mutating func nextRequest(for worker: Int, continuing current: Int? = nil) -> (segment: Int, range: Range<Int64>)? {
        if let current, let s = segments[current], s.owner == worker, s.remaining > 0 {
            return (current, request(current, from: s.next))
        }
        // `lazy`: the candidates are compared as they come, not gathered into an array first.
        if let free = segments.values.lazy.filter({ $0.owner == nil && $0.remaining > 0 }).max(by: Self.smallerShare) {
            segments[free.id]?.owner = worker
            return (free.id, request(free.id, from: free.next))
        }
        guard let victim = segments.values.lazy.filter({ $0.owner != nil }).max(by: Self.smallerUnrequested),
              victim.unrequested >= 2 * minimumSegment else { return nil }
        let middle = victim.requested + victim.unrequested / 2
        let stolen = middle..<victim.end
        segments[victim.id]?.end = middle
        addSegment(stolen, owner: worker)
        let id = nextSegmentID - 1
        return (id, request(id, from: stolen.lowerBound))
    }

    /// Marks the next chunk of `segment` from `first` as requested and returns it.
    private mutating func request(_ segment: Int, from first: Int64) -> Range<Int64> {
        guard let s = segments[segment] else { return first..<first }
        let chunk = Self.chunk(base: requestChunk, maximum: maximumRequestChunk, previous: s.lastRequest,
                               unrequested: s.end - first)
        segments[segment]?.lastRequest = chunk
        let end = min(s.end, first + chunk)
        segments[segment]?.requested = end
        return first..<end
    }

    /// The size of a segment's next request: twice its previous one, at most a quarter of what is not yet
    /// requested and at most `maximum`, never less than `base`. A fresh segment starts at `base`.
    ///
    /// Every request costs its connection a wait for the response head with nothing arriving, and the
    /// server a request to serve: at 8 connections on loopback, with 4 MiB requests (256 per GiB), each
    /// connection waited for heads about half the time, and nginx spent three times the CPU it spends on
    /// one stream (docs/benchmarks.md, "Fewer splices per wake-up, fewer requests"). Growing only as
    /// requests complete keeps a connection that turns out slow from holding much in flight before
    /// ``shrink(_:keeping:)`` takes its rest, and the quarter keeps the tail in `base`-sized requests that
    /// others can share.
    static func chunk(base: Int64, maximum: Int64, previous: Int64, unrequested: Int64) -> Int64 {
        max(base, min(maximum, 2 * previous, unrequested / 4))
    }

    /// Marks all of `segment` as requested (the probe's open-ended request covers it whole).
    mutating func markRequestedToEnd(_ segment: Int) {
        guard let s = segments[segment] else { return }
        segments[segment]?.requested = s.end
    }

    /// Marks `segment` as requested up to `offset` (at most its end): what a request already sent covers.
    mutating func markRequested(_ segment: Int, upTo offset: Int64) {
        guard let s = segments[segment] else { return }
        segments[segment]?.requested = max(s.requested, min(offset, s.end))
    }

    /// Splits unowned work so that `connections` workers can start at once (used at the start of a download).
    mutating func splitForStart(connections: Int) {
        var pieces = connections - segments.values.lazy.filter { $0.remaining > 0 }.count
        while pieces > 0 {
            guard let largest = segments.values.lazy.filter({ $0.owner == nil }).max(by: Self.smallerShare),
                  largest.remaining >= 2 * minimumSegment else { return }
            // Cut off 1/(pieces+1) of the largest so that equal shares come out when starting from one segment.
            let share = largest.remaining / Int64(pieces + 1)
            guard share >= minimumSegment else { return }
            let cut = largest.end - share
            segments[largest.id]?.end = cut
            addSegment(cut..<largest.end)
            pieces -= 1
        }
    }

    private static func smallerUnrequested(_ a: Segment, _ b: Segment) -> Bool {
        a.unrequested != b.unrequested ? a.unrequested < b.unrequested : a.start > b.start
    }

    /// Orders by remaining bytes; among equals the later start counts as smaller, so the earliest segment
    /// wins (the first connection streams from byte 0, and the order must not depend on hashing).
    private static func smallerShare(_ a: Segment, _ b: Segment) -> Bool {
        a.remaining != b.remaining ? a.remaining < b.remaining : a.start > b.start
    }

    /// The segment's current end (it shrinks when another connection steals from it); nil for a segment
    /// not planned (any more: a finished segment is forgotten).
    func end(of segment: Int) -> Int64? { segments[segment]?.end }

    /// The next byte the segment needs; nil for a segment not planned.
    func next(of segment: Int) -> Int64? { segments[segment]?.next }

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
        guard let s = segments[segment] else { return }
        segments[segment]?.owner = nil
        segments[segment]?.requested = s.next
        segments[segment]?.lastRequest = 0
    }

    /// Takes `range` (written, in no segment: a piece that failed its hash) out of the written set and plans
    /// it again as an unowned segment.
    mutating func reopen(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        written.remove(range)
        addSegment(range)
    }

    /// Takes the unwritten rest of a slow connection's segment away, leaving it `keep` bytes to finish what
    /// is already in flight; returns the bytes released.
    mutating func shrink(_ segment: Int, keeping keep: Int64) -> Int64 {
        guard let s = segments[segment] else { return 0 }
        // Bytes already requested stay with the owner: taking them would fetch them twice.
        let cut = max(s.requested, s.next + keep)
        guard s.end - cut >= minimumSegment else { return 0 }
        segments[segment]?.end = cut
        addSegment(cut..<s.end)
        return s.end - cut
    }
}
