/// Byte classes of RFC 9110 §5.6 shared by the field-value, URL and request-head code.
///
/// Kept in a namespace so these small helpers cannot collide with other internal names in the module.
enum FieldSyntax {
    /// `tchar` (RFC 9110 §5.6.2): the bytes allowed in a token such as a field name or range unit.
    @inline(__always)
    static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether every byte is a `tchar` and there is at least one.
    static func isToken(_ bytes: some Collection<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.allSatisfy(isTokenChar)
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    @inline(__always)
    static func isAlpha(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

    /// SP or HTAB, the only whitespace allowed inside field values (`OWS`).
    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// Control characters (CTL): never valid raw in a URL and, except HTAB, never in a field value.
    @inline(__always)
    static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }

    /// The value of a hexadecimal digit, either case.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Uppercase hexadecimal digits, as RFC 3986 §2.1 recommends for percent-encoding.
    static let upperHexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Decodes `%HH` escapes; nil when a `%` is not followed by two hexadecimal digits.
    static func percentDecoded(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                result.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            result.append(high << 4 | low)
        }
        return result
    }

    /// Decodes text as UTF-8 when it is valid UTF-8, otherwise as ISO-8859-1.
    ///
    /// Servers put raw UTF-8 into quoted strings although RFC 9110 only promises latin-1 there;
    /// valid UTF-8 is very unlikely to be intended latin-1, so trying it first recovers the common case.
    static func decodeText(_ bytes: some Collection<UInt8>) -> String {
        String(validating: bytes, as: UTF8.self) ?? latin1String(bytes)
    }
}

/// A forward-only reader over one field value, for the small grammars of RFC 9110 and its companions.
///
/// Every `consume` method leaves the position unchanged when it returns nil or false,
/// so callers can try alternatives.
struct FieldValueScanner {
    let bytes: ArraySlice<UInt8>
    private(set) var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.index = bytes.startIndex
    }

    var isAtEnd: Bool { index == bytes.endIndex }

    var peek: UInt8? { isAtEnd ? nil : bytes[index] }

    /// The unread bytes.
    var remainder: ArraySlice<UInt8> { bytes[index...] }

    /// Skips optional whitespace (`OWS`).
    mutating func skipWhitespace() {
        while let byte = peek, FieldSyntax.isWhitespace(byte) { index += 1 }
    }

    /// Consumes `byte` if it is next.
    mutating func consume(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    /// Consumes the next three bytes if, ASCII-lowercased, they are one of `keys` (each ``lowercasedKey(_:_:_:)``
    /// of a three-byte name), returning its position in `keys`. One comparison of integers per name, where
    /// comparing each name as a string cost the date parser most of its time.
    mutating func consumeThreeByteName(among keys: [UInt32]) -> Int? {
        guard index + 3 <= bytes.endIndex else { return nil }
        let key = Self.lowercasedKey(bytes[index], bytes[index + 1], bytes[index + 2])
        guard let found = keys.firstIndex(of: key) else { return nil }
        index += 3
        return found
    }

    /// Three bytes ASCII-lowercased, packed into an integer (first byte lowest): for ``consumeThreeByteName(among:)``.
    static func lowercasedKey(_ first: UInt8, _ second: UInt8, _ third: UInt8) -> UInt32 {
        UInt32(asciiLowercase(first)) | UInt32(asciiLowercase(second)) << 8 | UInt32(asciiLowercase(third)) << 16
    }

    /// The ``lowercasedKey(_:_:_:)`` of each three-byte name in `names` (their concatenation).
    static func lowercasedKeys(_ names: StaticString) -> [UInt32] {
        let bytes = names.utf8Start
        return (0..<names.utf8CodeUnitCount / 3).map { lowercasedKey(bytes[3 * $0], bytes[3 * $0 + 1], bytes[3 * $0 + 2]) }
    }

    /// Consumes `literal` if it comes next, ignoring ASCII case.
    mutating func consumeCaseInsensitive(_ literal: String) -> Bool {
        let end = index + literal.utf8.count
        guard end <= bytes.endIndex, asciiCaseInsensitiveEquals(bytes[index..<end], literal) else { return false }
        index = end
        return true
    }

    /// Consumes bytes while `predicate` holds and returns them (possibly empty).
    mutating func consume(while predicate: (UInt8) -> Bool) -> ArraySlice<UInt8> {
        let start = index
        while let byte = peek, predicate(byte) { index += 1 }
        return bytes[start..<index]
    }

    /// Consumes a non-empty `token`.
    mutating func consumeToken() -> ArraySlice<UInt8>? {
        let token = consume(while: FieldSyntax.isTokenChar)
        return token.isEmpty ? nil : token
    }

    /// Consumes `1*DIGIT` as a non-negative Int64; nil when there are no digits or the number overflows.
    mutating func consumeDecimal() -> Int64? {
        let start = index
        var value: Int64 = 0
        while let byte = peek, FieldSyntax.isDigit(byte) {
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflowA, !overflowB else {
                index = start
                return nil
            }
            value = sum
            index += 1
        }
        guard index > start else { return nil }
        return value
    }

    /// Consumes exactly `count` digits (for dates, where widths are fixed).
    mutating func consumeDigits(_ count: Int) -> Int? {
        let end = index + count
        guard end <= bytes.endIndex, bytes[index..<end].allSatisfy(FieldSyntax.isDigit) else { return nil }
        let value = bytes[index..<end].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        index = end
        return value
    }

    /// Consumes a `quoted-string` (RFC 9110 §5.6.4) and returns its content with `quoted-pair`s unescaped.
    mutating func consumeQuotedString() -> [UInt8]? {
        let start = index
        guard consume(UInt8(ascii: "\"")) else { return nil }
        var content: [UInt8] = []
        while let byte = peek {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return content
            case UInt8(ascii: "\\"):
                guard let escaped = peek, escaped == 0x09 || !FieldSyntax.isControl(escaped) else {
                    index = start
                    return nil
                }
                content.append(escaped)
                index += 1
            case _ where byte == 0x09 || !FieldSyntax.isControl(byte):
                content.append(byte)
            default:
                index = start
                return nil
            }
        }
        index = start
        return nil
    }

    /// Reads `value` as a comma-separated list of tokens (`#token`, RFC 9110 §5.6.1), each lowercased; nil
    /// when an element is not a token. Empty elements (`a, , b`) are tolerated, as the list rule asks.
    static func lowercasedTokenList(_ value: ArraySlice<UInt8>) -> [String]? {
        var scanner = FieldValueScanner(value)
        var tokens: [String] = []
        while true {
            scanner.skipWhitespace()
            if scanner.isAtEnd { break }
            if scanner.consume(UInt8(ascii: ",")) { continue }
            guard let token = scanner.consumeToken() else { return nil }
            tokens.append(String(decoding: token.map(asciiLowercase), as: UTF8.self))
            scanner.skipWhitespace()
            guard scanner.isAtEnd || scanner.consume(UInt8(ascii: ",")) else { return nil }
        }
        return tokens
    }
}
