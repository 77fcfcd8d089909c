import Glibc
import Testing
@testable import Haul
@testable import HaulJournal

/// Deterministic generator for test data (SplitMix64).
struct JournalTestRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(below bound: Int64) -> Int64 { Int64(next() % UInt64(bound)) }
}

enum JournalFixtures {
    static let mib: Int64 = 1 << 20

    static func state(ranges: [Range<Int64>] = [0..<1000, 5000..<9000], total: Int64 = 1 << 30) -> JournalState {
        JournalState(
            url: "https://example.com/files/big.iso?token=abc",
            mirrors: ["https://mirror1.example.net/big.iso", "http://mirror2.example.org/pub/big.iso"],
            etag: Array("\"5f3c-1a2b3c4d\"".utf8),
            lastModified: 1_763_000_000,
            totalLength: total,
            minimumSegmentSize: 1 << 20,
            checksum: JournalChecksum(algorithm: "sha256", hex: String(repeating: "ab", count: 32)),
            createdAt: 1_763_790_000,
            durable: ByteRangeSet(ranges)
        )
    }

    /// ``state(ranges:total:)`` with the version 2 fields set: a resolved URL and a boot id.
    static func stateWithVersion2Fields(ranges: [Range<Int64>] = [0..<1000, 5000..<9000]) -> JournalState {
        var state = state(ranges: ranges)
        state.resolvedURL = "https://cdn-7.example.net/pool/big.iso?sig=Zm9v&exp=1763790000"
        state.bootID = Array("8c3f2a9e-1b4d-4e5f-9a7b-0c1d2e3f4a5b".utf8)
        return state
    }

    /// A realistic state for a 1 GiB download over 16 connections: each connection has finished part of
    /// its 64 MiB share, so the durable set is 16 ranges.
    static func sixteenConnections() -> JournalState {
        let share: Int64 = 64 * mib
        var random = JournalTestRandom(state: 16)
        let ranges = (0..<16).map { index -> Range<Int64> in
            let start = Int64(index) * share
            return start..<(start + 1 + random.next(below: share - 2))
        }
        return state(ranges: ranges, total: 1 << 30)
    }

    /// `count` random disjoint, non-touching ranges spread over a file of `total` bytes.
    static func manyRanges(_ count: Int, total: Int64, seed: UInt64 = 1) -> [Range<Int64>] {
        var random = JournalTestRandom(state: seed)
        let stride = total / Int64(count)
        return (0..<count).map { index in
            let start = Int64(index) * stride + 1 + random.next(below: stride / 2)
            return start..<(start + 1 + random.next(below: stride / 2 - 1))
        }
    }
}

@Suite struct JournalCodecTests {
    @Test func roundTripsAFullState() throws {
        let state = JournalFixtures.state()
        let record = JournalCodec.encode(state, sequence: 42)
        let decoded = try JournalCodec.decodeRecord(record)
        #expect(decoded == JournalRecord(sequence: 42, state: state))
        let image = JournalCodec.fileImage(slotCapacity: 4096, slot0: record)
        #expect(try JournalCodec.decodeFile(image) == state)
    }

    @Test func roundTripsMinimalAndEdgeStates() throws {
        let states = [
            JournalState(url: "", totalLength: 0, minimumSegmentSize: 0, createdAt: 0),
            JournalState(url: "http://h/ü/日本", etag: [], lastModified: -5, totalLength: Int64.max,
                         minimumSegmentSize: Int64.max, checksum: JournalChecksum(algorithm: "", hex: ""),
                         createdAt: Int64.min, durable: ByteRangeSet([0..<1, (Int64.max - 1)..<Int64.max])),
            JournalState(url: String(repeating: "u", count: JournalLimits.maxURLBytes),
                         mirrors: Array(repeating: String(repeating: "m", count: 100), count: JournalLimits.maxMirrors),
                         totalLength: 10, minimumSegmentSize: 1, createdAt: 1, durable: ByteRangeSet([0..<10])),
        ]
        for state in states {
            try JournalCodec.validate(state)
            #expect(try JournalCodec.decodeRecord(JournalCodec.encode(state)).state == state)
        }
    }

