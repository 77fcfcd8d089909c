import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// ``HandedOffWriteReturn``: spliced bytes written on a writer thread count only when their write returned
/// for the exchange that read them, while it and its download still run.
@Suite struct HandedOffWriteReturnTests {
    @Test func writtenBytesOfTheRunningExchangeCount() {
        #expect(HandedOffWriteReturn.decide(exchangeCurrent: true, downloadStopped: false, failed: false) == .counts)
    }

    @Test func aFailedWriteFailsTheRunningExchange() {
        #expect(HandedOffWriteReturn.decide(exchangeCurrent: true, downloadStopped: false, failed: true) == .fails)
    }

    @Test func aWriteThatOutlivedItsExchangeOrDownloadCountsForNothing() {
        for failed in [false, true] {
            #expect(HandedOffWriteReturn.decide(exchangeCurrent: false, downloadStopped: false, failed: failed) == .countsForNothing)
            #expect(HandedOffWriteReturn.decide(exchangeCurrent: true, downloadStopped: true, failed: failed) == .countsForNothing)
            #expect(HandedOffWriteReturn.decide(exchangeCurrent: false, downloadStopped: true, failed: failed) == .countsForNothing)
        }
    }
}

extension FaultTests {
    /// The disk fills while spliced bytes are written on the writer thread: the download fails with the
    /// write's error (no retry writes into a full disk), and the `.part` keeps the bytes written before —
    /// the resource's first bytes, nothing else.
    @Test(arguments: [true, false])
    func aDiskThatFillsMidBodyFailsTheSplicedDownloadAndKeepsWhatWasWritten(handsOff: Bool) async throws {
        try await withTinyFilesystem { mountPoint in
            // 512 KiB into a 1 MiB tmpfs: below two minimum segments and one checkpoint, so not preallocated
            // (the space is taken as the bytes come) and not journaled.
            let size = 512 << 10
            let small = MisbehavingServer.Resource.pattern(size: size, seed: 7)
            let server = try MisbehavingServer(resource: small)
            defer { server.stop() }
            let held = 128 << 10
            server.hold(afterBodyBytes: held)
            var options = options(connections: 1, path: .spliced)
            options.minimumSegment = 512 << 10
            options.retry = .none
            options.handsOffSplicedWrites = handsOff
            let log = CapturingLogHandler.Store()
            let client = try HaulClient(options: options, logger: CapturingLogHandler.logger(log))
            let task = try client.start(DownloadRequest(url: server.url("/f"), destination: .file(mountPoint + "/f")))
            let arrived = await eventually { task.currentProgress.bytesDone >= Int64(held) }
            #expect(arrived, "the held bytes were written (\(task.currentProgress.bytesDone))")
            // Fill the rest of the file system, then let the body go on.
            let filler = try FileHandle(forWritingTo: URL(fileURLWithPath: mountPoint + "/filler", isDirectory: false), creating: true)
            let chunk = Data(repeating: 0xA5, count: 16 << 10)
            while (try? filler.write(contentsOf: chunk)) != nil {}
            try? filler.close()
            server.release()
            await #expect {
                _ = try await task.value
            } throws: { error in
                guard case .disk(_, let systemError)? = (error as? HaulError)?.reason else { return false }
                return systemError.errno == ENOSPC
            }
            BodyPath.spliced.expectTaken(in: log)
            let part = Array(try Data(contentsOf: URL(fileURLWithPath: mountPoint + "/f.part")))
            #expect(part.count >= held, "the bytes written before the disk filled are kept (\(part.count))")
            #expect(part.count < size)
            #expect(sameBytes(part, small.bytes[..<part.count]), "the .part holds the resource's first bytes, nothing else")
        }
    }
}

private extension FileHandle {
    convenience init(forWritingTo url: URL, creating: Bool) throws {
        if creating { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        try self.init(forWritingTo: url)
    }
}
