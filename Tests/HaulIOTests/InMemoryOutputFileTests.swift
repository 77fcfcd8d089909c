import Glibc
import SystemPackage
import Testing
@testable import HaulIO

/// The in-memory file a download kept in memory writes into: positional writes from anywhere, read back
/// whole, hashed as bytes the same as a file on disk.
@Suite struct InMemoryOutputFileTests {
    @Test func writesAtAnyOffsetReadBackInOrder() throws {
        let file = try OutputFile.inMemory(label: "haul-memory-test")
        try file.truncate(to: 6)
        // Out of order, as connections write their segments.
        try Array("def".utf8).withUnsafeBytes { try file.write($0, at: 3) }
        try Array("abc".utf8).withUnsafeBytes { try file.write($0, at: 0) }
        #expect(try file.readAll() == Array("abcdef".utf8))
        try file.truncate(to: 0)
        #expect(try file.readAll().isEmpty)
    }

    @Test func itHasNoNameInAnyDirectory() throws {
        let file = try OutputFile.inMemory(label: "haul-memory-test")
        // /proc shows an anonymous memfd as "/memfd:NAME (deleted)": no path anything else could open.
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/self/fd/\(file.fileDescriptor.rawValue)", &buffer, buffer.count - 1)
        #expect(count > 0)
        let target = String(decoding: buffer[0..<max(0, count)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #expect(target.hasPrefix("/memfd:haul-memory-test"), "\(target)")
    }

    @Test func bytesHashLikeTheSameFileOnDisk() throws {
        let scratch = OutputFileScratch()
        let text = String(repeating: "haul ", count: 1000)
        scratch.write("f", text)
        for algorithm in DigestAlgorithm.allCases {
            #expect(try FileDigest.hex(of: Array(text.utf8), algorithm: algorithm)
                == FileDigest.hex(of: scratch.file("f"), algorithm: algorithm))
        }
        #expect(try FileDigest.hex(of: [], algorithm: .sha256) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }
}