    @Test func fiveThousandRangesFitInAFewKiB() throws {
        // 5,000 scattered ranges over a 4 GiB file: gaps and lengths up to ~430 KB each.
        let ranges = JournalFixtures.manyRanges(5000, total: 4 << 30)
        let state = JournalFixtures.state(ranges: ranges, total: 4 << 30)
        #expect(state.durable.ranges.count == 5000)
        let record = JournalCodec.encode(state)
        print("journal record with 5,000 ranges over 4 GiB: \(record.count) bytes")
        #expect(record.count < 40 * 1024)
        #expect(try JournalCodec.decodeRecord(record).state == state)
        // Same count over 1 TiB (gaps and lengths up to ~110 MB): still bounded by the varint width.
        let huge = JournalFixtures.state(ranges: JournalFixtures.manyRanges(5000, total: 1 << 40), total: 1 << 40)
        let hugeRecord = JournalCodec.encode(huge)
        print("journal record with 5,000 ranges over 1 TiB: \(hugeRecord.count) bytes")
        #expect(hugeRecord.count < 48 * 1024)
        #expect(try JournalCodec.decodeRecord(hugeRecord).state == huge)
    }

    @Test func sixteenConnectionStateIsSmall() throws {
        let record = JournalCodec.encode(JournalFixtures.sixteenConnections())
        print("journal record for a 1 GiB download with 16 connections (16 ranges): \(record.count) bytes")
        #expect(record.count < 512)
    }

