/// Numbers as the CLI shows them: fixed-point decimals, byte counts in binary units, rates, and durations.
///
/// Written by hand rather than with Foundation's `String(format:)`, so the CLI's pieces need no Foundation
/// and print the same on every machine (no locale decides the decimal separator).
public enum UnitFormatting {
    /// The binary units, 1024 apart. Rates use the same units (`MiB/s`) so a rate and an amount can be
    /// compared at a glance.
    static let binaryUnits = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]

    /// `value` with exactly `fractionDigits` digits after the point, rounded half away from zero:
    /// `fixedPoint(431.25, fractionDigits: 1) == "431.3"`. NaN prints as `nan`, infinities as `inf`/`-inf`.
    public static func fixedPoint(_ value: Double, fractionDigits: Int) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        let digits = max(0, min(fractionDigits, 9))
        var scale: Double = 1
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        // Beyond 2^62 the integer below would overflow; such values never reach a progress line.
        guard scaled < 4.6e18 else { return value < 0 ? "-huge" : "huge" }
        let units = UInt64(scaled)
        let divisor = UInt64(scale)
        let whole = units / divisor
        let sign = value < 0 && units != 0 ? "-" : ""
        guard digits > 0 else { return "\(sign)\(whole)" }
        let fraction = String(units % divisor)
        return "\(sign)\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
    }

    /// A byte count in binary units with one decimal: `512 B`, `1.5 KiB`, `431.2 MiB`, `1.0 GiB`.
    ///
    /// A value that would show as 1000 or more of a unit is shown in the next unit (`0.98 GiB` rounds to
    /// `1.0 GiB`), so the text is never wider than 9 columns (`999.9 MiB`) and a progress line does not jump.
    public static func bytes(_ count: Int64) -> String {
        if count < 0 { return "-" + bytes(count == Int64.min ? Int64.max : -count) }
        if count < 1000 { return "\(count) B" }
        var value = Double(count)
        var unit = 0
        // Move up while the rounded one-decimal value would be 1000 or more.
        while unit < binaryUnits.count - 1 && (value * 10).rounded() >= 10_000 {
            value /= 1024
            unit += 1
        }
        return fixedPoint(value, fractionDigits: 1) + " " + binaryUnits[unit]
    }

    /// A rate in binary units per second with one decimal: `0 B/s`, `512 B/s`, `118.4 MiB/s`.
    /// Negative, NaN or infinite rates (which a progress snapshot should never hold) show as `0 B/s`.
    public static func rate(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond > 0 else { return "0 B/s" }
        if bytesPerSecond >= 9.2e18 { return bytes(Int64.max) + "/s" }
        return bytes(Int64(bytesPerSecond.rounded())) + "/s"
    }

    /// Whole seconds in `duration`, rounded to the nearest second; negative durations count as zero.
    public static func roundedSeconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 || (seconds == 0 && attoseconds < 0) { return 0 }
        return seconds + (attoseconds >= 500_000_000_000_000_000 ? 1 : 0)
    }

    /// `duration` as a clock: `m:ss` under an hour (`0:05`, `12:34`), `h:mm:ss` from an hour (`1:02:03`).
    /// 1000 hours or more show as `>999h`, which is as good as "never" and keeps the text short.
    public static func clock(_ duration: Duration) -> String {
        let total = roundedSeconds(duration)
        let hours = total / 3600, minutes = total / 60 % 60, seconds = total % 60
        if hours >= 1000 { return ">999h" }
        if hours > 0 { return "\(hours):\(twoDigits(minutes)):\(twoDigits(seconds))" }
        return "\(minutes):\(twoDigits(seconds))"
    }

    /// Seconds as a JSON-friendly decimal with three digits (`12.345`).
    public static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    private static func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
