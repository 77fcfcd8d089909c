/// One decoded slot record: its sequence number and the state it holds.
public struct JournalRecord: Sendable, Equatable {
    public var sequence: UInt64
    public var state: JournalState

    public init(sequence: UInt64, state: JournalState) {
        self.sequence = sequence
        self.state = state
    }
}

/// The resume journal's binary format, as pure functions over bytes (layout in `docs/journal-format.md`).
///
/// File: a 20-byte header (magic `HAULJRNL`, version, slot capacity, CRC-32C) in a 4096-byte block, then
/// slot 0 at 4096 and slot 1 at 4096 + capacity. Record: magic `HREC`, payload length, sequence, payload,
/// CRC-32C of everything before it. All integers little-endian.
public enum JournalCodec {
    /// The file header's magic.
    public static let fileMagic: [UInt8] = Array("HAULJRNL".utf8)
    /// Every record's magic.
    package static let recordMagic: [UInt8] = Array("HREC".utf8)
    /// Bytes in the file header (padded with zeros to ``headerBlockSize``).
    package static let headerSize = 20
    /// Where slot 0 starts; slots are aligned to this too.
    package static let headerBlockSize = 4096
    /// Bytes a record adds around its payload: magic, length, sequence before; CRC after.
    package static let recordOverhead = 20

    /// Offset of slot `index` (0 or 1) in a file whose slots hold `slotCapacity` bytes.
    public static func slotOffset(_ index: Int, slotCapacity: Int) -> Int {
        headerBlockSize + index * slotCapacity
    }

    // MARK: Encoding

    /// One record's bytes (framing and CRC included) holding `state` with `sequence`.
    ///
    /// Writes whatever it is given; a state outside the format's bounds (a range past `totalLength`, a URL
    /// over 8 KiB, ...) gives a record the decoder rejects. ``validate(_:)`` checks that first.
    public static func encode(_ state: JournalState, sequence: UInt64 = 1) -> [UInt8] {
        seal(payload: encodePayload(state), sequence: sequence)
    }

    /// The record payload for `state` (no framing), in the current format version.
    public static func encodePayload(_ state: JournalState) -> [UInt8] {
        encodePayload(state, version: JournalState.formatVersion)
    }

