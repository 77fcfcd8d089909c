/// Cuts input into pseudo-random pieces from a seed, so that a split that exposes a bug can be replayed.
///
/// Used by `haul-parse --split-seed` and the differential fuzz harness; SplitMix64 keeps it dependency-free.
public struct InputSplitter: Sendable {
    private var generator: SplitMixGenerator

    public init(seed: UInt64) { generator = SplitMixGenerator(seed: seed) }

    private mutating func next() -> UInt64 { generator.next() }

    /// Piece boundaries for `count` bytes: mostly small pieces (1–16 bytes), sometimes large ones, sometimes empty.
    public mutating func pieces(count: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        while start < count {
            let roll = next()
            let length: Int
            switch roll % 8 {
            case 0: length = 0
            case 1: length = Int((roll >> 8) % UInt64(count - start)) + 1
            default: length = Int((roll >> 8) % 16) + 1
            }
            let end = min(count, start + length)
            ranges.append(start..<end)
            start = end
        }
        return ranges
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-mixed generator whose whole state is one word, so a
/// stream is fully determined by its starting value. The one implementation in the package: the splitter here
/// and the tests' seeded generator (HaulTestSupport's `SplitMix64`) both draw from it.
package struct SplitMixGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
