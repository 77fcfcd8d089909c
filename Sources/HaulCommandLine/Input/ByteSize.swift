/// A byte count as people type it on a command line: `500K`, `10M`, `1.5G`, `4096`, `64KiB`, `2mb`.
///
/// Multiples are binary (K = 1024, like curl and wget), case does not matter, and an optional `B` or `iB`
/// may follow the multiplier. Fractions are exact up to the byte (`1.5K` is 1536; anything smaller than a
/// byte is dropped). Zero and negative sizes are refused: every option that takes a size (rate limit,
/// checkpoint interval) has no meaning for them.
public struct ByteSize: Sendable, Hashable, CustomStringConvertible {
    /// The number of bytes, always positive.
    public let bytes: Int64

    /// Wraps a byte count; nil unless it is positive.
    public init?(bytes: Int64) {
        guard bytes > 0 else { return nil }
        self.bytes = bytes
    }

    /// Parses `text`; nil when it is not a size (see ``parse(_:)`` for the reason).
    public init?(_ text: String) {
        guard let size = try? Self.parse(text) else { return nil }
        self = size
    }

    /// Parses `text`, saying what is wrong when it is not a size.
    public static func parse(_ text: String) throws(ByteSizeError) -> ByteSize {
        var rest = Substring(text.lowercased())
        while rest.first == " " || rest.first == "\t" { rest.removeFirst() }
        while rest.last == " " || rest.last == "\t" { rest.removeLast() }
        guard !rest.isEmpty else { throw ByteSizeError(text: text, reason: .empty) }

        if rest.hasSuffix("ib") { rest = rest.dropLast(2) } else if rest.hasSuffix("b") { rest = rest.dropLast() }
        var shift: Int64 = 0
        if let unit = rest.last, let power = "kmgtp".firstIndex(of: unit) {
            shift = 10 * Int64("kmgtp".distance(from: "kmgtp".startIndex, to: power) + 1)
            rest = rest.dropLast()
        } else if text.lowercased().hasSuffix("ib") {
            throw ByteSizeError(text: text, reason: .badUnit)  // `12iB` names no multiple
        }
        while rest.last == " " { rest.removeLast() }

        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let integerDigits = parts[0]
        let fractionDigits = parts.count > 1 ? parts[1] : ""
        guard !(integerDigits.isEmpty && fractionDigits.isEmpty),
              integerDigits.allSatisfy(\.isASCIIDigit), fractionDigits.allSatisfy(\.isASCIIDigit)
        else { throw ByteSizeError(text: text, reason: .notANumber) }

        let multiplier: Int64 = 1 << shift
        var whole: Int64 = 0
        for digit in integerDigits {
            let (times10, o1) = whole.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(digit.asciiValue! - 48))
            guard !o1, !o2 else { throw ByteSizeError(text: text, reason: .tooLarge) }
            whole = sum
        }
        let (wholeBytes, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { throw ByteSizeError(text: text, reason: .tooLarge) }
        let fractionBytes = Self.fractionBytes(digits: fractionDigits, multiplier: multiplier)
        let (total, overflow2) = wholeBytes.addingReportingOverflow(fractionBytes)
        guard !overflow2 else { throw ByteSizeError(text: text, reason: .tooLarge) }
        guard let size = ByteSize(bytes: total) else { throw ByteSizeError(text: text, reason: .notPositive) }
        return size
    }

    /// `floor(0.DIGITS * multiplier)` for a power-of-two multiplier up to 2^50, without floating point.
    static func fractionBytes(digits: Substring, multiplier: Int64) -> Int64 {
        // 0.d1d2...dn * m = (d1d2...dn * m) / 10^n; digits past the 12th are below a byte even for P.
        var numerator: UInt64 = 0
        var denominator: UInt64 = 1
        for digit in digits.prefix(12) {
            numerator = numerator * 10 + UInt64(digit.asciiValue! - 48)
            denominator *= 10
        }
        // numerator < 10^12 < 2^40 and m <= 2^50, so the 128-bit product is exact and the quotient fits.
        let product = numerator.multipliedFullWidth(by: UInt64(multiplier))
        let (quotient, _) = denominator.dividingFullWidth(product)
        return Int64(quotient)
    }

