/// The host of an HTTP URL, validated and in canonical text form.
public struct HTTPHost: Sendable, Hashable, CustomStringConvertible {
    /// How the host was written.
    public enum Kind: Sendable, Hashable {
        /// A DNS name (lowercased).
        case registeredName
        /// A dotted-decimal IPv4 address.
        case ipv4
        /// A bracketed IPv6 literal.
        case ipv6
    }

    /// How the host was written, which decides whether it needs resolving and whether it is valid for SNI.
    public let kind: Kind
    /// The host without brackets, as given to the resolver: `example.com`, `192.0.2.1`, `2001:db8::1`.
    ///
    /// IPv6 addresses are in RFC 5952 canonical form, so equal addresses compare equal.
    public let name: String

    /// The host as written in a URL or `Host` header: IPv6 addresses in brackets.
    public var uriText: String { kind == .ipv6 ? "[\(name)]" : name }

    /// Same as `uriText`.
    public var description: String { uriText }

    init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }

    /// Parses the host part of an authority (brackets included for IPv6).
    ///
    /// Registered names are restricted to letters, digits, `-`, `.` and `_`: everything else RFC 3986
    /// allows (percent-escapes, sub-delims) cannot be a DNS name. A name whose last label is numeric
    /// must be a strict dotted quad; otherwise resolvers would read forms like `127.1` or `0x7f.1`
    /// as addresses, and the URL would not mean what it appears to.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(URLParseError) -> HTTPHost {
        guard let first = bytes.first else { throw URLParseError(.missingHost) }
        // The host as text, for an error only.
        var text: String { String(decoding: bytes, as: UTF8.self) }
        if first == UInt8(ascii: "[") {
            guard bytes.count > 2, bytes.last == UInt8(ascii: "]") else {
                throw URLParseError(.invalidIPv6Address(text))
            }
            let literal = bytes.dropFirst().dropLast()
            if literal.contains(UInt8(ascii: "%")) { throw URLParseError(.ipv6ZoneID(text)) }
            guard let pieces = parseIPv6(literal) else {
                throw URLParseError(.invalidIPv6Address(text))
            }
            return HTTPHost(kind: .ipv6, name: formatIPv6(pieces))
        }
        if bytes.contains(where: { $0 >= 0x80 }) {
            throw URLParseError(.internationalizedHost(text))
        }
        let isNameChar = { (byte: UInt8) in
            FieldSyntax.isAlpha(byte) || FieldSyntax.isDigit(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
        }
        guard bytes.allSatisfy(isNameChar) else { throw URLParseError(.invalidHost(text)) }
        // The last non-empty label, found without splitting the name into an array of labels.
        guard let lastNonDot = bytes.lastIndex(where: { $0 != UInt8(ascii: ".") }) else {
            throw URLParseError(.invalidHost(text))
        }
        let beforeTrailingDots = bytes[...lastNonDot]
        let lastLabel = beforeTrailingDots[(beforeTrailingDots.lastIndex(of: UInt8(ascii: ".")).map { $0 + 1 }
            ?? beforeTrailingDots.startIndex)...]
        if lastLabel.allSatisfy(FieldSyntax.isDigit) || isHexNumber(lastLabel) {
            guard let address = parseIPv4(bytes) else {
                throw URLParseError(.invalidIPv4Address(text))
            }
            return HTTPHost(kind: .ipv4, name: address)
        }
        return HTTPHost(kind: .registeredName, name: String(decoding: bytes.map(asciiLowercase), as: UTF8.self))
    }

    /// ``parse(_:)`` of a host made only of lowercase letters, digits, `-`, `.` and `_` (the caller checked
    /// the bytes), read in place: the same host `parse` gives, or nil where `parse` would refuse it. Every URL
    /// of a long list has its host read, and `parse` works on a copy of the URL's bytes.
    static func parsePlain(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPHost? {
        guard let lastNonDot = bytes.lastIndex(where: { $0 != UInt8(ascii: ".") }) else { return nil }
        let labelStart = bytes[...lastNonDot].lastIndex(of: UInt8(ascii: ".")).map { $0 + 1 } ?? bytes.startIndex
        let lastLabel = bytes[labelStart...lastNonDot]
        if lastLabel.allSatisfy(FieldSyntax.isDigit) || isHexNumber(lastLabel) {
            guard isDottedQuad(bytes) else { return nil }
            return HTTPHost(kind: .ipv4, name: String(decoding: bytes, as: UTF8.self))
        }
        return HTTPHost(kind: .registeredName, name: String(decoding: bytes, as: UTF8.self))
    }

    private static func isHexNumber(_ label: some Collection<UInt8>) -> Bool {
        label.count >= 2 && label.first == UInt8(ascii: "0") && (label.dropFirst().first ?? 0) | 0x20 == UInt8(ascii: "x")
            && label.dropFirst(2).allSatisfy { FieldSyntax.hexValue($0) != nil }
    }

    /// `dec-octet "." dec-octet "." dec-octet "." dec-octet` (RFC 3986 §3.2.2): no leading zeros,
    /// since some resolvers read those as octal.
    static func parseIPv4(_ bytes: ArraySlice<UInt8>) -> String? {
        isDottedQuad(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// Whether `bytes` are a `dec-octet "." dec-octet "." dec-octet "." dec-octet` (``parseIPv4(_:)``).
    static func isDottedQuad(_ bytes: some Sequence<UInt8>) -> Bool {
        // One pass, no arrays (every URL's host is tried as an address first): four dot-separated octets of
        // one to three digits, no leading zero, each at most 255.
        var dots = 0, digits = 0, value = 0, leadingZero = false
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                guard digits > 0 else { return false }
                dots += 1
                digits = 0
                value = 0
                continue
            }
            guard FieldSyntax.isDigit(byte), digits < 3, !(digits == 1 && leadingZero) else { return false }
            if digits == 0 { leadingZero = byte == UInt8(ascii: "0") }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            guard value <= 255 else { return false }
            digits += 1
        }
        return dots == 3 && digits > 0
    }

    /// Parses the text inside the brackets into eight 16-bit pieces (RFC 4291 §2.2 text forms,
    /// as restricted by RFC 3986's `IPv6address`).
    static func parseIPv6(_ bytes: ArraySlice<UInt8>) -> [UInt16]? {
        var pieces: [UInt16] = []
        var compressAt: Int?
        var index = bytes.startIndex
        let end = bytes.endIndex
        if bytes.starts(with: "::".utf8) {
            compressAt = 0
            index += 2
        } else if bytes.first == UInt8(ascii: ":") {
            return nil
        }
        while index < end {
            guard pieces.count < 8 else { return nil }
            let start = index
            var value: UInt16 = 0
            while index < end, index - start < 4, let digit = FieldSyntax.hexValue(bytes[index]) {
                value = value << 4 | UInt16(digit)
                index += 1
            }
            if index < end, bytes[index] == UInt8(ascii: ".") {
                // An embedded IPv4 address ends the literal and fills the last two pieces.
                guard pieces.count <= 6, parseIPv4(bytes[start..<end]) != nil else { return nil }
                let octets = bytes[start..<end].split(separator: UInt8(ascii: "."))
                    .map { $0.reduce(UInt16(0)) { $0 * 10 + UInt16($1 - UInt8(ascii: "0")) } }
                pieces.append(octets[0] << 8 | octets[1])
                pieces.append(octets[2] << 8 | octets[3])
                index = end
                break
            }
            guard index > start else { return nil }
            pieces.append(value)
            if index == end { break }
            guard bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            if index < end, bytes[index] == UInt8(ascii: ":") {
                guard compressAt == nil else { return nil }
                compressAt = pieces.count
                index += 1
            } else if index == end {
                return nil
            }
        }
        if let compressAt {
            guard pieces.count <= 7 else { return nil }
            pieces.insert(contentsOf: repeatElement(0, count: 8 - pieces.count), at: compressAt)
        }
        return pieces.count == 8 ? pieces : nil
    }

    /// RFC 5952 text: lowercase hex without leading zeros, the longest run of two or more zero pieces
    /// (the first one on a tie) written as `::`.
    static func formatIPv6(_ pieces: [UInt16]) -> String {
        var bestStart = -1, bestLength = 1
        var runStart = -1
        for index in 0...pieces.count {
            if index < pieces.count, pieces[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                if index - runStart > bestLength { (bestStart, bestLength) = (runStart, index - runStart) }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            pieces[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }
}
