/// A `Content-Disposition` field value (RFC 6266), reduced to what a downloader needs: the disposition
/// type and the suggested file name.
///
/// The file name is returned raw, exactly as the server suggested it: it may contain `/`, `..`, control
/// characters or be absurdly long. It is NOT safe to use as a path; the engine sanitizes it.
public struct ContentDisposition: Sendable, Hashable {
    /// The disposition type, lowercased: usually `attachment` or `inline`.
    public let type: String
    /// The suggested file name: from `filename*` when that is present and decodable, else from `filename`.
    /// Nil when neither gives a non-empty name.
    public let filename: String?

    /// Parses a field value; nil when its structure (type, `;`, `name=value` parameters) is malformed.
    ///
    /// Parameter names are case-insensitive and only the first occurrence of each counts. Beyond
    /// RFC 6266, an unquoted value may contain spaces and other visible characters up to the next `;`,
    /// as browsers accept, and a `filename` quoted string is read as UTF-8 when it is valid UTF-8,
    /// else as ISO-8859-1. A `filename*` with an unknown charset, bad percent-encoding or invalid UTF-8
    /// is ignored, falling back to `filename`.
    public init?(_ value: ArraySlice<UInt8>) {
        var scanner = FieldValueScanner(value)
        scanner.skipWhitespace()
        guard let type = scanner.consumeToken() else { return nil }
        var plainName: [UInt8]?
        var extendedName: String??
        while true {
            scanner.skipWhitespace()
            if scanner.isAtEnd { break }
            guard scanner.consume(UInt8(ascii: ";")) else { return nil }
            scanner.skipWhitespace()
            // A trailing or doubled `;` carries no parameter; tolerate it.
            if scanner.isAtEnd || scanner.peek == UInt8(ascii: ";") { continue }
            guard let name = scanner.consumeToken() else { return nil }
            scanner.skipWhitespace()
            guard scanner.consume(UInt8(ascii: "=")) else { return nil }
            scanner.skipWhitespace()
            guard let parameterValue = Self.consumeValue(&scanner) else { return nil }
            if asciiCaseInsensitiveEquals(name, "filename"), plainName == nil {
                plainName = parameterValue
            } else if asciiCaseInsensitiveEquals(name, "filename*"), extendedName == nil {
                extendedName = .some(Self.decodeExtendedValue(parameterValue[...]))
            }
        }
        self.type = String(decoding: type.map(asciiLowercase), as: UTF8.self)
        let extended = extendedName.flatMap { $0 }.flatMap { $0.isEmpty ? nil : $0 }
        let plain = plainName.flatMap { $0.isEmpty ? nil : FieldSyntax.decodeText($0) }
        filename = extended ?? plain
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// Whether the server asked for the content to be saved rather than displayed.
    public var isAttachment: Bool { type == "attachment" }

    /// A quoted string, or a lenient unquoted value running to the next `;` with trailing whitespace dropped.
    private static func consumeValue(_ scanner: inout FieldValueScanner) -> [UInt8]? {
        if scanner.peek == UInt8(ascii: "\"") { return scanner.consumeQuotedString() }
        var text = scanner.consume { byte in
            byte != UInt8(ascii: ";") && byte != UInt8(ascii: "\"") && (byte == 0x09 || !FieldSyntax.isControl(byte))
        }
        while let last = text.last, FieldSyntax.isWhitespace(last) { text.removeLast() }
        return text.isEmpty ? nil : Array(text)
    }

    /// Decodes an RFC 8187 `ext-value`: `charset'[language]'percent-encoded`.
    ///
    /// Nil when the charset is neither UTF-8 nor ISO-8859-1 or the bytes do not decode.
    static func decodeExtendedValue(_ value: ArraySlice<UInt8>) -> String? {
        let parts = value.split(separator: UInt8(ascii: "'"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3,
              parts[1].allSatisfy({ FieldSyntax.isAlpha($0) || FieldSyntax.isDigit($0) || $0 == UInt8(ascii: "-") }),
              parts[2].allSatisfy({ FieldSyntax.isTokenChar($0) && $0 != UInt8(ascii: "'") }),
              let decoded = FieldSyntax.percentDecoded(parts[2])
        else { return nil }
        if asciiCaseInsensitiveEquals(parts[0], "UTF-8") {
            return String(validating: decoded, as: UTF8.self)
        }
        if asciiCaseInsensitiveEquals(parts[0], "ISO-8859-1") {
            return latin1String(decoded)
        }
        return nil
    }
}
