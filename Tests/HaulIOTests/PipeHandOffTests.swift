import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import HaulIO

/// ``PipedBytes/handOff(_:into:keeping:at:tracking:completion:)``: the pipe → file move on a writer thread.
/// Its completion runs on the loop only once the bytes are in the file; the connection reads nothing while its
/// pipe is out; a failed move reports what it moved, and the
/// bytes it left in the pipe are never written later.
@Suite struct PipeHandOffTests {
    typealias Splice = ConnectionSpliceTests

    /// Keeps nothing alive: the tests close their file themselves, after the last write returned.
    final class Owner: Sendable {}

    /// What the reader saw, written on the loop thread only.
    final class Record: @unchecked Sendable {
        var offset: Int64 = 0
        var handedOff = 0
        var outstanding = false
        var problems: [String] = []
        var failures: [PipedWriteResult] = []
        var readBytes = 0
        var handler: ((ConnectionReadEvent) -> ReadDecision)?
    }

    /// Reads the whole stream from `server`, handing each piped read off into `target(handOffNumber)` at its
    /// offset; each completion checks the file (`check`) and starts reading again. Read bytes (after a file
    /// refused splice, or never) go to `fallback` with `pwrite`.
    func receive(from server: LoopbackServer, target: @escaping @Sendable (Int) -> Int32, fallback: Int32,
                 check: @escaping @Sendable (PipedWriteResult, _ offset: Int64, _ count: Int) -> String?) async throws -> Record {
        print("PipeHandOffTests: seed \(Splice.seed)")
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: ConnectionOptions(), on: loop)
        defer { connection.close() }
        let tracking = WritesInFlight()
        let owner = Owner()
        let record = Record()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                record.handler = { event in
                    if record.outstanding { record.problems.append("a read event while the pipe was handed off") }
                    switch event {
                    case .piped(let piped):
                        let offset = record.offset, count = piped.count
                        record.outstanding = true
                        record.handedOff += 1
                        piped.handOff(count, into: FileDescriptor(rawValue: target(record.handedOff)), keeping: owner, at: offset,
                                      tracking: tracking) { result in
                            record.outstanding = false
                            if let problem = check(result, offset, count) { record.problems.append(problem) }
                            if result.error != nil { record.failures.append(result) }
                            record.offset += Int64(count)
                            connection.startReadingOnLoop(splicing: { Int64.max }, record.handler!)
                        }
                        return .stop
                    case .bytes(let bytes):
                        record.readBytes += bytes.count
                        _ = pwrite(fallback, bytes.baseAddress, bytes.count, Int(record.offset))
                        record.offset += Int64(bytes.count)
                        return .continueReading
                    case .endOfStream, .failed:
                        record.handler = nil
                        continuation.resume()
                        return .stop
                    }
                }
                connection.startReadingOnLoop(splicing: { Int64.max }, record.handler!)
            }
        }
        // The last completion is posted just before its write counts as returned: nothing is left under way.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { tracking.whenAllReturned(on: loop) { continuation.resume() } }
        }
        #expect(tracking.isEmpty)
        return record
    }

    func open(_ path: String, _ flags: Int32) throws -> Int32 {
        let descriptor = Glibc.open(path, flags | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        return descriptor
    }

    @Test func eachCompletionFindsItsBytesInTheFileAndNothingIsReadMeanwhile() async throws {
        let bytes = Splice.pattern(Splice.total, seed: Splice.seed)
        let server = try Splice.server(sending: bytes)
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let descriptor = try open(scratch.file("f"), O_RDWR | O_CREAT)
        defer { close(descriptor) }
        let record = try await receive(from: server, target: { _ in descriptor }, fallback: descriptor) { result, offset, count in
            guard result.error == nil, result.moved == count else { return "moved \(result.moved) of \(count): \(String(describing: result.error))" }
            var written = [UInt8](repeating: 0, count: count)
            let read = pread(descriptor, &written, count, Int(offset))
            let expected = bytes[Int(offset)..<(Int(offset) + count)]
            return read == count && written.elementsEqual(expected) ? nil : "bytes at \(offset) not in the file when their write returned"
        }
        #expect(record.problems.isEmpty, "\(record.problems.prefix(5))")
        #expect(record.handedOff > 1)
        #expect(record.readBytes == 0, "every byte was spliced")
        #expect(Splice().contents(scratch.file("f")) == bytes)
    }

    @Test func aFailedWriteReportsItsErrorAndItsBytesNeverLandLater() async throws {
        let bytes = Splice.pattern(Splice.total, seed: Splice.seed)
        let server = try Splice.server(sending: bytes)
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let writable = try open(scratch.file("f"), O_RDWR | O_CREAT)
        defer { close(writable) }
        // The first hand-off goes to a descriptor that refuses writes (EBADF): it fails having moved nothing.
        let readOnly = try open(scratch.file("f"), O_RDONLY)
        defer { close(readOnly) }
        let firstCount = Atomic<Int>(0)
        let record = try await receive(from: server, target: { $0 == 1 ? readOnly : writable }, fallback: writable) { result, offset, count in
            if offset == 0 {
                firstCount.store(count, ordering: .relaxed)
                return result.error?.errno == EBADF && result.moved == 0 ? nil : "expected EBADF having moved nothing, got \(result)"
            }
            return result.error == nil && result.moved == count ? nil : "moved \(result.moved) of \(count): \(String(describing: result.error))"
        }
        #expect(record.problems.isEmpty, "\(record.problems.prefix(5))")
        #expect(record.failures.count == 1)
        let failed = firstCount.load(ordering: .relaxed)
        try #require(failed > 0)
        let file = Splice().contents(scratch.file("f"))
        #expect(file.count == Splice.total)
        #expect(file[..<failed].allSatisfy { $0 == 0 }, "the failed write's bytes were never written")
        #expect(Array(file[failed...]) == Array(bytes[failed...]), "the next hand-offs start in a clean pipe")
    }
}
