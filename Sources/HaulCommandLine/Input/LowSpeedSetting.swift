import Haul

extension LowSpeedLimit {
    /// `--speed-limit RATE` and `--speed-time SECONDS` as given, for `haul` and `haul queue add` alike: the
    /// engine's default (``LowSpeedLimit/standard``) when neither is given, the default for whichever half is
    /// left out, and nil (no limit) for a rate or a time of 0 — the one way to turn the limit off.
    public static func commandLine(speedLimit: RateLimitSetting?, speedTime: Int?) throws(LowSpeedSettingError) -> LowSpeedLimit? {
        if let speedTime, speedTime < 0 { throw LowSpeedSettingError(seconds: speedTime) }
        if speedLimit == .unlimited || speedTime == 0 { return nil }
        return LowSpeedLimit(bytesPerSecond: speedLimit?.bytesPerSecond ?? standard.bytesPerSecond,
                             seconds: speedTime ?? standard.seconds)
    }
}

/// The help of the options that bound a download's waits, the same for `haul` and `haul queue add`, with
/// the engine's defaults in them.
public enum WaitOptionHelp {
    /// `--speed-limit`'s help.
    public static let speedLimit = "Bytes per second a connection must average over --speed-time, else it is closed and its "
        + "range retried like any failed try (default \(LowSpeedLimit.standard.bytesPerSecond); 0 turns the limit off)."
    /// What `--retries`' help says of the waits a server asks for (``RetryPolicy/maxRetryAfter``).
    public static let retryAfter = "A Retry-After of up to \(RetryPolicy.defaultMaxRetryAfter.components.seconds) s "
        + "is waited for; a longer one fails that try at once, like any failed try."
    /// `--speed-time`'s help.
    public static let speedTime = "Seconds over which --speed-limit is averaged (default \(LowSpeedLimit.standard.seconds); 0 turns the limit off)."
}

/// A `--speed-time` that is no duration.
public struct LowSpeedSettingError: Error, Sendable, Hashable, CustomStringConvertible {
    public let seconds: Int

    public var description: String { "--speed-time must be 0 (no low-speed limit) or more seconds, not \(seconds)" }
}
