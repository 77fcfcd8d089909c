import HaulIO
import SystemPackage

/// Why a resume journal could not be read or written. Every case says what is wrong and where (byte
/// offsets are offsets in the journal file, or in the record when a record is decoded on its own).
public enum JournalError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What a truncated read ran into the end of.
    public enum Region: Sendable, Equatable {
        case file
        case record
    }

    /// A system call on the journal (or its temp file or directory) failed.
    case io(call: String, errno: Errno, path: String)
    /// `need` bytes for `field` at `offset`, but the file or record ends at `end`.
    case truncated(field: String, need: Int, offset: Int, end: Int, region: Region)
    /// The file header or a slot does not start with its magic.
    case badMagic(region: String, found: [UInt8], expected: [UInt8])
    /// The file header or record declares a format version this build does not read.
    case unsupportedVersion(UInt16, region: String)
    /// The file header's CRC-32C does not match its bytes.
    case headerChecksumMismatch(stored: UInt32, computed: UInt32)
    /// A record's CRC-32C does not match its bytes (a torn or corrupted write).
    case checksumMismatch(stored: UInt32, computed: UInt32, offset: Int)
    /// The header's slot capacity is not a multiple of 4096 within the allowed bounds.
    case badSlotCapacity(UInt32)
    /// A record's declared payload does not fit in its slot.
    case recordTooLong(length: Int, capacity: Int, offset: Int)
    /// A variable-length field is longer than its limit.
    case fieldTooLong(field: String, length: Int, limit: Int, offset: Int)
    /// A count (mirrors, ranges) is over its limit or over what the remaining bytes could hold.
    case tooMany(field: String, count: Int, limit: Int, offset: Int)
    /// A string field is not valid UTF-8.
    case invalidUTF8(field: String, offset: Int)
    /// A fixed field holds a value that is not allowed (a negative length, a reserved field not zero, ...).
    case invalidValue(field: String, value: Int64, offset: Int)
    /// The record sets flag bits this version does not define.
    case unknownFlags(UInt16, offset: Int)
    /// A LEB128 varint is longer than 10 bytes or does not fit in 63 bits.
    case badVarint(field: String, offset: Int)
    /// A range has length zero.
    case emptyRange(index: Int, offset: Int)
    /// A range does not start after the previous one ends (a gap of zero: touching or overlapping).
    case rangesOutOfOrder(index: Int, offset: Int)
    /// A range ends past the total length (or its end does not fit in 64 bits).
    case rangePastEnd(index: Int, start: Int64, length: Int64, totalLength: Int64)
    /// Bytes follow the last field of the record.
    case trailingBytes(count: Int, offset: Int)
    /// Both slots hold valid records with the same sequence number (never written by Haul).
    case ambiguousSlots(sequence: UInt64)
    /// The error found in one slot.
    indirect case slot(Int, JournalError)
    /// Neither slot holds a valid record.
    indirect case noValidRecord(slot0: JournalError, slot1: JournalError)
    /// A state that would not decode back to itself was refused before anything was written.
    indirect case unwritableState(JournalError)
    /// The encoded state exceeds the largest slot.
    case stateTooLarge(bytes: Int, limit: Int)
    /// The error concerns the journal at `path`.
    indirect case inJournal(path: String, JournalError)

    /// The failed system call `error`, on the journal file (or its temp file or directory) at `path`.
    package init(_ error: SystemError, path: String) {
        self = .io(call: error.call, errno: error.code, path: path)
    }

    public var description: String {
        switch self {
        case .io(let call, let code, let path):
            if code == .tooManySymbolicLinkLevels && call == "open" {
                return "open(\(path)) failed: refusing to follow the symbolic link at \(path) (errno \(code.rawValue))"
            }
            // SystemError's text comes from strerror_r; strerror (which `Errno.description` uses) is not
            // thread-safe.
            return "\(call)(\(path)) failed: \(SystemError.describe(errno: code.rawValue)) (errno \(code.rawValue))"
        case .truncated(let field, let need, let offset, let end, let region):
            let limit = region == .file ? "file has \(end)" : "record ends at \(end)"
            return "truncated: need \(need) bytes (\(field)) at offset \(offset), \(limit)"
        case .badMagic(let region, let found, let expected):
            return "bad magic in \(region): found \(hex(found)), expected \(hex(expected)) (\"\(String(decoding: expected, as: UTF8.self))\")"
        case .unsupportedVersion(let version, let region):
            return "unsupported version \(version) in \(region) (this build reads versions \(JournalState.readableVersions.lowerBound) to \(JournalState.readableVersions.upperBound))"
        case .headerChecksumMismatch(let stored, let computed):
            return "file header checksum mismatch (stored \(hex32(stored)), computed \(hex32(computed)))"
        case .checksumMismatch(let stored, let computed, let offset):
            return "checksum mismatch (stored \(hex32(stored)) at offset \(offset), computed \(hex32(computed)))"
        case .badSlotCapacity(let capacity):
            return "bad slot capacity \(capacity) (must be a multiple of \(JournalLimits.minSlotCapacity) from \(JournalLimits.minSlotCapacity) to \(JournalLimits.maxSlotCapacity))"
        case .recordTooLong(let length, let capacity, let offset):
            return "record at offset \(offset) declares \(length) payload bytes, more than its slot of \(capacity) bytes holds"
        case .fieldTooLong(let field, let length, let limit, let offset):
            return "\(field) at offset \(offset) is \(length) bytes long, limit \(limit)"
        case .tooMany(let field, let count, let limit, let offset):
            return "\(count) \(field) declared at offset \(offset), limit \(limit)"
        case .invalidUTF8(let field, let offset):
            return "\(field) at offset \(offset) is not valid UTF-8"
        case .invalidValue(let field, let value, let offset):
            return "invalid \(field) \(value) at offset \(offset)"
        case .unknownFlags(let flags, let offset):
            return "unknown flag bits \(hex16(flags)) at offset \(offset)"
        case .badVarint(let field, let offset):
            return "malformed varint (\(field)) at offset \(offset): longer than 10 bytes or above 2^63-1"
        case .emptyRange(let index, let offset):
            return "range \(index) at offset \(offset) is empty"
        case .rangesOutOfOrder(let index, let offset):
            return "ranges overlap or are out of order at range \(index) (offset \(offset)): it must start after range \(index - 1) ends"
        case .rangePastEnd(let index, let start, let length, let totalLength):
            return "range \(index) (start \(start), length \(length)) ends past the total length \(totalLength)"
        case .trailingBytes(let count, let offset):
            return "\(count) unexpected bytes after the last field at offset \(offset)"
        case .ambiguousSlots(let sequence):
            return "both slots hold valid records with sequence \(sequence)"
        case .slot(let index, let error):
            return "slot \(index): \(error)"
        case .noValidRecord(let slot0, let slot1):
            return "no valid record (slot 0: \(slot0); slot 1: \(slot1))"
        case .unwritableState(let error):
            return "refusing to write a state that would not read back: \(error)"
        case .stateTooLarge(let bytes, let limit):
            return "encoded state is \(bytes) bytes, more than the largest slot (\(limit) bytes)"
        case .inJournal(let path, let error):
            return "journal \(path): \(error)"
        }
    }
}

private func hex32(_ value: UInt32) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 8 - digits.count) + digits
}

private func hex16(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
}

private func hex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }.joined(separator: " ")
}
