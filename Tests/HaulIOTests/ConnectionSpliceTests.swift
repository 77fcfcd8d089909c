import Glibc
import Synchronization
import SystemPackage
import Testing
@testable import HaulIO

/// ``Connection/startReadingOnLoop(splicing:_:)``: bytes spliced socket → pipe → file land at the offsets the
/// handler gives, never more than it allowed per read, and bytes it leaves in the pipe are never written.
@Suite struct ConnectionSpliceTests {
    static let seed: UInt64 = 0x5_911CE
    static let total = 3 << 20

    /// `count` pseudo-random bytes from `seed` (SplitMix64).
    static func pattern(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        var bytes = [UInt8](repeating: 0, count: count)
        for index in stride(from: 0, to: count, by: 8) {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            for k in 0..<min(8, count - index) { bytes[index + k] = UInt8(truncatingIfNeeded: z >> (8 * k)) }
        }
        return bytes
    }

    /// A server that sends `bytes` on each connection and closes it.
    static func server(sending bytes: [UInt8]) throws -> LoopbackServer {
        try LoopbackServer(behaviour: .scripted { fd in
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        })
    }

    func contents(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "rb") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return bytes
    }

    /// What one read handler saw.
    struct Seen: Sendable {
        var piped: [Int] = []
        var read = 0
        var overLimit: [String] = []
    }

    /// Reads the whole stream from `server` into the file at `path` (opened with `flags`), splicing at most
    /// `limit` bytes per read and moving `move(count)` of each piped read at the stream offset.
    func receive(from server: LoopbackServer, into path: String, flags: Int32 = O_WRONLY | O_CREAT,
                 limit: Int64, move: @escaping @Sendable (Int) -> Int) async throws -> Seen {
        print("ConnectionSpliceTests: seed \(Self.seed)")
        let descriptor = open(path, flags | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let file = FileDescriptor(rawValue: descriptor)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { connection.close() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Seen, Never>) in
            loop.execute {
                var seen = Seen()
                var offset: Int64 = 0
                connection.startReadingOnLoop(splicing: { limit }) { event in
                    switch event {
                    case .piped(let piped):
                        seen.piped.append(piped.count)
                        if piped.count > limit { seen.overLimit.append("\(piped.count) > \(limit)") }
                        do {
                            try piped.move(move(piped.count), into: file, at: offset)
                        } catch {
                            seen.overLimit.append("move failed: \(error)")
                        }
                        offset += Int64(piped.count)
                        return .continueReading
                    case .bytes(let bytes):
                        seen.read += bytes.count
                        _ = pwrite(descriptor, bytes.baseAddress, bytes.count, Int(offset))
                        offset += Int64(bytes.count)
                        return .continueReading
                    case .endOfStream, .failed:
                        continuation.resume(returning: seen)
                        return .stop
                    }
                }
            }
        }
    }

    @Test func splicedBytesLandAtTheirOffsetsWithinTheLimit() async throws {
        let bytes = Self.pattern(Self.total, seed: Self.seed)
        let server = try Self.server(sending: bytes)
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let seen = try await receive(from: server, into: scratch.file("f"), limit: 100_000) { $0 }
        #expect(seen.overLimit.isEmpty, "\(seen.overLimit)")
        #expect(seen.read == 0, "every byte was spliced")
        #expect(seen.piped.reduce(0, +) == Self.total)
        #expect(contents(scratch.file("f")) == bytes)
    }

    @Test func bytesLeftInThePipeAreDiscardedNeverWrittenLater() async throws {
        let bytes = Self.pattern(Self.total, seed: Self.seed)
        let server = try Self.server(sending: bytes)
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let first = Mutex(true)
        // The first piped read has only 1000 of its bytes moved; the rest must vanish with the pipe.
        let seen = try await receive(from: server, into: scratch.file("f"), limit: 200_000) { count in
            first.withLock { isFirst in
                defer { isFirst = false }
                return isFirst ? min(1000, count) : count
            }
        }
        try #require(seen.piped.first.map { $0 > 1000 } == true, "the first splice moved more than 1000 bytes")
        let firstCount = seen.piped[0]
        let file = contents(scratch.file("f"))
        #expect(file.count == Self.total)
        #expect(Array(file[..<1000]) == Array(bytes[..<1000]))
        #expect(file[1000..<firstCount].allSatisfy { $0 == 0 }, "the bytes left in the pipe were never written")
        #expect(Array(file[firstCount...]) == Array(bytes[firstCount...]), "the next splices start clean")
    }

    @Test func aFileThatRefusesSpliceGetsTheBytesCopiedAndTheConnectionReads() async throws {
        let bytes = Self.pattern(Self.total, seed: Self.seed)
        let server = try Self.server(sending: bytes)
        defer { server.stop() }
        let scratch = OutputFileScratch()
        // splice into a file opened for appending is EINVAL; writes to it append, so order is offset here.
        let seen = try await receive(from: server, into: scratch.file("f"), flags: O_WRONLY | O_CREAT | O_APPEND,
                                     limit: 1 << 20) { $0 }
        #expect(seen.overLimit.isEmpty, "\(seen.overLimit)")
        #expect(seen.piped.count == 1, "one splice, refused by the file, then reads")
        #expect(seen.read == Self.total - seen.piped.reduce(0, +))
        #expect(contents(scratch.file("f")) == bytes)
    }

    /// A splice that takes less than asked sends the loop back to epoll: the bytes that come later, after the
    /// sender waited for the short piece to arrive, are reported and spliced, and nothing stalls.
    @Test func aShortSpliceWaitsForTheNextBytesWithoutStalling() async throws {
        let pieces = [2 << 20, 1000, 1, 4096]
        let bytes = Self.pattern(Self.total, seed: Self.seed)
        let received = Atomic<Int>(0)
        let waitedFor = Atomic<Int>(0)
        let server = try LoopbackServer(behaviour: .scripted { fd in
            func sendAll(_ range: Range<Int>) -> Bool {
                var sent = range.lowerBound
                while sent < range.upperBound {
                    let n = bytes[sent..<range.upperBound].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { return false }
                    sent += n
                }
                return true
            }
            // Each piece goes once the ones before it have arrived (or a deadline passed, failing the test).
            var offset = 0
            for piece in pieces {
                guard sendAll(offset..<(offset + piece)) else { return }
                offset += piece
                let deadline = MonotonicInstant.now().advanced(by: .seconds(10))
                while received.load(ordering: .acquiring) < offset, MonotonicInstant.now() < deadline { usleep(1000) }
                if received.load(ordering: .acquiring) >= offset { waitedFor.add(1, ordering: .releasing) }
            }
            _ = sendAll(offset..<bytes.count)
        })
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let descriptor = open(scratch.file("f"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let file = FileDescriptor(rawValue: descriptor)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = .seconds(5)
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options, on: loop)
        defer { connection.close() }
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<ConnectionError?, Never>) in
            loop.execute {
                var offset: Int64 = 0
                connection.startReadingOnLoop(splicing: { Int64(Self.total) - offset }) { event in
                    switch event {
                    case .piped(let piped):
                        try? piped.move(piped.count, into: file, at: offset)
                        offset += Int64(piped.count)
                    case .bytes(let chunk):
                        _ = pwrite(descriptor, chunk.baseAddress, chunk.count, Int(offset))
                        offset += Int64(chunk.count)
                    case .endOfStream:
                        continuation.resume(returning: nil)
                        return .stop
                    case .failed(let error):
                        continuation.resume(returning: error)
                        return .stop
                    }
                    received.store(Int(offset), ordering: .releasing)
                    return .continueReading
                }
            }
        }
        #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
        #expect(waitedFor.load(ordering: .acquiring) == pieces.count, "every piece arrived before the next was sent")
        #expect(contents(scratch.file("f")) == bytes)
    }

    /// A stream that starts fast (full pipes) and then trickles has each small piece taken promptly, not at the
    /// idle timeout; every byte lands where it belongs, and the bytes after the spliceable part are read into
    /// the buffer without waiting either. (A receive watermark, `SO_RCVLOWAT`, was tried on this path: this
    /// is the case it must not stall; docs/benchmarks.md, "Waking less often".)
    @Test func aFastStreamThatTurnsToATrickleIsReadPromptly() async throws {
        let fast = 2 << 20
        let trickle = Array(repeating: 700, count: 20)
        let readTail = 300
        let total = fast + trickle.reduce(0, +) + readTail
        let bytes = Self.pattern(total, seed: Self.seed)
        let received = Atomic<Int>(0)
        let slowestWait = Atomic<Int>(0)
        let server = try LoopbackServer(behaviour: .scripted { fd in
            func sendAll(_ range: Range<Int>) -> Bool {
                var sent = range.lowerBound
                while sent < range.upperBound {
                    let n = bytes[sent..<range.upperBound].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if n <= 0 { return false }
                    sent += n
                }
                return true
            }
            var offset = 0
            for piece in [fast] + trickle + [readTail] {
                guard sendAll(offset..<(offset + piece)) else { return }
                offset += piece
                let start = MonotonicInstant.now()
                let deadline = start.advanced(by: .seconds(10))
                while received.load(ordering: .acquiring) < offset, MonotonicInstant.now() < deadline { usleep(200) }
                let waited = Int((MonotonicInstant.now().nanoseconds - start.nanoseconds) / 1_000_000)
                if slowestWait.load(ordering: .acquiring) < waited { slowestWait.store(waited, ordering: .releasing) }
            }
        })
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let descriptor = open(scratch.file("f"), O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let file = FileDescriptor(rawValue: descriptor)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = .seconds(30)
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options, on: loop)
        defer { connection.close() }
        let spliceable = Int64(total - readTail)
        let (failure, readBytes) = await withCheckedContinuation {
            (continuation: CheckedContinuation<(ConnectionError?, Int), Never>) in
            loop.execute {
                var offset: Int64 = 0
                var read = 0
                connection.startReadingOnLoop(splicing: { spliceable - offset }) { event in
                    switch event {
                    case .piped(let piped):
                        try? piped.move(piped.count, into: file, at: offset)
                        offset += Int64(piped.count)
                    case .bytes(let chunk):
                        _ = pwrite(descriptor, chunk.baseAddress, chunk.count, Int(offset))
                        offset += Int64(chunk.count)
                        read += chunk.count
                    case .endOfStream:
                        continuation.resume(returning: (nil, read))
                        return .stop
                    case .failed(let error):
                        continuation.resume(returning: (error, read))
                        return .stop
                    }
                    received.store(Int(offset), ordering: .releasing)
                    return .continueReading
                }
            }
        }
        #expect(failure == nil, "\(failure.map { "\($0)" } ?? "")")
        #expect(readBytes == readTail, "the bytes past the spliceable part were read")
        // A piece left waiting for more bytes would wait for the idle timeout, 30 s.
        #expect(slowestWait.load(ordering: .acquiring) < 5000, "slowest piece took \(slowestWait.load(ordering: .acquiring)) ms")
        #expect(contents(scratch.file("f")) == bytes)
    }
}
