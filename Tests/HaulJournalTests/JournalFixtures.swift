@testable import HaulJournal

/// Deterministic generator for test data (SplitMix64).
struct JournalTestRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(below bound: Int64) -> Int64 { Int64(next() % UInt64(bound)) }
}

enum JournalFixtures {
    static let mib: Int64 = 1 << 20

    static func state(ranges: [Range<Int64>] = [0..<1000, 5000..<9000], total: Int64 = 1 << 30) -> JournalState {
        JournalState(
            url: "https://example.com/files/big.iso?token=abc",
            mirrors: ["https://mirror1.example.net/big.iso", "http://mirror2.example.org/pub/big.iso"],
            etag: Array("\"5f3c-1a2b3c4d\"".utf8),
            lastModified: 1_763_000_000,
            totalLength: total,
            minimumSegmentSize: 1 << 20,
            checksum: JournalChecksum(algorithm: "sha256", hex: String(repeating: "ab", count: 32)),
            createdAt: 1_763_790_000,
            durable: ByteRangeSet(ranges)
        )
    }

    /// ``state(ranges:total:)`` with the version 2 fields set: a resolved URL and a boot id.
    static func stateWithVersion2Fields(ranges: [Range<Int64>] = [0..<1000, 5000..<9000]) -> JournalState {
        var state = state(ranges: ranges)
        state.resolvedURL = "https://cdn-7.example.net/pool/big.iso?sig=Zm9v&exp=1763790000"
        state.bootID = Array("8c3f2a9e-1b4d-4e5f-9a7b-0c1d2e3f4a5b".utf8)
        return state
    }

    /// A realistic state for a 1 GiB download over 16 connections: each connection has finished part of
    /// its 64 MiB share, so the durable set is 16 ranges.
    static func sixteenConnections() -> JournalState {
        let share: Int64 = 64 * mib
        var random = JournalTestRandom(state: 16)
        let ranges = (0..<16).map { index -> Range<Int64> in
            let start = Int64(index) * share
            return start..<(start + 1 + random.next(below: share - 2))
        }
        return state(ranges: ranges, total: 1 << 30)
    }

    /// `count` random disjoint, non-touching ranges spread over a file of `total` bytes.
    static func manyRanges(_ count: Int, total: Int64, seed: UInt64 = 1) -> [Range<Int64>] {
        var random = JournalTestRandom(state: seed)
        let stride = total / Int64(count)
        return (0..<count).map { index in
            let start = Int64(index) * stride + 1 + random.next(below: stride / 2)
            return start..<(start + 1 + random.next(below: stride / 2 - 1))
        }
    }
}
