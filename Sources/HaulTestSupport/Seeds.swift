import Foundation
import HaulHTTP

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-mixed generator whose whole state is one word, so a
/// stream is fully determined by its starting value. Every random choice in the tests comes from one of these,
/// started from a ``TestSeed``, so that a failure can be replayed. (The algorithm is HaulHTTP's, which splits
/// parser input with it; this is the tests' public face of it.)
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var generator: SplitMixGenerator

    /// A generator starting at `seed`.
    public init(seed: UInt64) {
        generator = SplitMixGenerator(seed: seed)
    }

    public mutating func next() -> UInt64 { generator.next() }
}

/// The seed of a randomized test: `HAUL_TEST_SEED` (decimal or `0x` hex) when set, else the test's fixed default.
///
/// It is printed when chosen, and its ``description`` (which says how to replay it) belongs in every failure
/// message of the test, so that a failure found once can be run again.
public struct TestSeed: Sendable, CustomStringConvertible {
    /// The seed to start the test's ``SplitMix64`` from.
    public let value: UInt64
    /// The test it is for, as printed.
    public let test: String

    /// Chooses and prints the seed for `test`.
    public init(for test: String, default defaultValue: UInt64) {
        self.test = test
        value = Self.fromEnvironment() ?? defaultValue
        print("\(test): seed \(value) (replay with HAUL_TEST_SEED=\(value))")
    }

    /// A generator started from the seed.
    public func generator() -> SplitMix64 { SplitMix64(seed: value) }

    public var description: String { "seed \(value), replay with HAUL_TEST_SEED=\(value)" }

    static func fromEnvironment() -> UInt64? {
        guard let text = ProcessInfo.processInfo.environment["HAUL_TEST_SEED"]?.trimmingCharacters(in: .whitespaces),
              !text.isEmpty else { return nil }
        if text.lowercased().hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) }
        return UInt64(text)
    }
}
