/// A number of seconds given to an option — `--connect-timeout`, `--stall-timeout`, `--max-time`,
/// `--checkpoint-interval` — checked before it becomes a `Duration`: `inf`, `nan` or `1e30` used to stop haul
/// with a Swift runtime trap (exit 132, a stack trace) and `0` to fail every connection at once (`--max-time
/// 0`, `--stall-timeout 0`: exit 3 after 0 ms). A usage error (exit 2) names the option and the bounds.
public enum SecondsSetting {
    /// The shortest wait an option may ask for: a millisecond, the timers' resolution.
    public static let shortest: Double = 0.001
    /// The longest: about 31 years, far beyond any download and far inside what a deadline can hold.
    public static let longest: Double = 1_000_000_000

    /// `seconds` for `option` as a `Duration`, or a usage error when it is not a finite number within
    /// ``shortest`` … ``longest``.
    public static func duration(_ seconds: Double, option: String) throws(UsageError) -> Duration {
        // `!(a <= x && x <= b)` rather than `x < a || x > b`: NaN fails every comparison and must be refused.
        guard seconds.isFinite, shortest <= seconds, seconds <= longest else {
            throw UsageError("\(option) must be between \(shortest) and \(Int(longest)) seconds, not \(seconds)")
        }
        return .nanoseconds(Int64((seconds * 1_000_000_000).rounded()))
    }
}
