import Glibc
import Testing
@testable import HaulIO

@Suite("Write-back behind the write front")
struct OutputFileWriteBackTests {
    @Test func queueMergesAdjacentRangesAndAsksForOneDrainAtATime() {
        let queue = WriteBehindQueue()
        #expect(queue.add(0..<10), "the first range starts a drain")
        #expect(!queue.add(10..<20), "a drain is running: no second one")
        #expect(!queue.add(30..<40))
        #expect(!queue.add(40..<45))
        #expect(queue.take() == [0..<20, 30..<45])
        #expect(!queue.add(50..<60), "the drain has not seen an empty queue yet")
        #expect(queue.take() == [50..<60])
        #expect(queue.take() == nil, "empty: the drain ends")
        #expect(queue.add(60..<70), "after the drain ended, the next range starts another")
        #expect(queue.take() == [60..<70])
        #expect(queue.take() == nil)
    }

    /// A group commit plans with what the finished download's size check found: the filesystem and size come
    /// with every `fstat` of ``OutputFile/size()``, so no second `fstat` per file is needed.
    @Test func theLatestSizeCheckIsRememberedWithItsFileSystem() throws {
        let scratch = OutputFileScratch()
        let (file, _) = try OutputFile.openForDownload(scratch.file("known.part"))
        #expect(file.lastKnownFileSystemAndSize == nil, "nothing measured yet")
        try [UInt8](repeating: 7, count: 4096).withUnsafeBytes { try file.write($0, at: 0) }
        #expect(try file.size() == 4096)
        let measured = try file.fileSystemAndSize()
        #expect(file.lastKnownFileSystemAndSize?.device == measured.device)
        #expect(file.lastKnownFileSystemAndSize?.size == 4096)
        try [UInt8](repeating: 8, count: 10).withUnsafeBytes { try file.write($0, at: 4096) }
        #expect(file.lastKnownFileSystemAndSize?.size == 4096, "as of the latest call, not a call of its own")
        #expect(try file.size() == 4106)
        #expect(file.lastKnownFileSystemAndSize?.size == 4106)
    }

    @Test func backgroundWriteBackLeavesTheContentAndTheSyncIntact() throws {
        let scratch = OutputFileScratch()
        let path = scratch.file("data.part")
        let (file, _) = try OutputFile.openForDownload(path)
        let piece = 512 * 1024
        var expected: [UInt8] = []
        for index in 0..<6 {
            let bytes = [UInt8](repeating: UInt8(index + 1), count: piece)
            expected += bytes
            try bytes.withUnsafeBytes { try file.write($0, at: Int64(index * piece)) }
            file.writeBackInBackground(offset: Int64(index * piece), length: Int64(piece))
        }
        try file.synchronize()
        let fd = open(path, O_RDONLY)
        #expect(fd >= 0)
        defer { close(fd) }
        var content = [UInt8](repeating: 0, count: expected.count + 1)
        var total = 0
        while total < content.count {
            let count = content.withUnsafeMutableBytes { read(fd, $0.baseAddress! + total, $0.count - total) }
            if count <= 0 { break }
            total += count
        }
        #expect(total == expected.count)
        #expect(Array(content[0..<total]) == expected)
    }

    /// A write-back that failed makes every later sync fail: its pages may be gone, and Linux would tell only
    /// one sync about it. (A negative offset is what makes `sync_file_range` fail on demand.)
    @Test func aFailedWriteBackFailsEverySyncAfterIt() throws {
        let scratch = OutputFileScratch()
        let (file, _) = try OutputFile.openForDownload(scratch.file("data.part"))
        try file.synchronize()
        #expect(throws: SystemError.self) { try file.startWriteBack(offset: -4096, length: 4096) }
        for _ in 0..<2 {
            do {
                try file.synchronize()
                Issue.record("synchronize succeeded after a failed write-back")
            } catch {
                #expect(error.call == "sync_file_range")
                #expect(error.errno == EINVAL)
            }
        }
    }

    @Test func aFailedBackgroundWriteBackSurfacesAtTheNextSync() async throws {
        let scratch = OutputFileScratch()
        let (file, _) = try OutputFile.openForDownload(scratch.file("data.part"))
        file.writeBackInBackground(offset: -4096, length: 4096)
        // The write-back runs on another thread: poll until the sync reports it (with a deadline, so that a
        // broken implementation fails instead of hanging).
        var failure: SystemError?
        for _ in 0..<20_000 {
            do {
                try file.synchronize()
            } catch {
                failure = error
                break
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(failure?.call == "sync_file_range")
        #expect(failure?.errno == EINVAL)
    }
}
