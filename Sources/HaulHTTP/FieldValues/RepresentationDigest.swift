/// The `Repr-Digest` field (RFC 9530 §3): a Structured Field Dictionary (RFC 8941 §3.2) whose keys name
/// digest algorithms (`sha-256`, `sha-512`) and whose values are Byte Sequences (`:base64:`), the digest of
/// the whole selected representation — on a `206` too, not of the part the response carries.
///
/// Parsed strictly as RFC 8941 says: a value that is not a valid Dictionary is ignored as a whole (RFC 8941
/// §4.2: a parse failure fails the field), duplicate keys keep their last value, members whose value is not
/// a Byte Sequence (a token, an inner list) are left out, and parameters are read and ignored.
public enum RepresentationDigest {
    /// Longest combined field value parsed (a dozen digests fit in well under 2 KiB).
    public static let maximumLength = 16 * 1024

    /// The `(algorithm, digest)` members of the field's lines, in order (algorithm keys as sent: RFC 8941 keys
    /// are lowercase already); empty when the field does not parse.
    public static func members(of lines: [ArraySlice<UInt8>]) -> [(algorithm: String, digest: [UInt8])] {
        // Lines of one field combine with a comma (RFC 8941 §4.2).
        var combined: [UInt8] = []
        for (index, line) in lines.enumerated() {
            if index > 0 { combined += Array(", ".utf8) }
            combined += line
            guard combined.count <= maximumLength else { return [] }
        }
        var parser = Parser(bytes: combined)
        guard let dictionary = parser.dictionary() else { return [] }
        return dictionary.compactMap { key, value in value.map { (key, $0) } }
    }

    /// The members of one field value given as text.
    public static func members(of value: String) -> [(algorithm: String, digest: [UInt8])] {
        members(of: [ArraySlice(value.utf8)])
    }

    /// RFC 8941 §4.2's parsing algorithms, for a Dictionary; each returns nil on a failure.
    private struct Parser {
        let bytes: [UInt8]
        var position = 0

        private var next: UInt8? { position < bytes.count ? bytes[position] : nil }

        /// Members in order of first appearance, each with its last value: the Byte Sequence, or nil for any
        /// other value.
        mutating func dictionary() -> [(String, [UInt8]?)]? {
            skip(spacesOnly: true)
            var members: [(String, [UInt8]?)] = []
            while next != nil {
                guard let key = key() else { return nil }
                var value: [UInt8]?
                if next == UInt8(ascii: "=") {
                    position += 1
                    if next == UInt8(ascii: "(") {
                        guard innerList() else { return nil }
                    } else {
                        guard let item = bareItem() else { return nil }
                        if case .bytes(let digest) = item { value = digest }
                    }
                }
                guard parameters() else { return nil }
                if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
                skip(spacesOnly: false)
                guard next != nil else { return members }
                guard next == UInt8(ascii: ",") else { return nil }
                position += 1
                skip(spacesOnly: false)
                // A trailing comma is a failure.
                guard next != nil else { return nil }
            }
            return members
        }

        private mutating func skip(spacesOnly: Bool) {
            while let byte = next, byte == 0x20 || (!spacesOnly && byte == 0x09) { position += 1 }
        }

        /// `key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`
        private mutating func key() -> String? {
            guard let first = next, Self.isLowercaseLetter(first) || first == UInt8(ascii: "*") else { return nil }
            let start = position
            while let byte = next, Self.isLowercaseLetter(byte) || Self.isDigit(byte) || "_-.*".utf8.contains(byte) { position += 1 }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        /// `*( ";" *SP key [ "=" bare-item ] )`
        private mutating func parameters() -> Bool {
            while next == UInt8(ascii: ";") {
                position += 1
                skip(spacesOnly: true)
                guard key() != nil else { return false }
                if next == UInt8(ascii: "=") {
                    position += 1
                    guard bareItem() != nil else { return false }
                }
            }
            return true
        }

        /// `"(" *SP [ item *( 1*SP item ) *SP ] ")" parameters`
        private mutating func innerList() -> Bool {
            position += 1
            while true {
                skip(spacesOnly: true)
                if next == UInt8(ascii: ")") {
                    position += 1
                    return parameters()
                }
                guard bareItem() != nil, parameters() else { return false }
                guard let byte = next, byte == 0x20 || byte == UInt8(ascii: ")") else { return false }
            }
        }

        private enum Item { case bytes([UInt8]), other }

        /// A bare item: a Byte Sequence's bytes, or any other kind.
        private mutating func bareItem() -> Item? {
            guard let first = next else { return nil }
            switch first {
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number() ? .other : nil
            case UInt8(ascii: "\""): return string() ? .other : nil
            case UInt8(ascii: ":"): return byteSequence().map(Item.bytes)
            case UInt8(ascii: "?"):
                position += 1
                guard let value = next, value == UInt8(ascii: "0") || value == UInt8(ascii: "1") else { return nil }
                position += 1
                return .other
            case _ where Self.isLetter(first) || first == UInt8(ascii: "*"):
                while let byte = next, Self.isTokenCharacter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "/") { position += 1 }
                return .other
            default: return nil
            }
        }

        /// An Integer (at most 15 digits) or a Decimal (at most 12 digits before the point, 1 to 3 after).
        private mutating func number() -> Bool {
            if next == UInt8(ascii: "-") { position += 1 }
            var integerDigits = 0, fractionDigits = 0, sawPoint = false
            while let byte = next {
                if Self.isDigit(byte) {
                    if sawPoint { fractionDigits += 1 } else { integerDigits += 1 }
                } else if byte == UInt8(ascii: "."), !sawPoint, integerDigits > 0 {
                    sawPoint = true
                } else {
                    break
                }
                position += 1
            }
            guard integerDigits > 0 else { return false }
            return sawPoint ? integerDigits <= 12 && (1...3).contains(fractionDigits) : integerDigits <= 15
        }

        /// `DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE`, printable ASCII only.
        private mutating func string() -> Bool {
            position += 1
            while let byte = next {
                position += 1
                switch byte {
                case UInt8(ascii: "\""): return true
                case UInt8(ascii: "\\"):
                    guard let escaped = next, escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else { return false }
                    position += 1
                case 0x20...0x7E: continue
                default: return false
                }
            }
            return false
        }

        /// `":" *(base64) ":"`, padding optional (RFC 8941 §4.2.7 asks parsers to accept it missing).
        private mutating func byteSequence() -> [UInt8]? {
            position += 1
            let start = position
            while let byte = next, byte != UInt8(ascii: ":") {
                guard Self.isLetter(byte) || Self.isDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=") else { return nil }
                position += 1
            }
            guard next == UInt8(ascii: ":") else { return nil }
            var text = String(decoding: bytes[start..<position], as: UTF8.self)
            position += 1
            if !text.utf8.contains(UInt8(ascii: "=")), text.utf8.count % 4 != 0 {
                text += String(repeating: "=", count: 4 - text.utf8.count % 4)
            }
            return Base64.decode(text)
        }

        private static func isLowercaseLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
        private static func isLetter(_ byte: UInt8) -> Bool { isLowercaseLetter(byte | 0x20) }
        private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        /// RFC 9110 `tchar`.
        private static func isTokenCharacter(_ byte: UInt8) -> Bool {
            isLetter(byte) || isDigit(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
