import Haul
import HaulJournal

/// Why bytes are not a valid session log: what is wrong, and where.
public struct SessionLogFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset in the file.
    public var offset: Int
    public var reason: String
    /// Whether the file is of another format version (or not a session log), rather than damaged.
    public var isUnsupported: Bool = false

    public init(offset: Int, _ reason: String, unsupported: Bool = false) {
        self.offset = offset
        self.reason = reason
        self.isUnsupported = unsupported
    }

    public var description: String { "\(reason) at byte offset \(offset)" }
}

/// The session log's framing, as pure functions over bytes (layout in `docs/sessions.md`).
///
/// File: a 16-byte header (magic `HAULSESS`, version, reserved, CRC-32C), then records back to back. Record:
/// magic `HSRE`, payload length, record number, payload (one JSON object in UTF-8), CRC-32C of everything
/// before it. Integers are little-endian. Records are only ever appended; the record numbers run 1, 2, 3, ...
/// without a gap, so a lost or repeated record is noticed even when each one's CRC is fine.
public enum SessionLogCodec {
    public static let fileMagic: [UInt8] = Array("HAULSESS".utf8)
    public static let recordMagic: [UInt8] = Array("HSRE".utf8)
    public static let formatVersion: UInt16 = 1
    public static let headerSize = 16
    /// Bytes a record adds around its payload.
    public static let recordOverhead = 20
    /// Largest payload accepted (a task spec with many mirrors and headers fits with room to spare).
    public static let maximumPayload = 1 << 20

    /// The file header.
    public static func header() -> [UInt8] {
        var out = fileMagic
        out.appendLittleEndian(formatVersion)
        out.appendLittleEndian(UInt16(0))
        out.appendLittleEndian(CRC32C.checksum(out))
        return out
    }

    /// One record: magic, length, number, payload, CRC.
    public static func record(number: UInt64, payload: [UInt8]) -> [UInt8] {
        JournalCodec.frame(payload, magic: recordMagic, number: number)
    }

    /// One decoded record.
    public struct Record: Sendable, Hashable {
        public var number: UInt64
        public var payload: [UInt8]
        /// Where it starts in the file.
        public var offset: Int
    }

    /// What a whole file holds.
    public struct Scan: Sendable, Hashable {
        public var records: [Record]
        /// Where the last valid record ends: the file's length, or less when the tail is torn.
        public var validEnd: Int
        /// Why the bytes from `validEnd` on are not a record — an append that a crash cut short — or nil
        /// when the file ends cleanly.
        public var tornTail: String?
    }

    /// Checks the header at the start of `bytes`.
    public static func decodeHeader(_ bytes: [UInt8]) throws(SessionLogFormatError) {
        guard bytes.count >= headerSize else {
            throw SessionLogFormatError(offset: 0, "file of \(bytes.count) bytes is shorter than the \(headerSize)-byte header")
        }
        guard Array(bytes[0..<8]) == fileMagic else {
            throw SessionLogFormatError(offset: 0, "not a session log (bad magic)", unsupported: true)
        }
        let version = bytes.littleEndian(UInt16.self, at: 8)
        guard version == formatVersion else {
            throw SessionLogFormatError(offset: 8, "format version \(version); this build reads version \(formatVersion)", unsupported: true)
        }
        let stored = bytes.littleEndian(UInt32.self, at: 12)
        let computed = CRC32C.checksum(bytes[0..<12])
        guard stored == computed else {
            throw SessionLogFormatError(offset: 12, "header checksum mismatch (stored 0x\(hex(stored)), computed 0x\(hex(computed)))")
        }
        guard bytes.littleEndian(UInt16.self, at: 10) == 0 else {
            throw SessionLogFormatError(offset: 10, "reserved header field is not zero")
        }
    }

    /// Every record of a whole file image, in order.
    ///
    /// A record that is not valid is one of two things. If no valid record follows it anywhere in the file,
    /// it is the tail of an append that a crash cut short (nothing after it was ever acknowledged, because
    /// every append is synced before it is acknowledged): the scan ends there and says so in `tornTail`.
    /// If a valid record does follow, the damage is in the middle of the log — bit rot, a bad disk, an edit —
    /// and the whole file is refused. Record numbers must run 1, 2, 3, ... without a gap.
    public static func scan(_ bytes: [UInt8]) throws(SessionLogFormatError) -> Scan {
        try decodeHeader(bytes)
        var records: [Record] = []
        var offset = headerSize
        while offset < bytes.count {
            let expected = UInt64(records.count + 1)
            switch decodeRecord(bytes, at: offset) {
            case .success(let record):
                guard record.number == expected else {
                    throw SessionLogFormatError(offset: offset + 8, "record number \(record.number) where \(expected) was due")
                }
                records.append(record)
                offset += record.payload.count + recordOverhead
            case .failure(let problem):
                if let later = firstValidRecord(in: bytes, after: offset) {
                    throw SessionLogFormatError(offset: problem.offset,
                                                "\(problem.reason), followed by a valid record at byte offset \(later)")
                }
                return Scan(records: records, validEnd: offset, tornTail: problem.description)
            }
        }
        return Scan(records: records, validEnd: offset, tornTail: nil)
    }

    /// The record at `offset`, or why there is none.
    static func decodeRecord(_ bytes: [UInt8], at offset: Int) -> Result<Record, SessionLogFormatError> {
        let remaining = bytes.count - offset
        guard remaining >= recordOverhead else {
            return .failure(SessionLogFormatError(offset: offset, "\(remaining) bytes, too few for a record"))
        }
        guard Array(bytes[offset..<offset + 4]) == recordMagic else {
            return .failure(SessionLogFormatError(offset: offset, "bad record magic"))
        }
        let length = Int(bytes.littleEndian(UInt32.self, at: offset + 4))
        guard length >= 2, length <= maximumPayload else {
            return .failure(SessionLogFormatError(offset: offset + 4, "payload length \(length) outside 2...\(maximumPayload)"))
        }
        guard remaining >= length + recordOverhead else {
            return .failure(SessionLogFormatError(offset: offset, "record of \(length + recordOverhead) bytes runs past the end of the file (\(remaining) left)"))
        }
        let crcOffset = offset + 16 + length
        let stored = bytes.littleEndian(UInt32.self, at: crcOffset)
        let computed = CRC32C.checksum(bytes[offset..<crcOffset])
        guard stored == computed else {
            return .failure(SessionLogFormatError(offset: crcOffset, "record checksum mismatch (stored 0x\(hex(stored)), computed 0x\(hex(computed)))"))
        }
        let number = bytes.littleEndian(UInt64.self, at: offset + 8)
        guard number != 0 else { return .failure(SessionLogFormatError(offset: offset + 8, "record number 0")) }
        return .success(Record(number: number, payload: Array(bytes[offset + 16..<crcOffset]), offset: offset))
    }

    /// The offset of the first valid record that starts after `offset`, if any.
    static func firstValidRecord(in bytes: [UInt8], after offset: Int) -> Int? {
        var candidate = offset + 1
        while candidate + recordOverhead <= bytes.count {
            if bytes[candidate] == recordMagic[0], case .success = decodeRecord(bytes, at: candidate) { return candidate }
            candidate += 1
        }
        return nil
    }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}

extension [UInt8] {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        var value = value.littleEndian
        Swift.withUnsafeBytes(of: &value) { append(contentsOf: $0) }
    }

    func littleEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size { value |= T(self[offset + index]) << (8 * index) }
        return value
    }
}
