// The journal format's byte-level pieces: bounds-checked little-endian reads that name the field they
// read, and the appends the encoder writes with. ``JournalCodec`` composes them into the record layout.

/// Bounds-checked little-endian reads over `bytes[position..<end]`; offsets are indices into `bytes`.
struct JournalByteReader {
    let bytes: [UInt8]
    var position: Int
    let end: Int
    let region: JournalError.Region

    var remaining: Int { end - position }

    /// Advances over `count` bytes and returns where they start; throws if fewer remain.
    mutating func skip(_ count: Int, field: String) throws(JournalError) -> Int {
        guard count >= 0, position <= end, count <= end - position else {
            throw .truncated(field: field, need: count, offset: position, end: end, region: region)
        }
        let start = position
        position += count
        return start
    }

    mutating func bytes(_ count: Int, field: String) throws(JournalError) -> [UInt8] {
        let start = try skip(count, field: field)
        return Array(bytes[start..<start + count])
    }

    mutating func u8(_ field: String) throws(JournalError) -> UInt8 {
        bytes[try skip(1, field: field)]
    }

    mutating func u16(_ field: String) throws(JournalError) -> UInt16 {
        UInt16(truncatingIfNeeded: try little(2, field: field))
    }

    mutating func u32(_ field: String) throws(JournalError) -> UInt32 {
        UInt32(truncatingIfNeeded: try little(4, field: field))
    }

    mutating func u64(_ field: String) throws(JournalError) -> UInt64 {
        try little(8, field: field)
    }

    mutating func i64(_ field: String) throws(JournalError) -> Int64 {
        Int64(bitPattern: try little(8, field: field))
    }

    mutating func nonNegativeI64(_ field: String) throws(JournalError) -> Int64 {
        let offset = position
        let value = try i64(field)
        guard value >= 0 else { throw .invalidValue(field: field, value: value, offset: offset) }
        return value
    }

    private mutating func little(_ count: Int, field: String) throws(JournalError) -> UInt64 {
        let start = try skip(count, field: field)
        var value: UInt64 = 0
        for index in 0..<count { value |= UInt64(bytes[start + index]) << (8 * UInt64(index)) }
        return value
    }

    /// An unsigned LEB128 varint of at most 10 bytes whose value fits in 63 bits.
    mutating func varint(_ field: String) throws(JournalError) -> Int64 {
        let offset = position
        var value: UInt64 = 0
        for index in 0..<10 {
            let byte = bytes[try skip(1, field: field)]
            value |= UInt64(byte & 0x7F) << (7 * UInt64(index))
            if byte & 0x80 == 0 {
                // The 10th byte carries bit 63 only; anything above 2^63-1 does not fit an offset.
                guard index < 9 || byte <= 1, value <= UInt64(Int64.max) else {
                    throw .badVarint(field: field, offset: offset)
                }
                return Int64(value)
            }
        }
        throw .badVarint(field: field, offset: offset)
    }

    mutating func string(_ count: Int, field: String) throws(JournalError) -> String {
        let start = try skip(count, field: field)
        guard let string = String(validating: bytes[start..<start + count], as: UTF8.self) else {
            throw .invalidUTF8(field: field, offset: start)
        }
        return string
    }

    /// A UTF-8 string with a u16 length prefix of at most `limit`.
    mutating func string16(_ field: String, limit: Int) throws(JournalError) -> String {
        let offset = position
        let length = Int(try u16("\(field) length"))
        guard length <= limit else { throw .fieldTooLong(field: field, length: length, limit: limit, offset: offset) }
        return try string(length, field: field)
    }
}

extension [UInt8] {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        var value = value.littleEndian
        Swift.withUnsafeBytes(of: &value) { append(contentsOf: $0) }
    }

    mutating func appendField16(_ bytes: [UInt8]) {
        appendLittleEndian(UInt16(truncatingIfNeeded: bytes.count))
        append(contentsOf: bytes)
    }

    mutating func appendVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        append(UInt8(value))
    }
}
