import Glibc
import Testing
@testable import HaulJournal

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
            // Bit 5 (verified pieces) is known since piece hashes; bit 6 is the first unknown one.
            var payload = JournalCodec.encodePayload(JournalFixtures.state())
            payload[2] |= 0x40
            #expect(throws: JournalError.unknownFlags(0x40, offset: 18)) {
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