    /// The size in the largest binary unit that divides it exactly (`512K`, `10M`), else in bytes.
    public var description: String {
        for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] where bytes % (Int64(1) << shift) == 0 {
            return "\(bytes >> shift)\(unit)"
        }
        return "\(bytes)"
    }
}

/// A bandwidth limit as typed on a command line: a ``ByteSize`` per second, with an optional `/s`
/// (`10M`, `10M/s`, `500KiB/s`).
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// The limit in bytes per second, always positive.
    public let bytesPerSecond: Int64

    public init(bytesPerSecond: ByteSize) { self.bytesPerSecond = bytesPerSecond.bytes }

    /// Parses `text`; nil when it is not a rate.
    public init?(_ text: String) {
        guard let limit = try? Self.parse(text) else { return nil }
        self = limit
    }

    /// Parses `text`, saying what is wrong when it is not a rate.
    public static func parse(_ text: String) throws(ByteSizeError) -> RateLimit {
        var body = text
        if body.lowercased().hasSuffix("/s") { body.removeLast(2) }
        do {
            return RateLimit(bytesPerSecond: try ByteSize.parse(body))
        } catch {
            throw ByteSizeError(text: text, reason: error.reason)
        }
    }

    public var description: String { "\(ByteSize(bytes: bytesPerSecond)!)/s" }
}

/// `--limit-rate` as typed: a ``RateLimit``, or `0` for no limit at all (as in curl, wget and aria2c).
public enum RateLimitSetting: Sendable, Hashable, CustomStringConvertible {
    case unlimited
    case limited(RateLimit)

    /// Parses `text`; nil when it is neither a rate nor zero.
    public init?(_ text: String) {
        guard let setting = try? Self.parse(text) else { return nil }
        self = setting
    }

    /// Parses `text`: zero in any spelling (`0`, `0K`, `0.0M/s`) is ``unlimited``; anything else must be a
    /// positive ``RateLimit`` (so `0.1B`, less than a byte but not zero, stays an error).
    public static func parse(_ text: String) throws(ByteSizeError) -> RateLimitSetting {
        do {
            return .limited(try RateLimit.parse(text))
        } catch where error.reason == .notPositive && isZero(text) {
            return .unlimited
        }
    }

    /// Bytes per second, or nil for no limit (what ``DownloadOptions/rateLimit`` takes).
    public var bytesPerSecond: Int64? {
        switch self {
        case .unlimited: nil
        case .limited(let limit): limit.bytesPerSecond
        }
    }

    public var description: String {
        switch self {
        case .unlimited: "unlimited"
        case .limited(let limit): limit.description
        }
    }

    /// Whether the number in `text` (before any unit) is made of zeros only.
    private static func isZero(_ text: String) -> Bool {
        let number = text.lowercased().drop { $0 == " " || $0 == "\t" }.prefix { $0.isASCIIDigit || $0 == "." }
        return !number.isEmpty && number.contains("0") && number.allSatisfy { $0 == "0" || $0 == "." }
    }
}

/// Why a size or rate could not be parsed; the description quotes the text and shows the accepted forms.
public struct ByteSizeError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// Nothing but whitespace.
        case empty
        /// The number part is not digits with at most one decimal point.
        case notANumber
        /// `iB` without a multiple before it.
        case badUnit
        /// Zero (or less than one byte, like `0.1B`).
        case notPositive
        /// More than 2^63 - 1 bytes.
        case tooLarge
    }

    /// The text as given.
    public let text: String
    public let reason: Reason

    public init(text: String, reason: Reason) {
        self.text = text
        self.reason = reason
    }

    public var description: String {
        let problem = switch reason {
        case .empty: "is empty"
        case .notANumber: "is not a number"
        case .badUnit: "has an unknown unit"
        case .notPositive: "is not more than zero bytes"
        case .tooLarge: "is too large"
        }
        return "size \"\(text)\" \(problem) (expected a number with an optional K, M, G or T, like 500K or 1.5M)"
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
