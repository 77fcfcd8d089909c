import Testing
@testable import HaulJournal

/// The verified pieces a journal records for a download with piece hashes (flag bit 5, after the durable
/// ranges): they round-trip, records without them still read, and a hostile field is refused, never trusted.
@Suite struct JournalPiecesTests {
    func state(pieces: JournalPieces?, total: Int64 = 1000) -> JournalState {
        JournalState(url: "http://a.example/f", etag: Array("\"v1\"".utf8), totalLength: total, minimumSegmentSize: 1,
                     createdAt: 1, durable: ByteRangeSet([0..<600, 900..<total]), pieces: pieces)
    }

    @Test func verifiedPiecesRoundTrip() throws {
        for pieces in [JournalPieces(length: 100), JournalPieces(length: 100, verified: ByteRangeSet([0..<300, 900..<1000])),
                       JournalPieces(length: 300, verified: ByteRangeSet([900..<1000]))] {
            let state = state(pieces: pieces)
            try JournalCodec.validate(state)
            #expect(try JournalCodec.decodeRecord(JournalCodec.encode(state)).state == state)
        }
    }

    @Test func aRecordWithoutPiecesReadsAsBefore() throws {
        let state = state(pieces: nil)
        let payload = JournalCodec.encodePayload(state)
        // Flags: ETag only; no bit 5.
        #expect(payload[2] == 0x01 && payload[3] == 0)
        #expect(try JournalCodec.decodeRecord(JournalCodec.encode(state)).state.pieces == nil)
        // A version 1 record has no place for pieces: written without them, read as nil.
        let version1 = JournalCodec.encodePayload(self.state(pieces: JournalPieces(length: 100, verified: ByteRangeSet([0..<100]))), version: 1)
        #expect(try JournalCodec.decodeRecord(JournalCodec.seal(payload: version1, sequence: 1)).state.pieces == nil)
    }

    @Test func aVersion1RecordCannotClaimPieces() {
        var payload = JournalCodec.encodePayload(state(pieces: nil), version: 1)
        payload[2] |= 0x20
        let error = #expect(throws: JournalError.self) { try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1)) }
        guard case .unknownFlags(0x0020, _) = error else { Issue.record("got \(String(describing: error))"); return }
    }

    /// The payload of `state(pieces:)` with the pieces field replaced by `length` and hand-made ranges.
    func payload(length: UInt64, varints: [UInt64], total: Int64 = 1000) -> [UInt8] {
        var payload = JournalCodec.encodePayload(state(pieces: nil, total: total))
        payload[2] |= 0x20
        func varint(_ value: UInt64) {
            var value = value
            while value >= 0x80 { payload.append(UInt8(truncatingIfNeeded: value) | 0x80); value >>= 7 }
            payload.append(UInt8(value))
        }
        varint(length)
        payload += withUnsafeBytes(of: UInt32(varints.count / 2).littleEndian, Array.init)
        for value in varints { varint(value) }
        return payload
    }

    func decode(_ payload: [UInt8]) throws(JournalError) -> JournalState {
        try JournalCodec.decodeRecord(JournalCodec.seal(payload: payload, sequence: 1)).state
    }

    @Test func handMadePiecesDecode() throws {
        // Pieces 1 and 2 of 100 bytes, and the short last piece 900..<950 of a 950-byte file.
        let state = try decode(payload(length: 100, varints: [100, 200, 600, 50], total: 950))
        #expect(state.pieces == JournalPieces(length: 100, verified: ByteRangeSet([100..<300, 900..<950])))
    }

    @Test(arguments: [
        (UInt64(0), [UInt64](), "piece length"),            // a piece of 0 bytes
        (100, [50, 100], "piece boundaries"),                // starts inside a piece
        (100, [0, 150], "piece boundaries"),                 // ends inside a piece
        (100, [0, 100, 0, 100], "overlap"),                  // touching ranges
        (100, [900, 200], "past"),                           // past the total length
        (100, [0, 0], "empty"),
    ])
    func hostilePiecesAreRefused(length: UInt64, varints: [UInt64], kind: String) {
        let error = #expect(throws: JournalError.self) { try decode(payload(length: length, varints: varints)) }
        #expect("\(String(describing: error))".lowercased().contains(kind), "\(String(describing: error))")
    }

    @Test func aHugeRangeCountIsRefusedBeforeAllocating() {
        var payload = payload(length: 100, varints: [])
        payload.removeLast(4)
        payload += withUnsafeBytes(of: UInt32.max.littleEndian, Array.init)
        #expect(throws: JournalError.self) { try decode(payload) }
    }

    @Test func aCheckpointRecordsOnlyWholeVerifiedPiecesItRecordsAsDurable() {
        let pieces = JournalPieces(length: 100, verified: ByteRangeSet([0..<400, 900..<950]))
        let restricted = pieces.restricted(to: ByteRangeSet([0..<250, 300..<950]), totalLength: 950)
        #expect(restricted.verified == ByteRangeSet([0..<200, 300..<400, 900..<950]))
    }

    @Test func byteRangeSetRemovesAndIntersects() {
        var set = ByteRangeSet([0..<100, 200..<300])
        set.remove(50..<250)
        #expect(set == ByteRangeSet([0..<50, 250..<300]))
        #expect(set.contains(250..<300) && !set.contains(49..<51) && !set.contains(300..<301) && set.contains(10..<10))
        #expect(ByteRangeSet([0..<10, 20..<30]).intersection(ByteRangeSet([5..<25])) == ByteRangeSet([5..<10, 20..<25]))
        #expect(ByteRangeSet([0..<10]).intersection(ByteRangeSet()) == ByteRangeSet())
    }
}