    @Test func latestValidSlotWins() throws {
        let old = JournalFixtures.state(ranges: [0..<10])
        let new = JournalFixtures.state(ranges: [0..<20])
        let image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(new, sequence: 8),
                                           slot1: JournalCodec.encode(old, sequence: 7))
        let inspection = try JournalCodec.inspectFile(image)
        #expect(inspection.latest.state == new)
        #expect(inspection.latestSlot == 0)
        #expect(inspection.otherSlotError == nil)
        let same = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(new, sequence: 8),
                                          slot1: JournalCodec.encode(old, sequence: 8))
        #expect(throws: JournalError.ambiguousSlots(sequence: 8)) { try JournalCodec.decodeFile(same) }
    }

    // MARK: Specific errors

    @Test func badFileMagic() {
        var image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(JournalFixtures.state()))
        image[0] = UInt8(ascii: "X")
        #expect(throws: JournalError.badMagic(region: "file header", found: Array("XAULJRNL".utf8),
                                              expected: JournalCodec.fileMagic)) {
            try JournalCodec.decodeFile(image)
        }
        #expect(throws: JournalError.truncated(field: "file magic", need: 8, offset: 0, end: 3, region: .file)) {
            try JournalCodec.decodeFile([0x48, 0x41, 0x55])
        }
    }

    @Test func unsupportedHeaderVersion() throws {
        var header = JournalCodec.fileMagic
        header += [7, 0, 0, 0, 0, 0x10, 0, 0]
        header += withUnsafeBytes(of: CRC32C.checksum(header).littleEndian, Array.init)
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeFile(header) }
        #expect(error == .unsupportedVersion(7, region: "file header"))
        #expect(error?.description.contains("unsupported version 7") == true)
    }

    @Test func headerChecksumAndCapacity() throws {
        var image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(JournalFixtures.state()))
        image[13] ^= 0x01
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeFile(image) }
        guard case .headerChecksumMismatch = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(throws: JournalError.badSlotCapacity(4097)) {
            try JournalCodec.decodeFile(JournalCodec.encodeHeader(slotCapacity: 4097))
        }
    }

    @Test func unsupportedRecordVersion() {
        var payload = JournalCodec.encodePayload(JournalFixtures.state())
        payload[0] = 7
        #expect(throws: JournalError.unsupportedVersion(7, region: "record")) {
            try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1))
        }
    }

    /// A payload with no ranges and the range count removed, to append hand-made ranges to.
    private func payloadWithoutRanges(total: Int64) -> [UInt8] {
        let payload = JournalCodec.encodePayload(JournalFixtures.state(ranges: [], total: total))
        return Array(payload.dropLast(4))
    }

    private func payload(total: Int64, varints: [UInt64]) -> [UInt8] {
        var payload = payloadWithoutRanges(total: total)
        payload += withUnsafeBytes(of: UInt32(varints.count / 2).littleEndian, Array.init)
        for var value in varints {
            while value >= 0x80 { payload.append(UInt8(truncatingIfNeeded: value) | 0x80); value >>= 7 }
            payload.append(UInt8(value))
        }
        return payload
    }

    @Test func overlappingOrTouchingRanges() throws {
        // Ranges 0..<10, 20..<30, then a gap of 0: starts where range 1 ends.
        let record = JournalCodec.seal(payload: payload(total: 100, varints: [0, 10, 10, 10, 0, 5]), sequence: 1)
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeRecord(record) }
        guard case .rangesOutOfOrder(let index, _) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(index == 2)
        #expect(error!.description.contains("ranges overlap or are out of order at range 2"))
    }

    @Test func emptyRange() {
        let record = JournalCodec.seal(payload: payload(total: 100, varints: [5, 0]), sequence: 1)
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeRecord(record) }
        guard case .emptyRange(0, _) = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test func rangesPastTheTotalLength() {
        let record = JournalCodec.seal(payload: payload(total: 100, varints: [0, 10, 80, 11]), sequence: 1)
        #expect(throws: JournalError.rangePastEnd(index: 1, start: 90, length: 11, totalLength: 100)) {
            try JournalCodec.decodeRecord(record)
        }
        // An end that overflows Int64 is reported the same way, without trapping.
        let overflow = JournalCodec.seal(payload: payload(total: Int64.max, varints: [UInt64(Int64.max), 1]),
                                         sequence: 1)
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeRecord(overflow) }
        guard case .rangePastEnd(0, _, 1, Int64.max) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(error!.description.contains("range 0 (start"))
    }

    @Test func malformedVarintsAndCounts() {
        // 11-byte varint.
        var bytes = payloadWithoutRanges(total: 100)
        bytes += [1, 0, 0, 0] + [UInt8](repeating: 0x80, count: 10) + [0]
        let error = #expect(throws: JournalError.self) {
            try JournalCodec.decodeRecord(JournalCodec.seal(payload: bytes, sequence: 1))
        }
        guard case .badVarint = error else { Issue.record("got \(String(describing: error))"); return }
        // A range count larger than the bytes left could hold: refused before allocating.
        var counted = payloadWithoutRanges(total: 100)
        counted += [0xFF, 0xFF, 0xFF, 0x7F, 0, 1]
        let countError = #expect(throws: JournalError.self) {
            try JournalCodec.decodeRecord(JournalCodec.seal(payload: counted, sequence: 1))
        }
        guard case .tooMany(field: "ranges", count: 0x7FFF_FFFF, limit: 1, _) = countError else {
            Issue.record("got \(String(describing: countError))"); return
        }
    }

    @Test func unknownFlagsAndTrailingBytes() {
        var flagged = JournalCodec.encodePayload(JournalFixtures.state())
        flagged[3] |= 0x80
        let error = #expect(throws: JournalError.self) {
            try JournalCodec.decodeRecord(JournalCodec.seal(payload: flagged, sequence: 1))
        }
        guard case .unknownFlags(0x8000, offset: 18) = error else { Issue.record("got \(String(describing: error))"); return }
        let trailing = JournalCodec.encodePayload(JournalFixtures.state()) + [0]
        let trailingError = #expect(throws: JournalError.self) {
            try JournalCodec.decodeRecord(JournalCodec.seal(payload: trailing, sequence: 1))
        }
        guard case .trailingBytes(count: 1, _) = trailingError else { Issue.record("got \(String(describing: trailingError))"); return }
    }

    @Test func oversizedFieldsAreRefused() {
        var long = JournalFixtures.state()
        long.url = String(repeating: "x", count: JournalLimits.maxURLBytes + 1)
        let error = #expect(throws: JournalError.self) { try JournalCodec.validate(long) }
        guard case .unwritableState(.fieldTooLong(field: "url", length: 8193, limit: 8192, _)) = error else {
            Issue.record("got \(String(describing: error))"); return
        }
        var mirrors = JournalFixtures.state()
        mirrors.mirrors = Array(repeating: "m", count: 65)
        #expect(throws: JournalError.self) { try JournalCodec.validate(mirrors) }
        var past = JournalFixtures.state(ranges: [0..<10], total: 5)
        #expect(throws: JournalError.self) { try JournalCodec.validate(past) }
        past = JournalFixtures.state(ranges: [-5..<3], total: 5)
        #expect(throws: JournalError.self) { try JournalCodec.validate(past) }
        var badUTF8 = JournalCodec.encodePayload(JournalFixtures.state())
        badUTF8[38] = 0xFF  // first byte of the URL
        let utf8Error = #expect(throws: JournalError.self) {
            try JournalCodec.decodeRecord(JournalCodec.seal(payload: badUTF8, sequence: 1))
        }
        guard case .invalidUTF8(field: "url", offset: 54) = utf8Error else { Issue.record("got \(String(describing: utf8Error))"); return }
    }

    @Test func slotChecksumMismatchDescription() throws {
        let first = JournalFixtures.state(ranges: [0..<10])
        let second = JournalFixtures.state(ranges: [0..<20])
        var image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(first, sequence: 1),
                                           slot1: JournalCodec.encode(second, sequence: 2))
        image[8192 + 30] ^= 0x40
        let inspection = try JournalCodec.inspectFile(image)
        #expect(inspection.latest.state == first)
        let description = JournalError.inJournal(path: "/x/f.part.haul", inspection.otherSlotError!).description
        #expect(description.hasPrefix("journal /x/f.part.haul: slot 1: checksum mismatch (stored 0x"))
        print(description)
    }

    // MARK: Corruption sweeps

    /// Two states in a small file: the sweep results must always be one of them or an error.
    private func twoStateImage() -> (image: [UInt8], old: JournalState, new: JournalState) {
        let old = JournalFixtures.state(ranges: [0..<100, 200..<300])
        let new = JournalFixtures.state(ranges: [0..<150, 200..<400, 1000..<5000])
        let image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(old, sequence: 1),
                                           slot1: JournalCodec.encode(new, sequence: 2))
        return (image, old, new)
    }

    @Test func flippedBytesAtEveryOffsetNeverGiveAWrongState() throws {
        let (image, old, new) = twoStateImage()
        #expect(try JournalCodec.decodeFile(image) == new)
        let slot1 = JournalCodec.slotOffset(1, slotCapacity: 4096)
        var errors = 0, fallbacks = 0
        for offset in 0..<image.count {
            for mask: UInt8 in [0x01, 0x80, 0xFF] {
                var corrupt = image
                corrupt[offset] ^= mask
                let expected: JournalState? = if offset < JournalCodec.headerSize {
                    nil  // a damaged header makes the file unreadable
                } else if offset >= slot1 {
                    old  // the newest record is damaged: fall back
                } else {
                    new  // padding or the older record: the newest still wins
                }
                do {
                    let state = try JournalCodec.decodeFile(corrupt)
                    #expect(state == expected, "offset \(offset) mask \(mask)")
                    if state == old { fallbacks += 1 }
                } catch {
                    #expect(expected == nil, "offset \(offset) mask \(mask): \(error)")
                    #expect(!error.description.isEmpty)
                    errors += 1
                }
            }
        }
        #expect(errors == JournalCodec.headerSize * 3)
        #expect(fallbacks == (image.count - slot1) * 3)
    }

    @Test func truncatedAtEveryLengthNeverGivesAWrongState() throws {
        let (image, old, new) = twoStateImage()
        let slot1 = JournalCodec.slotOffset(1, slotCapacity: 4096)
        let oldRecordEnd = JournalCodec.slotOffset(0, slotCapacity: 4096) + JournalCodec.encode(old).count
        for length in 0..<image.count {
            let prefix = Array(image[0..<length])
            do {
                let state = try JournalCodec.decodeFile(prefix)
                #expect(length >= oldRecordEnd && state == old, "length \(length)")
            } catch {
                #expect(length < oldRecordEnd, "length \(length): \(error)")
            }
        }
        #expect(try JournalCodec.decodeFile(image) == new)
        #expect(image.count > slot1)
        // A file cut inside slot 1 names what is missing.
        let inspection = try JournalCodec.inspectFile(Array(image[0..<(slot1 + 10)]))
        #expect(inspection.otherSlotError == .slot(1, .truncated(field: "sequence", need: 8, offset: slot1 + 8,
                                                                  end: slot1 + 10, region: .file)))
        #expect(inspection.otherSlotError!.description
            == "slot 1: truncated: need 8 bytes (sequence) at offset \(slot1 + 8), file has \(slot1 + 10)")
    }

    /// The realistic torn write: a new record half-written over the older record in the target slot, with
    /// any prefix or any suffix of it on disk (pages reach the disk in any order).
    @Test func newRecordTornOverAnOldOneFallsBack() throws {
        let first = JournalFixtures.state(ranges: [0..<100])
        let second = JournalFixtures.state(ranges: [0..<100, 200..<300])
        let old = JournalCodec.encode(first, sequence: 1)
        for third in [JournalFixtures.state(ranges: [0..<300]),  // shorter than the old record
                      JournalFixtures.state(ranges: JournalFixtures.manyRanges(40, total: 1 << 30))] {
            let new = JournalCodec.encode(third, sequence: 3)
            let length = max(old.count, new.count)
            let oldPadded = old + [UInt8](repeating: 0, count: length - old.count)
            let newPadded = new + [UInt8](repeating: 0, count: length - new.count)
            for cut in 0...length {
                for torn in [Array(newPadded[..<cut] + oldPadded[cut...]), Array(oldPadded[..<cut] + newPadded[cut...])] {
                    let image = JournalCodec.fileImage(slotCapacity: 4096, slot0: torn,
                                                       slot1: JournalCodec.encode(second, sequence: 2))
                    let state = try JournalCodec.decodeFile(image)
                    let complete = torn[..<new.count].elementsEqual(new)
                    #expect(state == (complete ? third : second), "cut \(cut)")
                }
            }
        }
    }

    @Test func bothSlotsCorruptIsAClearError() {
        var (image, _, _) = twoStateImage()
        image[4096 + 40] ^= 1
        image[8192 + 40] ^= 1
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeFile(image) }
        guard case .noValidRecord(.checksumMismatch, .checksumMismatch) = error else {
            Issue.record("got \(String(describing: error))"); return
        }
        #expect(error!.description.hasPrefix("no valid record (slot 0: checksum mismatch"))
    }

    @Test func randomGarbageNeverCrashes() throws {
        var random = JournalTestRandom(state: 99)
        let valid = JournalCodec.encode(JournalFixtures.state(ranges: JournalFixtures.manyRanges(50, total: 1 << 30)))
        for round in 0..<3000 {
            var record = valid
            for _ in 0..<(1 + round % 8) {
                let offset = Int(random.next(below: Int64(record.count)))
                record[offset] = UInt8(truncatingIfNeeded: random.next())
            }
            // Reseal so that the payload parser, not the CRC, sees the damage.
            let payload = Array(record[16..<(record.count - 4)])
            if let decoded = try? JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1)) {
                #expect(try JournalCodec.decodeRecord(JournalCodec.encode(decoded.state)).state == decoded.state)
            }
        }
    }
}