    /// The record payload for `state` in format `version` (1 or 2). Version 1 has no place for
    /// `resolvedURL` and `bootID` and leaves them out; only tests write it, to check that old records
    /// still read.
    static func encodePayload(_ state: JournalState, version: UInt16) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64 + state.url.utf8.count + (state.resolvedURL?.utf8.count ?? 0)
            + state.durable.ranges.count * 6)
        let hasVersion2Fields = version >= 2
        var flags: UInt16 = 0
        if state.etag != nil { flags |= Flag.etag }
        if state.lastModified != nil { flags |= Flag.lastModified }
        if state.checksum != nil { flags |= Flag.checksum }
        if hasVersion2Fields && state.resolvedURL != nil { flags |= Flag.resolvedURL }
        if hasVersion2Fields && state.bootID != nil { flags |= Flag.bootID }
        if hasVersion2Fields && state.pieces != nil { flags |= Flag.pieces }
        out.appendLittleEndian(version)
        out.appendLittleEndian(flags)
        out.appendLittleEndian(state.totalLength)
        out.appendLittleEndian(state.minimumSegmentSize)
        out.appendLittleEndian(state.createdAt)
        out.appendLittleEndian(state.lastModified ?? 0)
        out.appendField16(Array(state.url.utf8))
        out.appendLittleEndian(UInt16(truncatingIfNeeded: state.mirrors.count))
        for mirror in state.mirrors { out.appendField16(Array(mirror.utf8)) }
        if let etag = state.etag { out.appendField16(etag) }
        if let checksum = state.checksum {
            let algorithm = Array(checksum.algorithm.utf8)
            out.append(UInt8(truncatingIfNeeded: algorithm.count))
            out += algorithm
            out.appendField16(Array(checksum.hex.utf8))
        }
        if hasVersion2Fields {
            if let resolvedURL = state.resolvedURL { out.appendField16(Array(resolvedURL.utf8)) }
            if let bootID = state.bootID {
                out.append(UInt8(truncatingIfNeeded: bootID.count))
                out += bootID
            }
        }
        appendRanges(state.durable, to: &out)
        if hasVersion2Fields, let pieces = state.pieces {
            out.appendVarint(UInt64(truncatingIfNeeded: pieces.length))
            appendRanges(pieces.verified, to: &out)
        }
        return out
    }

    /// A range count (u32), then each range as (gap since the previous end, length) varints.
    private static func appendRanges(_ set: ByteRangeSet, to out: inout [UInt8]) {
        let ranges = set.ranges
        out.appendLittleEndian(UInt32(truncatingIfNeeded: ranges.count))
        var previousEnd: Int64 = 0
        for range in ranges {
            out.appendVarint(UInt64(truncatingIfNeeded: range.lowerBound &- previousEnd))
            out.appendVarint(UInt64(truncatingIfNeeded: range.upperBound &- range.lowerBound))
            previousEnd = range.upperBound
        }
    }

    /// Frames `payload` as a record: magic, length, sequence, payload, CRC-32C of all of that.
    public static func seal(payload: [UInt8], sequence: UInt64) -> [UInt8] {
        frame(payload, magic: recordMagic, number: sequence)
    }

    /// The record framing the journal and the session log (HaulSessions' `SessionLogCodec`) share: `magic`,
    /// the payload's length (UInt32), `number` (UInt64), the payload, then the CRC-32C of everything before
    /// it; integers little-endian.
    package static func frame(_ payload: [UInt8], magic: [UInt8], number: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(magic.count + 16 + payload.count)
        out += magic
        out.appendLittleEndian(UInt32(truncatingIfNeeded: payload.count))
        out.appendLittleEndian(number)
        out += payload
        out.appendLittleEndian(CRC32C.checksum(out))
        return out
    }

    /// The 20-byte file header for slots of `slotCapacity` bytes.
    package static func encodeHeader(slotCapacity: Int) -> [UInt8] {
        encodeHeader(slotCapacity: slotCapacity, version: JournalState.formatVersion)
    }

    /// The file header in format `version` (tests write version 1 to check that old files still read).
    static func encodeHeader(slotCapacity: Int, version: UInt16) -> [UInt8] {
        var out = fileMagic
        out.appendLittleEndian(version)
        out.appendLittleEndian(UInt16(0))
        out.appendLittleEndian(UInt32(truncatingIfNeeded: slotCapacity))
        out.appendLittleEndian(CRC32C.checksum(out))
        return out
    }

    /// A whole journal file image: header, then `slot0` and `slot1` (records, or nil for an unwritten slot)
    /// at their offsets. Ends after the last record given.
    public static func fileImage(slotCapacity: Int, slot0: [UInt8]?, slot1: [UInt8]? = nil) -> [UInt8] {
        fileImage(slotCapacity: slotCapacity, slot0: slot0, slot1: slot1, version: JournalState.formatVersion)
    }

    /// ``fileImage(slotCapacity:slot0:slot1:)`` with a header of format `version`.
    static func fileImage(slotCapacity: Int, slot0: [UInt8]?, slot1: [UInt8]?, version: UInt16) -> [UInt8] {
        var out = encodeHeader(slotCapacity: slotCapacity, version: version)
        for (index, record) in [slot0, slot1].enumerated() {
            guard let record else { continue }
            let offset = slotOffset(index, slotCapacity: slotCapacity)
            if out.count < offset { out += [UInt8](repeating: 0, count: offset - out.count) }
            out.replaceSubrange(offset..<min(out.count, offset + record.count), with: record)
        }
        return out
    }

    /// The smallest slot capacity this build would choose for a record of `recordBytes`: room for the
    /// record twice over (so that the state can grow before the journal must be rewritten), rounded up
    /// to 4096, at least 4096, at most ``JournalLimits/maxSlotCapacity``. Nil if the record cannot fit.
    public static func slotCapacity(forRecordOf recordBytes: Int) -> Int? {
        guard recordBytes <= JournalLimits.maxSlotCapacity else { return nil }
        let block = JournalLimits.minSlotCapacity
        let wanted = max(recordBytes * 2, block)
        return min((wanted + block - 1) / block * block, JournalLimits.maxSlotCapacity)
    }

    /// Checks that `state` encodes into a record that decodes back to exactly `state`; throws the
    /// decoder's complaint otherwise (wrapped in ``JournalError/unwritableState(_:)``).
    public static func validate(_ state: JournalState) throws(JournalError) {
        _ = try validatedRecord(state, sequence: 1)
    }

    static func validatedRecord(_ state: JournalState, sequence: UInt64) throws(JournalError) -> [UInt8] {
        let record = encode(state, sequence: sequence)
        let decoded: JournalRecord
        do {
            decoded = try decodeRecord(record)
        } catch {
            throw .unwritableState(error)
        }
        guard decoded.state == state else {
            throw .unwritableState(.invalidValue(field: "state (does not round-trip)", value: 0, offset: 0))
        }
        return record
    }

    // MARK: Decoding

    /// The latest valid state in a whole journal file image.
    ///
    /// Validates the header, then both slots; returns the valid record with the higher sequence. If one
    /// slot is torn or corrupt the other one's state is returned; if neither is valid, throws
    /// ``JournalError/noValidRecord(slot0:slot1:)`` carrying both reasons. Bytes past slot 1 are ignored.
    public static func decodeFile(_ bytes: [UInt8]) throws(JournalError) -> JournalState {
        try inspectFile(bytes).latest.state
    }

    /// What ``decodeFile(_:)`` found: the chosen record, its slot, and why the other slot was unusable.
    package struct FileInspection: Sendable, Equatable {
        /// The format version in the file header (1 or 2). Records of either version may be in either.
        package var formatVersion: UInt16
        /// Slots of this file hold this many bytes.
        package var slotCapacity: Int
        /// The latest valid record.
        package var latest: JournalRecord
        /// The slot (0 or 1) holding it.
        package var latestSlot: Int
        /// Why the other slot was not used, if it was not valid (nil if it held an older valid record, or if
        /// the file ends before slot 1, i.e. no second checkpoint was ever written).
        package var otherSlotError: JournalError?
    }

    /// Like ``decodeFile(_:)``, with details about the slots.
    package static func inspectFile(_ bytes: [UInt8]) throws(JournalError) -> FileInspection {
        let (version, capacity) = try decodeHeaderFields(bytes)
        var results: [Result<JournalRecord, JournalError>] = []
        for index in 0..<2 {
            let offset = slotOffset(index, slotCapacity: capacity)
            results.append(Result { () throws(JournalError) in
                try decodeRecord(in: bytes, at: offset, capacity: capacity)
            })
        }
        switch (results[0], results[1]) {
        case (.success(let first), .success(let second)):
            if first.sequence == second.sequence { throw .ambiguousSlots(sequence: first.sequence) }
            let slot = first.sequence > second.sequence ? 0 : 1
            return FileInspection(formatVersion: version, slotCapacity: capacity, latest: slot == 0 ? first : second, latestSlot: slot,
                                  otherSlotError: nil)
        case (.success(let record), .failure(let error)):
            // A file that ends before slot 1 has simply never had a second checkpoint.
            let neverWritten = bytes.count <= slotOffset(1, slotCapacity: capacity)
            return FileInspection(formatVersion: version, slotCapacity: capacity, latest: record, latestSlot: 0,
                                  otherSlotError: neverWritten ? nil : .slot(1, error))
        case (.failure(let error), .success(let record)):
            return FileInspection(formatVersion: version, slotCapacity: capacity, latest: record, latestSlot: 1,
                                  otherSlotError: .slot(0, error))
        case (.failure(let first), .failure(let second)):
            throw .noValidRecord(slot0: first, slot1: second)
        }
    }

    /// Validates the file header at the start of `bytes`; returns the slot capacity.
    package static func decodeHeader(_ bytes: [UInt8]) throws(JournalError) -> Int {
        try decodeHeaderFields(bytes).slotCapacity
    }

    /// Validates the file header at the start of `bytes`; returns its format version and slot capacity.
    static func decodeHeaderFields(_ bytes: [UInt8]) throws(JournalError) -> (version: UInt16, slotCapacity: Int) {
        var reader = JournalByteReader(bytes: bytes, position: 0, end: bytes.count, region: .file)
        let magic = try reader.bytes(fileMagic.count, field: "file magic")
        guard magic == fileMagic else {
            throw .badMagic(region: "file header", found: magic, expected: fileMagic)
        }
        let version = try reader.u16("format version")
        guard JournalState.readableVersions.contains(version) else {
            throw .unsupportedVersion(version, region: "file header")
        }
        let reserved = try reader.u16("reserved")
        let capacity = try reader.u32("slot capacity")
        let computed = CRC32C.checksum(bytes[0..<reader.position])
        let stored = try reader.u32("header checksum")
        guard stored == computed else { throw .headerChecksumMismatch(stored: stored, computed: computed) }
        guard reserved == 0 else { throw .invalidValue(field: "reserved header field", value: Int64(reserved), offset: 10) }
        guard capacity >= JournalLimits.minSlotCapacity, capacity <= JournalLimits.maxSlotCapacity,
              capacity % UInt32(JournalLimits.minSlotCapacity) == 0
        else { throw .badSlotCapacity(capacity) }
        return (version, Int(capacity))
    }

    /// Decodes one record standing alone (offsets in errors count from its first byte).
    public static func decodeRecord(_ bytes: [UInt8]) throws(JournalError) -> JournalRecord {
        try decodeRecord(in: bytes, at: 0, capacity: nil)
    }

    /// Decodes the record at `offset` of `bytes`, which must fit in `capacity` bytes if given.
    static func decodeRecord(in bytes: [UInt8], at offset: Int, capacity: Int?) throws(JournalError) -> JournalRecord {
        let region: JournalError.Region = capacity == nil ? .record : .file
        var reader = JournalByteReader(bytes: bytes, position: offset, end: bytes.count, region: region)
        let magic = try reader.bytes(recordMagic.count, field: "record magic")
        guard magic == recordMagic else { throw .badMagic(region: "record", found: magic, expected: recordMagic) }
        let length = Int(try reader.u32("payload length"))
        if let capacity, length > capacity - recordOverhead {
            throw .recordTooLong(length: length, capacity: capacity, offset: offset)
        }
        let sequence = try reader.u64("sequence")
        let payloadStart = reader.position
        _ = try reader.skip(length, field: "payload")
        let computed = CRC32C.checksum(bytes[offset..<reader.position])
        let crcOffset = reader.position
        let stored = try reader.u32("record checksum")
        guard stored == computed else { throw .checksumMismatch(stored: stored, computed: computed, offset: crcOffset) }
        guard sequence != 0 else { throw .invalidValue(field: "sequence", value: 0, offset: offset + 8) }
        var payload = JournalByteReader(bytes: bytes, position: payloadStart, end: payloadStart + length, region: .record)
        let state = try decodePayload(&payload)
        return JournalRecord(sequence: sequence, state: state)
    }

    private static func decodePayload(_ reader: inout JournalByteReader) throws(JournalError) -> JournalState {
        let version = try reader.u16("record format version")
        guard JournalState.readableVersions.contains(version) else {
            throw .unsupportedVersion(version, region: "record")
        }
        let flagsOffset = reader.position
        let flags = try reader.u16("flags")
        let known = version == 1 ? Flag.allVersion1 : Flag.all
        guard flags & ~known == 0 else { throw .unknownFlags(flags & ~known, offset: flagsOffset) }
        let totalLength = try reader.nonNegativeI64("total length")
        let minimumSegmentSize = try reader.nonNegativeI64("minimum segment size")
        let createdAt = try reader.i64("creation time")
        let lastModifiedOffset = reader.position
        let lastModifiedValue = try reader.i64("last modified")
        if flags & Flag.lastModified == 0 && lastModifiedValue != 0 {
            throw .invalidValue(field: "last modified (absent, must be 0)", value: lastModifiedValue,
                                offset: lastModifiedOffset)
        }
        let url = try reader.string16("url", limit: JournalLimits.maxURLBytes)
        let mirrorCountOffset = reader.position
        let mirrorCount = Int(try reader.u16("mirror count"))
        guard mirrorCount <= JournalLimits.maxMirrors else {
            throw .tooMany(field: "mirrors", count: mirrorCount, limit: JournalLimits.maxMirrors,
                           offset: mirrorCountOffset)
        }
        var mirrors: [String] = []
        for index in 0..<mirrorCount {
            mirrors.append(try reader.string16("mirror \(index)", limit: JournalLimits.maxURLBytes))
        }
        var etag: [UInt8]?
        if flags & Flag.etag != 0 {
            let length = Int(try reader.u16("etag length"))
            guard length <= JournalLimits.maxETagBytes else {
                throw .fieldTooLong(field: "etag", length: length, limit: JournalLimits.maxETagBytes,
                                    offset: reader.position - 2)
            }
            etag = try reader.bytes(length, field: "etag")
        }
        var checksum: JournalChecksum?
        if flags & Flag.checksum != 0 {
            let algorithmOffset = reader.position
            let algorithmLength = Int(try reader.u8("checksum algorithm length"))
            guard algorithmLength <= JournalLimits.maxChecksumAlgorithmBytes else {
                throw .fieldTooLong(field: "checksum algorithm", length: algorithmLength,
                                    limit: JournalLimits.maxChecksumAlgorithmBytes, offset: algorithmOffset)
            }
            let algorithm = try reader.string(algorithmLength, field: "checksum algorithm")
            let hex = try reader.string16("checksum hex", limit: JournalLimits.maxChecksumHexBytes)
            checksum = JournalChecksum(algorithm: algorithm, hex: hex)
        }
        // Version 2 fields; their flags are refused in version 1 above.
        var resolvedURL: String?
        if flags & Flag.resolvedURL != 0 {
            resolvedURL = try reader.string16("resolved url", limit: JournalLimits.maxURLBytes)
        }
        var bootID: [UInt8]?
        if flags & Flag.bootID != 0 {
            let bootIDOffset = reader.position
            let length = Int(try reader.u8("boot id length"))
            guard length <= JournalLimits.maxBootIDBytes else {
                throw .fieldTooLong(field: "boot id", length: length, limit: JournalLimits.maxBootIDBytes,
                                    offset: bootIDOffset)
            }
            bootID = try reader.bytes(length, field: "boot id")
        }
        let durable = try decodeRanges(&reader, totalLength: totalLength, field: "range")
        var pieces: JournalPieces?
        if flags & Flag.pieces != 0 {
            let lengthOffset = reader.position
            let length = try reader.varint("piece length")
            guard length >= 1 else { throw .invalidValue(field: "piece length", value: length, offset: lengthOffset) }
            let verifiedOffset = reader.position
            let verified = try decodeRanges(&reader, totalLength: totalLength, field: "verified piece range")
            // Whole pieces only: a range that starts or ends inside a piece would vouch for bytes never hashed.
            for range in verified.ranges where range.lowerBound % length != 0 || (range.upperBound % length != 0 && range.upperBound != totalLength) {
                throw .invalidValue(field: "verified piece range \(range.lowerBound)-\(range.upperBound) (not on \(length)-byte piece boundaries)",
                                    value: range.lowerBound, offset: verifiedOffset)
            }
            pieces = JournalPieces(length: length, verified: verified)
        }
        guard reader.remaining == 0 else { throw .trailingBytes(count: reader.remaining, offset: reader.position) }
        return JournalState(
            url: url, mirrors: mirrors, etag: etag,
            lastModified: flags & Flag.lastModified != 0 ? lastModifiedValue : nil,
            totalLength: totalLength, minimumSegmentSize: minimumSegmentSize, checksum: checksum,
            createdAt: createdAt, durable: durable, resolvedURL: resolvedURL, bootID: bootID, pieces: pieces
        )
    }

    /// A range count and its ranges (``appendRanges``), each inside `0..<totalLength`, sorted, disjoint and
    /// not touching; `field` names them in errors.
    private static func decodeRanges(_ reader: inout JournalByteReader, totalLength: Int64, field: String) throws(JournalError) -> ByteRangeSet {
        let rangeCountOffset = reader.position
        let rangeCount = Int(try reader.u32("\(field) count"))
        // Each range takes at least two bytes (two one-byte varints).
        let fits = reader.remaining / 2
        guard rangeCount <= JournalLimits.maxRanges, rangeCount <= fits else {
            throw .tooMany(field: field == "range" ? "ranges" : field + "s", count: rangeCount, limit: min(JournalLimits.maxRanges, fits),
                           offset: rangeCountOffset)
        }
        var ranges: [Range<Int64>] = []
        ranges.reserveCapacity(rangeCount)
        var previousEnd: Int64 = 0
        for index in 0..<rangeCount {
            let rangeOffset = reader.position
            let gap = try reader.varint("\(field) \(index) gap")
            let length = try reader.varint("\(field) \(index) length")
            guard length > 0 else { throw .emptyRange(index: index, offset: rangeOffset) }
            guard index == 0 || gap > 0 else { throw .rangesOutOfOrder(index: index, offset: rangeOffset) }
            let (start, startOverflow) = previousEnd.addingReportingOverflow(gap)
            let (end, endOverflow) = start.addingReportingOverflow(length)
            guard !startOverflow, !endOverflow, end <= totalLength else {
                throw .rangePastEnd(index: index, start: startOverflow ? Int64.max : start, length: length,
                                    totalLength: totalLength)
            }
            ranges.append(start..<end)
            previousEnd = end
        }
        return ByteRangeSet(ranges)
    }

    private enum Flag {
        static let etag: UInt16 = 1 << 0
        static let lastModified: UInt16 = 1 << 1
        static let checksum: UInt16 = 1 << 2
        static let resolvedURL: UInt16 = 1 << 3
        static let bootID: UInt16 = 1 << 4
        static let allVersion1: UInt16 = etag | lastModified | checksum
        /// Verified pieces (a download with piece hashes), after the durable ranges.
        static let pieces: UInt16 = 1 << 5
        static let all: UInt16 = allVersion1 | resolvedURL | bootID | pieces
    }
}
