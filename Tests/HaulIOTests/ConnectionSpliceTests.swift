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
        try LoopbackServer(behaviour: .scripted { fd in _ = sendAll(bytes, 0..<bytes.count, on: fd) })
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
        /// The error the stream ended with; nil when it ended cleanly.
        var failure: ConnectionError?
    }

    /// How far the reader has got in the stream, shared with a server script that paces itself by it.
    final class ReceivedOffset: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Reads the whole stream from `server` into the file at `path` (opened with `flags`), splicing at most
    /// `limit(offset)` bytes per read at stream offset `offset` and moving `move(count)` of each piped read at
    /// that offset; after each read, the new offset goes to `progress`.
    func receive(from server: LoopbackServer, into path: String, flags: Int32 = O_WRONLY | O_CREAT,
                 options: ConnectionOptions = ConnectionOptions(), limit: @escaping @Sendable (_ offset: Int64) -> Int64,
                 move: @escaping @Sendable (Int) -> Int = { $0 }, progress: ReceivedOffset? = nil) async throws -> Seen {
        print("ConnectionSpliceTests: seed \(Self.seed)")
        let descriptor = open(path, flags | O_CLOEXEC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let file = FileDescriptor(rawValue: descriptor)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options, on: loop)
        defer { connection.close() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Seen, Never>) in
            loop.execute {
                var seen = Seen()
                var offset: Int64 = 0
                connection.startReadingOnLoop(splicing: { limit(offset) }) { event in
                    switch event {
                    case .piped(let piped):
                        seen.piped.append(piped.count)
                        let allowed = limit(offset)
                        if piped.count > allowed { seen.overLimit.append("\(piped.count) > \(allowed)") }
                        do {
                            try piped.move(move(piped.count), into: file, at: offset)
                        } catch {
                            seen.overLimit.append("move failed: \(error)")
                        }
                        offset += Int64(piped.count)
                    case .bytes(let bytes):
                        seen.read += bytes.count
                        _ = pwrite(descriptor, bytes.baseAddress, bytes.count, Int(offset))
                        offset += Int64(bytes.count)
                    case .endOfStream:
                        continuation.resume(returning: seen)
                        return .stop
                    case .failed(let error):
                        seen.failure = error
                        continuation.resume(returning: seen)
                        return .stop
                    }
                    progress?.value.store(Int(offset), ordering: .releasing)
                    return .continueReading
                }
            }
        }
    }

    /// Sends `bytes[range]` on `fd`, all of it; false once the peer is gone.
    static func sendAll(_ bytes: [UInt8], _ range: Range<Int>, on fd: Int32) -> Bool {
        var sent = range.lowerBound
        while sent < range.upperBound {
            let n = bytes[sent..<range.upperBound].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// A server that sends `bytes` piece by piece (`pieces`, then the rest), each piece once the reader's
    /// `progress` shows every byte before it arrived, or once a deadline passed (which fails the test: `paced`
    /// hears whether the piece arrived and how many milliseconds the server waited for it).
    static func pacedServer(sending bytes: [UInt8], pieces: [Int], progress: ReceivedOffset,
                            paced: @escaping @Sendable (_ arrived: Bool, _ waitedMilliseconds: Int) -> Void) throws -> LoopbackServer {
        try LoopbackServer(behaviour: .scripted { fd in
            var offset = 0
            for piece in pieces {
                guard sendAll(bytes, offset..<(offset + piece), on: fd) else { return }
                offset += piece
                let start = MonotonicInstant.now()
                // Generous: it only decides how long a broken reader takes to fail the test.
                let deadline = start.advanced(by: .seconds(10))
                while progress.value.load(ordering: .acquiring) < offset, MonotonicInstant.now() < deadline { usleep(200) }
                let waited = Int((MonotonicInstant.now().nanoseconds - start.nanoseconds) / 1_000_000)
                paced(progress.value.load(ordering: .acquiring) >= offset, waited)
            }
            _ = sendAll(bytes, offset..<bytes.count, on: fd)
        })
    }

    @Test func splicedBytesLandAtTheirOffsetsWithinTheLimit() async throws {
        let bytes = Self.pattern(Self.total, seed: Self.seed)
        let server = try Self.server(sending: bytes)
        defer { server.stop() }
        let scratch = OutputFileScratch()
        let seen = try await receive(from: server, into: scratch.file("f"), limit: { _ in 100_000 })
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
        let seen = try await receive(from: server, into: scratch.file("f"), limit: { _ in 200_000 }) { count in
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
                                     limit: { _ in 1 << 20 })
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
        let progress = ReceivedOffset()
        let waitedFor = Atomic<Int>(0)
        // Each piece goes once the ones before it have arrived (or a deadline passed, failing the test).
        let server = try Self.pacedServer(sending: bytes, pieces: pieces, progress: progress) { arrived, _ in
            if arrived { waitedFor.add(1, ordering: .releasing) }
        }
        defer { server.stop() }
        let scratch = OutputFileScratch()
        var options = ConnectionOptions()
        options.timeouts.idle = .seconds(5)
        let total = Int64(Self.total)
        let seen = try await receive(from: server, into: scratch.file("f"), options: options, limit: { total - $0 }, progress: progress)
        #expect(seen.failure == nil, "\(seen.failure.map { "\($0)" } ?? "")")
        #expect(seen.overLimit.isEmpty, "\(seen.overLimit)")
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
        let progress = ReceivedOffset()
        let slowestWait = Atomic<Int>(0)
        let server = try Self.pacedServer(sending: bytes, pieces: [fast] + trickle + [readTail], progress: progress) { _, waited in
            if slowestWait.load(ordering: .acquiring) < waited { slowestWait.store(waited, ordering: .releasing) }
        }
        defer { server.stop() }
        let scratch = OutputFileScratch()
        var options = ConnectionOptions()
        options.timeouts.idle = .seconds(30)
        let spliceable = Int64(total - readTail)
        let seen = try await receive(from: server, into: scratch.file("f"), options: options, limit: { spliceable - $0 }, progress: progress)
        #expect(seen.failure == nil, "\(seen.failure.map { "\($0)" } ?? "")")
        #expect(seen.overLimit.isEmpty, "\(seen.overLimit)")
        #expect(seen.read == readTail, "the bytes past the spliceable part were read")
        // A piece left waiting for more bytes would wait for the idle timeout, 30 s (the server gives up at 10 s).
        #expect(slowestWait.load(ordering: .acquiring) < 5000, "slowest piece took \(slowestWait.load(ordering: .acquiring)) ms")
        #expect(contents(scratch.file("f")) == bytes)
    }
}