extension JournalCodecTests {
    /// Format version 2 (resolved URL, boot id) and reading version 1.
    @Suite struct Version2Tests {
        /// A version 1 record (sequence 5) written by the version 1 encoder, byte for byte, and its state.
        static let version1Record = hexBytes(
            "485245437000000005000000000000000100070040420f00000000000000010000000000c03e15690000000000f153650000"
                + "0000190068747470733a2f2f6578616d706c652e636f6d2f612e69736f01000a00687474703a2f2f6d2f61040022653122"
                + "0673686132353604006162636403000000008020902e904eb8e03be807eaa12900")
        /// The version 1 file header for 4096-byte slots.
        static let version1Header = hexBytes("4841554c4a524e4c0100000000100000312283f9")
        static let version1State = JournalState(
            url: "https://example.com/a.iso", mirrors: ["http://m/a"], etag: Array("\"e1\"".utf8),
            lastModified: 1_700_000_000, totalLength: 1_000_000, minimumSegmentSize: 65536,
            checksum: JournalChecksum(algorithm: "sha256", hex: "abcd"), createdAt: 1_763_000_000,
            durable: ByteRangeSet([0..<4096, 10_000..<20_000, 999_000..<1_000_000]))

        static func hexBytes(_ hex: String) -> [UInt8] {
            let digits = Array(hex.utf8)
            return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
        }

