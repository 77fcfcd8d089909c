import Testing
@testable import HaulJournal

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
