/// A `Content-Range` field value (RFC 9110 §14.4) in the `bytes` unit.
///
/// Offsets are `Int64` so they can be used as file offsets directly; values above `Int64.max`
/// are rejected rather than wrapped.
public enum ContentRange: Sendable, Hashable, CustomStringConvertible {
    /// A 206 part: bytes `first...last` of a representation whose length may be unknown (`*`).
    case bytes(first: Int64, last: Int64, completeLength: Int64?)
    /// The 416 form `bytes */complete-length`: no range was satisfiable.
    case unsatisfied(completeLength: Int64)

    /// Parses a field value; nil when it is malformed, uses another unit, or its numbers are inconsistent
    /// (`first > last`, `last >= complete-length`) or overflow `Int64`.
    public init?(_ value: ArraySlice<UInt8>) {
        var scanner = FieldValueScanner(value)
        scanner.skipWhitespace()
        guard let unit = scanner.consumeToken(), asciiCaseInsensitiveEquals(unit, "bytes"),
              let separator = scanner.peek, FieldSyntax.isWhitespace(separator)
        else { return nil }
        scanner.skipWhitespace()

        if scanner.consume(UInt8(ascii: "*")) {
            guard scanner.consume(UInt8(ascii: "/")), let length = scanner.consumeDecimal() else { return nil }
            scanner.skipWhitespace()
            guard scanner.isAtEnd else { return nil }
            self = .unsatisfied(completeLength: length)
            return
        }

        guard let first = scanner.consumeDecimal(), scanner.consume(UInt8(ascii: "-")),
              let last = scanner.consumeDecimal(), scanner.consume(UInt8(ascii: "/"))
        else { return nil }
        let length: Int64?
        if scanner.consume(UInt8(ascii: "*")) {
            length = nil
        } else {
            guard let known = scanner.consumeDecimal() else { return nil }
            length = known
        }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { return nil }
        self.init(first: first, last: last, completeLength: length)
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// A satisfied range, validated the same way as a parsed one.
    ///
    /// `last` must stay below `Int64.max` so that `count` cannot overflow.
    public init?(first: Int64, last: Int64, completeLength: Int64?) {
        guard first >= 0, first <= last, last < Int64.max else { return nil }
        if let completeLength, last >= completeLength { return nil }
        self = .bytes(first: first, last: last, completeLength: completeLength)
    }

    /// The bytes carried, or nil for the unsatisfied form.
    public var range: ClosedRange<Int64>? {
        guard case let .bytes(first, last, _) = self else { return nil }
        return first...last
    }

    /// The number of bytes carried (0 for the unsatisfied form).
    public var count: Int64 {
        guard case let .bytes(first, last, _) = self else { return 0 }
        return last - first + 1
    }

    /// The length of the whole representation, when the server told it.
    public var completeLength: Int64? {
        switch self {
        case let .bytes(_, _, length): return length
        case let .unsatisfied(length): return length
        }
    }

    /// The field value, e.g. `bytes 0-99/1000` or `bytes */1000`.
    public var description: String {
        switch self {
        case let .bytes(first, last, length): return "bytes \(first)-\(last)/\(length.map(String.init) ?? "*")"
        case let .unsatisfied(length): return "bytes */\(length)"
        }
    }
}

/// A single byte range to ask for in a `Range` request header (RFC 9110 §14.1.2).
///
/// Only one range per request: multipart/byteranges responses are not something a download engine wants.
public struct RangeRequest: Sendable, Hashable, CustomStringConvertible {
    private enum Form: Sendable, Hashable {
        case from(Int64)
        case closed(Int64, Int64)
        case suffix(Int64)
    }

    private let form: Form

    private init(_ form: Form) { self.form = form }

    /// `bytes=first-`: everything from `first` to the end. `first` must not be negative.
    public static func from(_ first: Int64) -> RangeRequest {
        precondition(first >= 0, "a byte range cannot start before offset 0")
        return RangeRequest(.from(first))
    }

    /// `bytes=first-last`, both inclusive. The bounds must not be negative.
    public static func bytes(_ range: ClosedRange<Int64>) -> RangeRequest {
        precondition(range.lowerBound >= 0, "a byte range cannot start before offset 0")
        return RangeRequest(.closed(range.lowerBound, range.upperBound))
    }

    /// `bytes=-length`: the last `length` bytes. `length` must be positive.
    public static func suffix(_ length: Int64) -> RangeRequest {
        precondition(length > 0, "a suffix range must ask for at least one byte")
        return RangeRequest(.suffix(length))
    }

    /// The first offset asked for, when it does not depend on the representation's length.
    public var first: Int64? {
        switch form {
        case let .from(first), let .closed(first, _): return first
        case .suffix: return nil
        }
    }

    /// The last offset asked for, when bounded.
    public var last: Int64? {
        guard case let .closed(_, last) = form else { return nil }
        return last
    }

    /// The header value, e.g. `bytes=0-` or `bytes=100-199`.
    public var headerValue: String {
        switch form {
        case let .from(first): return "bytes=\(first)-"
        case let .closed(first, last): return "bytes=\(first)-\(last)"
        case let .suffix(length): return "bytes=-\(length)"
        }
    }

    /// Writes ``headerValue``'s bytes, without making the string.
    func writeHeaderValue(to out: inout HeadWriter) {
        out.writeLiteral("bytes=")
        switch form {
        case let .from(first):
            out.writeDecimal(first)
            out.writeByte(UInt8(ascii: "-"))
        case let .closed(first, last):
            out.writeDecimal(first)
            out.writeByte(UInt8(ascii: "-"))
            out.writeDecimal(last)
        case let .suffix(length):
            out.writeByte(UInt8(ascii: "-"))
            out.writeDecimal(length)
        }
    }

    /// Same as `headerValue`.
    public var description: String { headerValue }
}