        @Test func version1RecordsAndFilesStillRead() throws {
            let record = try JournalCodec.decodeRecord(Self.version1Record)
            #expect(record == JournalRecord(sequence: 5, state: Self.version1State))
            #expect(record.state.resolvedURL == nil && record.state.bootID == nil)
            // The version 1 encoder path still writes exactly these bytes.
            #expect(JournalCodec.seal(payload: JournalCodec.encodePayload(Self.version1State, version: 1), sequence: 5)
                == Self.version1Record)
            #expect(JournalCodec.encodeHeader(slotCapacity: 4096, version: 1) == Self.version1Header)
            var image = Self.version1Header + [UInt8](repeating: 0, count: 4096 - 20) + Self.version1Record
            var inspection = try JournalCodec.inspectFile(image)
            #expect(inspection.formatVersion == 1 && inspection.latest.state == Self.version1State)
            // A version 1 file whose newer slot holds a version 2 record (the engine never writes one, but
            // either version is read in either file).
            let newer = JournalFixtures.stateWithVersion2Fields()
            image += [UInt8](repeating: 0, count: 8192 - image.count) + JournalCodec.encode(newer, sequence: 6)
            inspection = try JournalCodec.inspectFile(image)
            #expect(inspection.formatVersion == 1 && inspection.latest.state == newer && inspection.latestSlot == 1)
            // Version 2 files say so.
            let current = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(newer))
            #expect(Array(current[8..<10]) == [2, 0])
            #expect(try JournalCodec.inspectFile(current).formatVersion == 2)
        }

        @Test func roundTripsTheNewFields() throws {
            let full = JournalFixtures.stateWithVersion2Fields()
            var onlyResolved = full
            onlyResolved.bootID = nil
            var onlyBoot = full
            onlyBoot.resolvedURL = nil
            var limits = JournalState(url: "u", totalLength: 1, minimumSegmentSize: 1, createdAt: 1)
            limits.resolvedURL = String(repeating: "r", count: JournalLimits.maxURLBytes)
            limits.bootID = [UInt8](repeating: 0xFF, count: JournalLimits.maxBootIDBytes)  // any bytes
            var empty = limits
            empty.resolvedURL = ""
            empty.bootID = []
            for state in [full, onlyResolved, onlyBoot, limits, empty] {
                try JournalCodec.validate(state)
                let record = JournalCodec.encode(state, sequence: 3)
                #expect(try JournalCodec.decodeRecord(record) == JournalRecord(sequence: 3, state: state))
                let capacity = try #require(JournalCodec.slotCapacity(forRecordOf: record.count))
                #expect(try JournalCodec.decodeFile(JournalCodec.fileImage(slotCapacity: capacity, slot0: record)) == state)
            }
            // Flags: bit 3 resolved URL, bit 4 boot id.
            #expect(JournalCodec.encodePayload(full)[2] == 0b11111)
            #expect(JournalCodec.encodePayload(onlyBoot)[2] == 0b10111)
            #expect(JournalCodec.encodePayload(JournalFixtures.state())[2] == 0b00111)
            // Written as version 1, the new fields are dropped.
            let downgraded = JournalCodec.seal(payload: JournalCodec.encodePayload(full, version: 1), sequence: 1)
            #expect(try JournalCodec.decodeRecord(downgraded).state == JournalFixtures.state())
            let description = full.description
            #expect(description.contains("resolved: https://cdn-7.example.net/") && description.contains("boot: 8c3f2a9e"))
        }

        @Test func oversizedNewFieldsAreRefusedBeforeWriting() {
            var long = JournalFixtures.stateWithVersion2Fields()
            long.resolvedURL = String(repeating: "x", count: JournalLimits.maxURLBytes + 1)
            let error = #expect(throws: JournalError.self) { try JournalCodec.validate(long) }
            guard case .unwritableState(.fieldTooLong(field: "resolved url", length: 8193, limit: 8192, _)) = error else {
                Issue.record("got \(String(describing: error))"); return
            }
            var boot = JournalFixtures.stateWithVersion2Fields()
            boot.bootID = [UInt8](repeating: 0x61, count: JournalLimits.maxBootIDBytes + 1)
            let bootError = #expect(throws: JournalError.self) { try JournalCodec.validate(boot) }
            guard case .unwritableState(.fieldTooLong(field: "boot id", length: 65, limit: 64, _)) = bootError else {
                Issue.record("got \(String(describing: bootError))"); return
            }
            // 256 bytes would wrap the u8 length: still caught by the read-back check.
            boot.bootID = [UInt8](repeating: 0x61, count: 256)
            #expect(throws: JournalError.self) { try JournalCodec.validate(boot) }
        }

        @Test func corruptNewFieldsAreNamed() throws {
            let state = JournalFixtures.stateWithVersion2Fields(ranges: [0..<1])  // one range: 2 varint bytes
            let payload = JournalCodec.encodePayload(state)
            var withoutNew = state
            withoutNew.resolvedURL = nil
            withoutNew.bootID = nil
            let resolvedAt = JournalCodec.encodePayload(withoutNew).count - 4 - 2
            let bootAt = resolvedAt + 2 + state.resolvedURL!.utf8.count
            #expect(Array(payload[bootAt + 1..<bootAt + 37]) == state.bootID!)
            func decode(_ bytes: [UInt8]) -> JournalError? {
                do { _ = try JournalCodec.decodeRecord(JournalCodec.seal(payload: bytes, sequence: 1)); return nil } catch { return error }
            }
            // Resolved URL: length over the limit, invalid UTF-8.
            var bad = payload
            bad[resolvedAt] = 0x01; bad[resolvedAt + 1] = 0x20  // 8193
            #expect(decode(bad) == .fieldTooLong(field: "resolved url", length: 8193, limit: 8192, offset: 16 + resolvedAt))
            bad = payload
            bad[resolvedAt + 2] = 0xC3
            #expect(decode(bad) == .invalidUTF8(field: "resolved url", offset: 16 + resolvedAt + 2))
            // Boot id: length over the limit, or longer than what is left.
            bad = payload
            bad[bootAt] = 65
            #expect(decode(bad) == .fieldTooLong(field: "boot id", length: 65, limit: 64, offset: 16 + bootAt))
            bad = Array(payload[..<(bootAt + 10)])
            guard case .truncated(field: "boot id", need: 36, offset: _, end: _, region: .record) = decode(bad) else {
                Issue.record("got \(String(describing: decode(bad)))"); return
            }
            // A longer boot id length swallows the range count: the record no longer parses.
            bad = payload
            bad[bootAt] = 40
            #expect(decode(bad) != nil)
            let description = JournalError.fieldTooLong(field: "boot id", length: 65, limit: 64, offset: 9).description
            #expect(description == "boot id at offset 9 is 65 bytes long, limit 64")
        }

        @Test func everyTruncationOfAVersion2PayloadIsAnError() {
            let payload = JournalCodec.encodePayload(JournalFixtures.stateWithVersion2Fields())
            for length in 0..<payload.count {
                let sealed = JournalCodec.seal(payload: Array(payload[..<length]), sequence: 1)
                #expect(throws: JournalError.self, "length \(length)") { try JournalCodec.decodeRecord(sealed) }
            }
        }

        @Test func everyBitFlipInAVersion2RecordIsCaught() throws {
            let state = JournalFixtures.stateWithVersion2Fields()
            let older = JournalFixtures.state(ranges: [0..<10])
            let image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(older, sequence: 1),
                                               slot1: JournalCodec.encode(state, sequence: 2))
            #expect(try JournalCodec.decodeFile(image) == state)
            for offset in JournalCodec.slotOffset(1, slotCapacity: 4096)..<image.count {
                for bit in 0..<8 {
                    var corrupt = image
                    corrupt[offset] ^= 1 << bit
                    #expect(try JournalCodec.decodeFile(corrupt) == older, "offset \(offset) bit \(bit)")
                }
            }
        }

        @Test func version1RecordsMayNotSetTheNewFlags() {
            for flag: UInt16 in [0x08, 0x10] {
                var payload = JournalCodec.encodePayload(Self.version1State, version: 1)
                payload[2] |= UInt8(flag)
                let error = #expect(throws: JournalError.self) {
                    try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1))
                }
                #expect(error == .unknownFlags(flag, offset: 18))
            }
            var payload = JournalCodec.encodePayload(JournalFixtures.state())
            payload[2] |= 0x20
            #expect(throws: JournalError.unknownFlags(0x20, offset: 18)) {
                try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1))
            }
        }

        @Test func unsupportedVersionsSayWhichAreRead() {
            var payload = JournalCodec.encodePayload(JournalFixtures.state())
            payload[0] = 3
            let error = #expect(throws: JournalError.self) {
                try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1))
            }
            #expect(error == .unsupportedVersion(3, region: "record"))
            #expect(error?.description == "unsupported version 3 in record (this build reads versions 1 to 2)")
            #expect(throws: JournalError.unsupportedVersion(3, region: "file header")) {
                try JournalCodec.decodeHeader(JournalCodec.encodeHeader(slotCapacity: 4096, version: 3))
            }
            #expect(throws: JournalError.unsupportedVersion(0, region: "file header")) {
                try JournalCodec.decodeHeader(JournalCodec.encodeHeader(slotCapacity: 4096, version: 0))
            }
        }

        @Test func trustedDurableDependsOnTheBootThatWroteAnUnsyncedRecord() {
            let ranges = ByteRangeSet([0..<100, 200..<300])
            var state = JournalState(url: "u", totalLength: 1000, minimumSegmentSize: 1, createdAt: 0, durable: ranges)
            let thisBoot = Array("11111111-2222-3333-4444-555555555555".utf8)
            let otherBoot = Array("99999999-2222-3333-4444-555555555555".utf8)
            // Synced data: trusted whatever the boot.
            #expect(state.trustedDurable(currentBootID: thisBoot) == ranges)
            #expect(state.trustedDurable(currentBootID: nil) == ranges)
            // Unsynced data: trusted only in the boot that wrote it.
            state.bootID = thisBoot
            #expect(state.trustedDurable(currentBootID: thisBoot) == ranges)
            #expect(state.trustedDurable(currentBootID: otherBoot) == ByteRangeSet())
            #expect(state.trustedDurable(currentBootID: nil) == ByteRangeSet())
        }

        @Test(.enabled(if: access("/proc/sys/kernel/random/boot_id", R_OK) == 0, "needs /proc"))
        func currentBootIDIsTheKernelsWithoutTheNewline() throws {
            let id = try #require(JournalState.currentBootID())
            print("boot id: \(String(decoding: id, as: UTF8.self))")
            #expect(id.count == 36)
            #expect(id.allSatisfy { $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
            #expect(JournalState.currentBootID() == id)
            var state = JournalFixtures.state()
            state.bootID = id
            #expect(state.trustedDurable(currentBootID: JournalState.currentBootID()) == state.durable)
        }
    }
}

