/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum on every resume-journal record.
///
/// Table-driven, slicing-by-8: eight bytes per step through eight 256-entry tables. Same parameters as the
/// CRC in iSCSI (RFC 3720), ext4 metadata and SSE4.2's `crc32` instruction: initial value and final XOR
/// 0xFFFFFFFF, so `checksum("123456789") == 0xE3069283`.
public enum CRC32C {
    /// `tables[k * 256 + b]`: the CRC contribution of byte `b` followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[byte] = crc
        }
        for slice in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(slice - 1) * 256 + byte]
                tables[slice * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, with: bytes)
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: some Collection<UInt8>) -> UInt32 {
        if let crc = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0)) }) {
            return crc
        }
        return Array(bytes).withUnsafeBytes { checksum($0) }
    }

    /// Continues a CRC: `update(checksum(a), with: b) == checksum(a + b)`.
    public static func update(_ crc: UInt32, with bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = ~crc
        guard let base = bytes.baseAddress, bytes.count > 0 else { return ~crc }
        var pointer = base.assumingMemoryBound(to: UInt8.self)
        var remaining = bytes.count
        tables.withUnsafeBufferPointer { table in
            while remaining >= 8 {
                let low = (UInt32(pointer[0]) | UInt32(pointer[1]) << 8 | UInt32(pointer[2]) << 16
                    | UInt32(pointer[3]) << 24) ^ crc
                let high = UInt32(pointer[4]) | UInt32(pointer[5]) << 8 | UInt32(pointer[6]) << 16
                    | UInt32(pointer[7]) << 24
                var next = table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                next ^= table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                next ^= table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                next ^= table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
                crc = next
                pointer += 8
                remaining -= 8
            }
            while remaining > 0 {
                crc = (crc >> 8) ^ table[Int((crc ^ UInt32(pointer[0])) & 0xFF)]
                pointer += 1
                remaining -= 1
            }
        }
        return ~crc
    }
}
