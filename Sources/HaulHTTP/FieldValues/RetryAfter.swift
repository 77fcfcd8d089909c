/// A `Retry-After` field value (RFC 9110 §10.2.3): a delay in seconds or the date to retry at.
public enum RetryAfter: Sendable, Hashable {
    /// Wait this many seconds (never negative).
    case seconds(Int64)
    /// Wait until this date.
    case date(HTTPDate)

    /// Parses delay-seconds or an HTTP-date; nil when neither, or when the delay overflows `Int64`.
    public init?(_ value: ArraySlice<UInt8>) {
        var scanner = FieldValueScanner(value)
        scanner.skipWhitespace()
        if let first = scanner.peek, FieldSyntax.isDigit(first) {
            guard let seconds = scanner.consumeDecimal() else { return nil }
            scanner.skipWhitespace()
            guard scanner.isAtEnd else { return nil }
            self = .seconds(seconds)
        } else {
            guard let date = HTTPDate(value) else { return nil }
            self = .date(date)
        }
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// How many seconds to wait from `now` (seconds since the Unix epoch); 0 for a date already past.
    public func delay(now: Int64) -> Int64 {
        switch self {
        case let .seconds(seconds):
            return seconds
        case let .date(date):
            let (difference, overflow) = date.secondsSinceEpoch.subtractingReportingOverflow(now)
            if overflow { return now < 0 ? Int64.max : 0 }
            return max(0, difference)
        }
    }
}