extension JournalCodecTests {
    /// CRC-32C check values and the slicing-by-8 path against a bytewise reference.
    @Suite struct CRC32CTests {
        @Test func knownVectors() {
            #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
            #expect(CRC32C.checksum([UInt8]()) == 0)
            // RFC 3720 appendix B.4.
            #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
            #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
            #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
            #expect(CRC32C.checksum((0..<32).reversed().map { UInt8($0) }) == 0x113F_DB5C)
        }

        @Test func slicingMatchesBytewiseAndComposes() {
            var random = JournalTestRandom(state: 7)
            let data = (0..<1000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            // Byte-at-a-time reference (no slicing).
            func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
                var crc: UInt32 = 0xFFFF_FFFF
                for byte in bytes {
                    crc ^= UInt32(byte)
                    for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
                }
                return ~crc
            }
            for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 999, 1000] {
                #expect(CRC32C.checksum(data[0..<length]) == reference(data[0..<length]))
                #expect(CRC32C.checksum(data[3..<max(3, length)]) == reference(data[3..<max(3, length)]))
            }
            for split in [0, 1, 5, 8, 500, 1000] {
                let first = CRC32C.checksum(data[0..<split])
                let whole = data[split...].withUnsafeBytes { CRC32C.update(first, with: $0) }
                #expect(whole == CRC32C.checksum(data))
            }
        }
    }
}
