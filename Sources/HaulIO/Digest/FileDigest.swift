import COpenSSL
import Glibc
import SystemPackage

/// A hash algorithm for whole-file checksums, computed with OpenSSL's EVP interface.
public enum DigestAlgorithm: String, Sendable, Hashable, CaseIterable {
    case sha256, sha1, md5, sha512

    /// Length of the digest in bytes.
    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha1: 20
        case .md5: 16
        case .sha512: 64
        }
    }

    fileprivate var evp: OpaquePointer? {
        switch self {
        case .sha256: EVP_sha256()
        case .sha1: EVP_sha1()
        case .md5: EVP_md5()
        case .sha512: EVP_sha512()
        }
    }
}

/// Checksums of files on disk and of downloads kept in memory.
public enum FileDigest {
    /// The lowercase hex digest of the file at `path`, read in 1 MiB blocks.
    public static func hex(of path: String, algorithm: DigestAlgorithm) throws(SystemError) -> String {
        let file = try FileDescriptor.opening(FilePath(path), .readOnly)
        guard let context = EVP_MD_CTX_new() else { throw SystemError(call: "EVP_MD_CTX_new", errno: ENOMEM) }
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex(context, algorithm.evp, nil)
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { block.deallocate() }
        file.descriptor.adviseSequentialReading()
        while true {
            let count = try systemCall("read") { try file.descriptor.read(into: block) }
            if count == 0 { break }
            EVP_DigestUpdate(context, block.baseAddress, count)
        }
        return finalHex(context)
    }

    /// The lowercase hex digests of the file at `path` in each of `algorithms`, from one read of it (a
    /// whole-file checksum and a server's `Repr-Digest` of another algorithm cost one pass).
    public static func hexes(of path: String, algorithms: Set<DigestAlgorithm>) throws(SystemError) -> [DigestAlgorithm: String] {
        let file = try FileDescriptor.opening(FilePath(path), .readOnly)
        file.descriptor.adviseSequentialReading()
        return try digests(algorithms) { block throws(SystemError) in try systemCall("read") { try file.descriptor.read(into: block) } }
    }

    /// The lowercase hex digests of the whole open file `descriptor` in each of `algorithms`, from one pass
    /// of `pread` from offset 0 (a file without a name has no path to open again).
    public static func hexes(of descriptor: FileDescriptor, algorithms: Set<DigestAlgorithm>) throws(SystemError) -> [DigestAlgorithm: String] {
        descriptor.adviseSequentialReading()
        var offset: Int64 = 0
        return try digests(algorithms) { block throws(SystemError) in
            let count = try descriptor.readAll(into: block, at: offset)
            offset += Int64(count)
            return count
        }
    }

    /// The lowercase hex digest of bytes `range` of the open file `descriptor`, read with `pread` (a piece of
    /// a download, read back after it was written). A file that ends inside `range` is `EIO`: those are not
    /// the bytes asked about.
    public static func hex(of descriptor: FileDescriptor, range: Range<Int64>, algorithm: DigestAlgorithm) throws(SystemError) -> String {
        var offset = range.lowerBound
        let result = try digests([algorithm]) { block throws(SystemError) in
            let wanted = Int(min(Int64(block.count), range.upperBound - offset))
            guard wanted > 0 else { return 0 }
            let count = try descriptor.readAll(into: UnsafeMutableRawBufferPointer(rebasing: block[..<wanted]), at: offset)
            guard count == wanted else { throw SystemError(call: "pread", errno: EIO) }
            offset += Int64(count)
            return count
        }
        return result[algorithm] ?? ""
    }

    /// Runs `read` (which fills the front of a 1 MiB block, 0 at the end) into a digest per algorithm.
    private static func digests(_ algorithms: Set<DigestAlgorithm>,
                                read: (UnsafeMutableRawBufferPointer) throws(SystemError) -> Int) throws(SystemError) -> [DigestAlgorithm: String] {
        var contexts: [(DigestAlgorithm, OpaquePointer)] = []
        defer { for (_, context) in contexts { EVP_MD_CTX_free(context) } }
        for algorithm in algorithms {
            guard let context = EVP_MD_CTX_new() else { throw SystemError(call: "EVP_MD_CTX_new", errno: ENOMEM) }
            contexts.append((algorithm, context))
            EVP_DigestInit_ex(context, algorithm.evp, nil)
        }
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
        defer { block.deallocate() }
        while true {
            let count = try read(block)
            if count == 0 { break }
            for (_, context) in contexts { EVP_DigestUpdate(context, block.baseAddress, count) }
        }
        var result: [DigestAlgorithm: String] = [:]
        for (algorithm, context) in contexts { result[algorithm] = finalHex(context) }
        return result
    }

    /// The lowercase hex digest of `bytes` (a download kept in memory).
    public static func hex(of bytes: [UInt8], algorithm: DigestAlgorithm) throws(SystemError) -> String {
        guard let context = EVP_MD_CTX_new() else { throw SystemError(call: "EVP_MD_CTX_new", errno: ENOMEM) }
        defer { EVP_MD_CTX_free(context) }
        EVP_DigestInit_ex(context, algorithm.evp, nil)
        bytes.withUnsafeBytes { buffer in _ = EVP_DigestUpdate(context, buffer.baseAddress, buffer.count) }
        return finalHex(context)
    }

    /// Ends `context`'s digest and spells it in lowercase hex.
    private static func finalHex(_ context: OpaquePointer) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest[0..<Int(length)] {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
