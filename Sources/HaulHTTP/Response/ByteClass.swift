import CHaulScan

/// Character classes of RFC 9110 §5.6, looked up by byte value, and the scanning loops built on them.
enum ByteClass {
    static let token: UInt8 = 1
    /// field-vchar, SP and HTAB: what may appear inside a field value or a reason phrase.
    static let fieldContent: UInt8 = 2

    /// One entry per byte value. A raw pointer (built once, never freed) so that hot loops index it without
    /// array bounds checks or retain/release.
    nonisolated(unsafe) static let table: UnsafePointer<UInt8> = {
        let table = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
        for byte in 0..<256 {
            let b = UInt8(byte)
            var bits: UInt8 = 0
            if FieldSyntax.isTokenChar(b) { bits |= token }
            if b == 0x09 || (b >= 0x20 && b != 0x7F) { bits |= fieldContent }
            table[byte] = bits
        }
        return UnsafePointer(table)
    }()

    /// The first index at or after `i` whose byte is not a token character, or `end`.
    @inline(__always)
    static func skipToken(_ p: UnsafePointer<UInt8>, from i: Int, to end: Int, table t: UnsafePointer<UInt8>) -> Int {
        i &+ haul_scan_token(p + i, end &- i, t)
    }

    /// The first index at or after `i` whose byte may not appear in a field value (a control byte other
    /// than HTAB, or DEL), or `end`.
    @inline(__always)
    static func skipFieldContent(_ p: UnsafePointer<UInt8>, from i: Int, to end: Int, table t: UnsafePointer<UInt8>) -> Int {
        var i = i
        while true {
            i &+= haul_scan_field_content(p + i, end &- i)
            guard i < end && p[i] == asciiHT else { return i }
            i &+= 1
        }
    }
}

@usableFromInline let asciiCR: UInt8 = 0x0D
@usableFromInline let asciiLF: UInt8 = 0x0A
@usableFromInline let asciiSP: UInt8 = 0x20
@usableFromInline let asciiHT: UInt8 = 0x09
@usableFromInline let asciiColon: UInt8 = 0x3A
