import COpenSSL
import Foundation
import Glibc

/// Deterministic test content and SHA-256 digests.
///
/// The content is a pseudo-random 1 MiB block, rotated by a different amount in every 1 MiB block of the
/// file: cheap to produce (two memory copies per block, so a 1 GiB file takes about as long as the disk
/// needs), never all zeros, and no two blocks alike, so bytes written at the wrong offset change the digest.
public enum TestFiles {
    /// The size of the repeating, rotated unit of the pattern.
    public static let blockSize = 1 << 20

    /// How far each block is rotated relative to the previous one: odd and not a power of two, so that the
    /// blocks of any file smaller than a terabyte are pairwise different.
    private static let rotationStep = 4099

    /// Writes `size` bytes of the pattern for `seed` to `path`, replacing any existing file.
    public static func create(at path: String, size: Int, seed: UInt64 = 0) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestSupportError("open \(path) failed: \(TestSupportError.describe(errno: errno))") }
        defer { close(fd) }
        let base = baseBlock(seed: seed)
        // Large writes: the syscall count, not the copying, dominates for multi-gigabyte files.
        let blocksPerWrite = 8
        var buffer = [UInt8](repeating: 0, count: blockSize * blocksPerWrite)
        var offset = 0
        while offset < size {
            let count = min(buffer.count, size - offset)
            buffer.withUnsafeMutableBytes { destination in
                fillPattern(base: base, offset: offset, into: UnsafeMutableRawBufferPointer(rebasing: destination[0..<count]))
            }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, count - written) }
                if result < 0 {
                    if errno == EINTR { continue }
                    throw TestSupportError("write \(path) failed: \(TestSupportError.describe(errno: errno))")
                }
                written += result
            }
            offset += count
        }
    }

    /// The `count` bytes of the pattern for `seed` that start at `offset`: what a file made by
    /// ``create(at:size:seed:)`` holds there.
    public static func bytes(offset: Int = 0, count: Int, seed: UInt64 = 0) -> [UInt8] {
        let base = baseBlock(seed: seed)
        var result = [UInt8](repeating: 0, count: count)
        result.withUnsafeMutableBytes { fillPattern(base: base, offset: offset, into: $0) }
        return result
    }

    /// The lowercase hex SHA-256 of a file, read in 1 MiB blocks.
    public static func sha256(ofFile path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TestSupportError("open \(path) failed: \(TestSupportError.describe(errno: errno))") }
        defer { close(fd) }
        var digest = try SHA256Digest()
        var buffer = [UInt8](repeating: 0, count: blockSize)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TestSupportError("read \(path) failed: \(TestSupportError.describe(errno: errno))")
            }
            if count == 0 { break }
            try buffer.withUnsafeBytes { try digest.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        return try digest.finishHex()
    }

    /// The lowercase hex SHA-256 of some bytes.
    public static func sha256(of bytes: some ContiguousBytes) throws -> String {
        var digest = try SHA256Digest()
        try bytes.withUnsafeBytes { try digest.update($0) }
        return try digest.finishHex()
    }

    /// The unrotated 1 MiB block for a seed, from xorshift64* (any cheap generator would do; this one is tiny).
    private static func baseBlock(seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var words = [UInt64](repeating: 0, count: blockSize / 8)
        words.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices {
                state ^= state >> 12
                state ^= state << 25
                state ^= state >> 27
                buffer[index] = (state &* 0x2545_F491_4F6C_DD1D).littleEndian
            }
        }
        return words.withUnsafeBytes { Array($0) }
    }

    /// Fills `destination` with the pattern starting at file offset `offset`; block `i` is the base block
    /// rotated left by `i * rotationStep` bytes.
    private static func fillPattern(base: [UInt8], offset: Int, into destination: UnsafeMutableRawBufferPointer) {
        base.withUnsafeBytes { source in
            var filled = 0
            while filled < destination.count {
                let position = offset + filled
                let block = position / blockSize
                let inBlock = position % blockSize
                let rotation = (block % blockSize) * rotationStep % blockSize
                let sourceStart = (inBlock + rotation) % blockSize
                // Copy up to the end of the source block or of the file block, whichever comes first.
                let count = min(destination.count - filled, blockSize - sourceStart, blockSize - inBlock)
                (destination.baseAddress! + filled).copyMemory(from: source.baseAddress! + sourceStart, byteCount: count)
                filled += count
            }
        }
    }
}

/// An incremental SHA-256 over OpenSSL's EVP interface.
struct SHA256Digest: ~Copyable {
    private let context: OpaquePointer

    init() throws {
        guard let context = EVP_MD_CTX_new() else { throw TestSupportError("EVP_MD_CTX_new failed") }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw TestSupportError("EVP_DigestInit_ex(sha256) failed")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count > 0 else { return }
        guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else {
            throw TestSupportError("EVP_DigestUpdate failed")
        }
    }

    consuming func finishHex() throws -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1 else { throw TestSupportError("EVP_DigestFinal_ex failed") }
        return digest[0..<Int(length)].map { String(format: "%02x", $0) }.joined()
    }
}

/// Byte equality as a plain Bool, for `#expect`: on failure Swift Testing diffs the operands of `==`, which
/// for multi-MiB arrays takes practically forever and would hang the test run.
public func sameBytes(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
    a.elementsEqual(b)
}
