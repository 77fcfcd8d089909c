/// A `Content-Type` field value (RFC 9110 §8.3.1): `type/subtype` and its parameters.
///
/// A downloader reads it for one reason: a `206` whose type is `multipart/byteranges` carries MIME framing
/// around its bytes (RFC 9110 §14.6), which must never be written as the file. So the type is what must
/// always be found: a value whose parameters do not follow the grammar still parses, with the parameters
/// read before the first malformed one and ``parametersAreWellFormed`` false. Only a value that does not
/// begin with `token "/" token` is not a media type at all (nil).
public struct MediaType: Sendable, Hashable, CustomStringConvertible {
    /// One `name=value` parameter.
    public struct Parameter: Sendable, Hashable {
        /// The name, lowercased (parameter names are case-insensitive).
        public let name: String
        /// The value as sent, a quoted string unescaped, each octet read as latin-1. Case is kept: some
        /// parameters (`boundary`) are case-sensitive.
        public let value: String

        /// A parameter; `name` is expected lowercased, as parsing gives it.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The top-level type, lowercased (`multipart`).
    public let type: String
    /// The subtype, lowercased (`byteranges`).
    public let subtype: String
    /// The parameters in order (RFC 9110 §5.6.6; an empty one, as in `a/b;;c=d`, is skipped).
    public let parameters: [Parameter]
    /// Whether everything after `type/subtype` followed the grammar. When false, ``parameters`` holds the
    /// ones before the first that did not, and the rest of the value was ignored.
    public let parametersAreWellFormed: Bool

    /// Parses a field value; nil when it does not begin with `token "/" token` (after optional whitespace).
    public init?(_ value: ArraySlice<UInt8>) {
        var scanner = FieldValueScanner(value)
        scanner.skipWhitespace()
        guard let type = scanner.consumeToken(), scanner.consume(UInt8(ascii: "/")),
              let subtype = scanner.consumeToken() else { return nil }
        self.type = Self.lowercasedText(type)
        self.subtype = Self.lowercasedText(subtype)
        var parameters: [Parameter] = []
        var wellFormed = true
        while true {
            scanner.skipWhitespace()
            if scanner.isAtEnd { break }
            guard scanner.consume(UInt8(ascii: ";")) else {
                wellFormed = false
                break
            }
            scanner.skipWhitespace()
            // `a/b;` and `a/b;;c=d`: RFC 9110 §5.6.6 allows empty parameters.
            if scanner.isAtEnd || scanner.peek == UInt8(ascii: ";") { continue }
            guard let name = scanner.consumeToken(), scanner.consume(UInt8(ascii: "=")) else {
                wellFormed = false
                break
            }
            let parameterValue: [UInt8]
            if let quoted = scanner.consumeQuotedString() {
                parameterValue = quoted
            } else if let token = scanner.consumeToken() {
                parameterValue = Array(token)
            } else {
                wellFormed = false
                break
            }
            parameters.append(Parameter(name: String(decoding: name.map(asciiLowercase), as: UTF8.self),
                                        value: latin1String(parameterValue)))
        }
        self.parameters = parameters
        self.parametersAreWellFormed = wellFormed
    }

    /// A token as lowercase text; one already lowercase (as servers send nearly every type) copied once, without
    /// a lowercased array first: every response's `Content-Type` is read.
    private static func lowercasedText(_ token: ArraySlice<UInt8>) -> String {
        if !token.contains(where: { $0 &- UInt8(ascii: "A") < 26 }) { return String(decoding: token, as: UTF8.self) }
        return String(decoding: token.map(asciiLowercase), as: UTF8.self)
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// `type/subtype`, lowercased.
    public var essence: String { "\(type)/\(subtype)" }

    /// The value of the first parameter named `name` (case-insensitive), if any.
    public func parameter(_ name: String) -> String? {
        let name = String(decoding: name.utf8.map(asciiLowercase), as: UTF8.self)
        return parameters.first { $0.name == name }?.value
    }

    /// Whether this is `multipart/byteranges`: a body of MIME parts, each with its own `Content-Range`,
    /// between `--boundary` lines (RFC 9110 §14.6). Whatever the parameters say, even when there is no
    /// boundary: the body is then framed in a way nobody can read, and still not the bytes.
    public var isMultipartByteranges: Bool { type == "multipart" && subtype == "byteranges" }

    /// The `boundary` parameter (RFC 2046 §5.1.1), when present and not empty.
    public var boundary: String? { parameter("boundary").flatMap { $0.isEmpty ? nil : $0 } }

    /// The field value, e.g. `multipart/byteranges; boundary=abc` (a value that is not a token quoted),
    /// as latin-1 octets: `MediaType(fieldValue[...])` reads back as this value when its parameters were
    /// well formed.
    public var fieldValue: [UInt8] {
        var bytes = Array(essence.utf8)
        for parameter in parameters {
            bytes += Array("; \(parameter.name)=".utf8)
            let value = parameter.value.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
            if FieldSyntax.isToken(value) {
                bytes += value
            } else {
                bytes.append(UInt8(ascii: "\""))
                for byte in value {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { bytes.append(UInt8(ascii: "\\")) }
                    bytes.append(byte)
                }
                bytes.append(UInt8(ascii: "\""))
            }
        }
        return bytes
    }

    /// ``fieldValue`` as text.
    public var description: String { latin1String(fieldValue) }
}
