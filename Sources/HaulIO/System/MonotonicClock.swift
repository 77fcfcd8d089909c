import Glibc

/// A point on `CLOCK_MONOTONIC`, in nanoseconds. Immune to wall-clock changes, so timeouts never jump.
public struct MonotonicInstant: Sendable, Hashable, Comparable {
    /// Nanoseconds since an arbitrary, fixed point (boot on Linux).
    public let nanoseconds: UInt64

    /// Wraps a raw nanosecond count.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The current monotonic time.
    public static func now() -> MonotonicInstant {
        var spec = timespec()
        do {
            _ = try blockingSyscall("clock_gettime") { clock_gettime(CLOCK_MONOTONIC, &spec) }
        } catch {
            // Only possible with a kernel lacking CLOCK_MONOTONIC; no timeout could work, so stop loudly.
            fatalError("\(error)")
        }
        return MonotonicInstant(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    /// This instant moved forward by `duration`; negative durations count as zero.
    public func advanced(by duration: Duration) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: nanoseconds &+ duration.wholeNanoseconds)
    }

    /// The time from `earlier` to this instant, zero if `earlier` is later.
    public func nanoseconds(since earlier: MonotonicInstant) -> UInt64 {
        nanoseconds > earlier.nanoseconds ? nanoseconds - earlier.nanoseconds : 0
    }

    /// Earlier instants sort first.
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}

extension Duration {
    /// The duration as a whole, non-negative number of nanoseconds (saturating).
    var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
