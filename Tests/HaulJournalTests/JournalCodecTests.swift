import Glibc
import Testing
@testable import HaulJournal

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
        var decoded = 0, refused = 0
        for round in 0..<3000 {
            var record = valid
            for _ in 0..<(1 + round % 8) {
                let offset = Int(random.next(below: Int64(record.count)))
                record[offset] = UInt8(truncatingIfNeeded: random.next())
            }
            // Reseal so that the payload parser, not the CRC, sees the damage.
            let payload = Array(record[16..<(record.count - 4)])
            do throws(JournalError) {
                let state = try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1)).state
                decoded += 1
                // What the decoder accepts is a state the encoder writes back as it is: within every bound.
                #expect(throws: Never.self, "round \(round)") { try JournalCodec.validate(state) }
            } catch {
                refused += 1
                // Refused by a rule of the payload's grammar, by name; the frame itself was sound.
                switch error {
                case .checksumMismatch, .badMagic, .io, .inJournal, .slot, .noValidRecord, .unwritableState:
                    Issue.record("round \(round): refused for a reason that is not the payload's: \(error)")
                default:
                    break
                }
            }
        }
        print("random garbage: \(decoded) records decoded, \(refused) refused")
        // The damage reaches both outcomes, so both branches above were checked many times.
        #expect(decoded >= 100 && refused >= 100, "decoded \(decoded), refused \(refused)")
    }
}
