import Foundation
import HaulTestSupport
import Testing

@Suite("TestFiles")
struct TestFilesTests {
    @Test("SHA-256 matches known vectors and sha256sum")
    func sha256() throws {
        #expect(try TestFiles.sha256(of: [UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(try TestFiles.sha256(of: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let scratch = try TemporaryDirectory()
        let path = scratch.file("f")
        try TestFiles.create(at: path, size: 2 << 20 + 3)
        let sha256sum = try ChildProcess.runChecked("/usr/bin/sha256sum", [path]).outputText.prefix(64)
        #expect(try TestFiles.sha256(ofFile: path) == String(sha256sum))
    }

    @Test("file content equals bytes(offset:count:), differs per block and per seed, and is not zeros")
    func patternIsDeterministicAndVaried() throws {
        let scratch = try TemporaryDirectory()
        let path = scratch.file("f")
        let size = 3 << 20 + 777
        try TestFiles.create(at: path, size: size, seed: 42)
        let data = try #require(FileManager.default.contents(atPath: path))
        #expect(data.count == size)
        #expect(sameBytes(data, TestFiles.bytes(count: size, seed: 42)))
        #expect(Array(data[1_048_000..<1_049_000]) == TestFiles.bytes(offset: 1_048_000, count: 1000, seed: 42))
        let block = TestFiles.blockSize
        #expect(data[0..<4096] != data[block..<block + 4096])
        #expect(TestFiles.bytes(count: 4096, seed: 1) != TestFiles.bytes(count: 4096, seed: 2))
        #expect(data.prefix(4096).contains { $0 != 0 })
    }
}
