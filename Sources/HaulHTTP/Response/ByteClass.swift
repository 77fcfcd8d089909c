/// Character classes of RFC 9110 §5.6, looked up by byte value.
enum ByteClass {
    static let token: UInt8 = 1
    /// field-vchar, SP and HTAB: what may appear inside a field value or a reason phrase.
    static let fieldContent: UInt8 = 2

    /// One entry per byte value; built once.
    static let table: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        for byte in 0..<256 {
            var bits: UInt8 = 0
            let b = UInt8(byte)
            if isTokenCharacter(b) { bits |= token }
            if b == 0x09 || (b >= 0x20 && b != 0x7F) { bits |= fieldContent }
            table[byte] = bits
        }
        return table
    }()

    static func isTokenCharacter(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }
}

@usableFromInline let asciiCR: UInt8 = 0x0D
@usableFromInline let asciiLF: UInt8 = 0x0A
@usableFromInline let asciiSP: UInt8 = 0x20
@usableFromInline let asciiHT: UInt8 = 0x09
@usableFromInline let asciiColon: UInt8 = 0x3A
