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
