import HaulJournal

/// Which pieces of a download with ``PieceHashes`` are ready to be hashed, which bytes of a resumed one may be
/// kept, and what a piece that fails its hash leads to. Pure: facts in, a verdict out.
///
/// The rules:
/// - A piece is hashed once every byte of it is written (from the file, after its last write).
/// - Only a piece whose hash matched counts as done in the journal (`JournalPieces`). A resume keeps the
///   pieces the journal records as verified, and the bytes of pieces not complete yet (they are hashed with
///   the rest of their piece once it is complete); a piece that is complete but not recorded as verified is
///   hashed again before it counts.
/// - A piece that fails is fetched again. Every mirror that served a byte of it is a suspect — a piece
///   spanning two segments served by two mirrors blames both, since a hash cannot tell which half was
///   wrong — and the suspects are dropped when a mirror that served none of it is left. When every live
///   mirror is a suspect, the piece is fetched once more from them (a fault on the way may not repeat);
///   a second failure, or a piece failing more than ``maximumRefetches`` times, ends the download.
enum PieceVerification {
    /// Most times one piece is fetched again before the download fails.
    static let maximumRefetches = 3

    /// The pieces of a file of known length.
    struct Geometry: Equatable {
        let hashes: PieceHashes
        let total: Int64

        /// Refuses hashes that do not cover exactly `total` bytes (the server's length).
        init(_ hashes: PieceHashes, total: Int64) throws(PieceHashesError) {
            try hashes.check(size: total)
            self.hashes = hashes
            self.total = total
        }

        var count: Int { hashes.digests.count }
        var length: Int64 { hashes.length }

        func range(of piece: Int) -> Range<Int64> { hashes.range(of: piece, size: total) }

        /// The pieces that share a byte with `range` (empty for an empty range).
        func pieces(overlapping range: Range<Int64>) -> Range<Int> {
            let lower = max(0, range.lowerBound), upper = min(total, range.upperBound)
            guard lower < upper else { return 0..<0 }
            return Int(lower / length)..<Int((upper - 1) / length + 1)
        }

        /// The bytes of the pieces in `pieces` (a set of piece indices).
        func bytes(of pieces: some Sequence<Int>) -> ByteRangeSet {
            var set = ByteRangeSet()
            for piece in pieces { set.insert(range(of: piece)) }
            return set
        }
    }

    /// The pieces sharing a byte with `range` that are now complete in `written` and neither verified nor
    /// being hashed (`settled` says which are), in order: those to hash after `range` was written.
    static func completed(by range: Range<Int64>, written: ByteRangeSet, geometry: Geometry,
                          settled: (Int) -> Bool) -> [Int] {
        geometry.pieces(overlapping: range).filter { !settled($0) && written.contains(geometry.range(of: $0)) }
    }

    /// Every piece complete in `written` and not settled: what a resume or a download whose length was learnt
    /// only at its end hashes.
    static func completed(in written: ByteRangeSet, geometry: Geometry, settled: (Int) -> Bool) -> [Int] {
        var due: [Int] = []
        for range in written.ranges {
            for piece in geometry.pieces(overlapping: range) where !settled(piece) && (due.last ?? -1) < piece {
                if written.contains(geometry.range(of: piece)) { due.append(piece) }
            }
        }
        return due
    }

    /// What a resume keeps of a journal's `durable` ranges: the pieces it recorded as verified with this very
    /// geometry, every byte of the pieces it holds only in part (hashed once complete), and nothing else of
    /// complete pieces — they come back in `reverify`, to be hashed before they count. A record of another
    /// piece length (or none: an older journal, or a download without piece hashes) verifies nothing.
    static func resume(durable: ByteRangeSet, recorded: JournalPieces?, geometry: Geometry)
        -> (kept: ByteRangeSet, verified: Set<Int>, reverify: [Int]) {
        var verified: Set<Int> = []
        if let recorded, recorded.length == geometry.length {
            for range in recorded.verified.ranges {
                for piece in geometry.pieces(overlapping: range) where durable.contains(geometry.range(of: piece))
                    && recorded.verified.contains(geometry.range(of: piece)) {
                    verified.insert(piece)
                }
            }
        }
        let reverify = completed(in: durable, geometry: geometry, settled: verified.contains)
        return (durable, verified, reverify)
    }

    /// A piece whose hash did not match.
    struct Mismatch: Equatable {
        let piece: Int
        let range: Range<Int64>
        /// The mirrors (indices) that served bytes of it in this run.
        let servedBy: Set<Int>
        /// Whether some of its bytes came from an earlier run (a resumed journal), whose mirror is unknown.
        let fromEarlierRun: Bool
        /// Times the piece was fetched again before this mismatch.
        let refetchesSoFar: Int
    }

    enum Verdict: Equatable {
        /// Fetch the piece's range again, after dropping these mirrors (in order; may be none).
        case refetch(dropping: [Int])
        /// End the download: `blamed` are the mirrors that served it, `why` says why no refetch is left.
        case fail(blamed: [Int], why: String)
    }

    /// What a failed piece leads to, given the mirrors still in use (`live`).
    static func decide(_ mismatch: Mismatch, live: Set<Int>) -> Verdict {
        let suspects = mismatch.servedBy.sorted()
        let liveSuspects = suspects.filter(live.contains)
        let innocent = live.subtracting(mismatch.servedBy)
        guard mismatch.refetchesSoFar < maximumRefetches else {
            return .fail(blamed: suspects, why: "it failed \(mismatch.refetchesSoFar + 1) times, from every mirror it was fetched from")
        }
        // Nobody live to blame (its bytes came from an earlier run, or from mirrors already dropped): fetch it again.
        if liveSuspects.isEmpty { return .refetch(dropping: []) }
        if !innocent.isEmpty { return .refetch(dropping: liveSuspects) }
        // Every mirror left served part of it: once more from them, in case the fault was on the way.
        if mismatch.refetchesSoFar == 0 { return .refetch(dropping: []) }
        return .fail(blamed: suspects, why: liveSuspects.count == 1
            ? "it failed again, and no other mirror is left to fetch it from"
            : "it failed again, and every mirror left served part of it")
    }
}
