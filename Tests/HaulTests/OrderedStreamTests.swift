import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul
import SystemPackage

/// Bytes written out of order leave in order; unproven bytes wait for their proof; memory stays bounded.
@Suite struct OrderedStreamTests {
    /// A pipe whose read end is drained into memory by a thread of its own.
    final class Drain: @unchecked Sendable {
        final class Bytes: Sendable {
            let value = Mutex<[UInt8]>([])
        }
        let writeEnd: Int32
        private let readEnd: Int32
        private let collected = Bytes()
        private let thread: Thread

        init() {
            var fds: [Int32] = [0, 0]
            precondition(pipe(&fds) == 0)
            readEnd = fds[0]
            writeEnd = fds[1]
            let readEnd = fds[0]
            let collected = self.collected
            thread = Thread {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = read(readEnd, &buffer, buffer.count)
                    if count <= 0 { break }
                    collected.value.withLock { $0.append(contentsOf: buffer[0..<count]) }
                }
            }
            thread.start()
        }

        /// Closes the write end and returns everything read once the reader has seen the end.
        func finish() -> [UInt8] {
            close(writeEnd)
            poll(every: .milliseconds(1)) { thread.isFinished }
            close(readEnd)
            return collected.value.withLock { $0 }
        }
    }

    func write(_ stream: OrderedStream, _ bytes: [UInt8], at offset: Int64, proven: Bool = true) throws {
        try bytes.withUnsafeBytes { try stream.write($0, at: offset, proven: proven) }
    }

    @Test func outOfOrderPiecesLeaveInOrder() throws {
        let drain = Drain()
        let stream = OrderedStream(descriptor: FileDescriptor(rawValue: drain.writeEnd))
        let data = TestFiles.bytes(count: 40, seed: 1)
        try write(stream, Array(data[30..<40]), at: 30)
        try write(stream, Array(data[10..<20]), at: 10)
        #expect(stream.delivered == 0 && stream.waitingBytes == 20)
        try write(stream, Array(data[0..<10]), at: 0)
        #expect(stream.delivered == 20 && stream.waitingBytes == 10)
        try write(stream, Array(data[20..<30]), at: 20)
        #expect(stream.delivered == 40 && stream.waitingBytes == 0 && stream.peakWaitingBytes == 20)
        #expect(drain.finish() == data)
    }

    @Test func unprovenBytesWaitForTheirProofAndCanBeDropped() throws {
        let drain = Drain()
        let stream = OrderedStream(descriptor: FileDescriptor(rawValue: drain.writeEnd))
        let data = TestFiles.bytes(count: 30, seed: 2)
        try write(stream, Array(data[0..<10]), at: 0, proven: false)
        #expect(stream.delivered == 0, "not before the response proved its range")
        stream.discardUnproven(in: 0..<10)
        #expect(stream.waitingBytes == 0)
        try write(stream, Array(data[10..<20]), at: 10)
        try write(stream, Array(data[0..<10]), at: 0, proven: false)
        try stream.commit(0..<10)
        try write(stream, Array(data[20..<30]), at: 20)
        #expect(stream.delivered == 30)
        #expect(drain.finish() == data)
    }

    @Test func aClosedReaderIsABrokenPipe() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        let stream = OrderedStream(descriptor: FileDescriptor(rawValue: fds[1]))
        // The test process may get SIGPIPE for this write: block it on this thread for the call.
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        defer {
            var pending = sigset_t()
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var signal: Int32 = 0
                sigwait(&block, &signal)
            }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        }
        #expect(throws: SystemError.self) { try write(stream, [1, 2, 3], at: 0) }
    }

    @Test func aDownloadStreamedInOrderWhileTheFirstConnectionLags() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 12 << 20, seed: 19)
        // The probe (request 0) trickles, so every other connection runs ahead of the delivery point.
        let server = try MisbehavingServer(resource: resource, script: .byRequestIndex([0: .drip(bytes: 64 << 10, everyMilliseconds: 5)]))
        defer { server.stop() }
        // 4 connections: a window of 4 MiB ahead of the delivery point, a third of the file.
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        let drain = Drain()
        let result = try await HaulClient(options: options).download(DownloadRequest(url: server.url("/f"), destination: .stream(FileDescriptor(rawValue: drain.writeEnd))))
        let bytes = drain.finish()
        #expect(result.path == "-" && result.bytes == Int64(resource.bytes.count))
        #expect(sameBytes(bytes, resource.bytes))
        let ranges = server.requests.compactMap(\.range)
        #expect(ranges.count > 8, "the file comes in window-sized steps: \(ranges.count) requests")
        // Nothing was asked for beyond one request per connection past what the stream had taken.
        for case .bounded(let first, let last) in ranges { #expect(last - first + 1 <= 1 << 20) }
    }

    @Test func aChecksumWithAStreamIsAnError() async throws {
        let request = DownloadRequest(url: "http://127.0.0.1:9/f", destination: .stream(.standardOutput),
                                      checksum: Checksum(algorithm: .sha256, hex: String(repeating: "0", count: 64)))
        await #expect { _ = try await HaulClient().download(request) } throws: { error in
            guard case HaulError.invalidDestination = error else { return false }
            return true
        }
    }
}
