import Foundation
import Glibc
import HaulJournal
import HaulTestSupport
import Testing

/// Piece hashes and `Repr-Digest` through `haul`, against real servers: nginx as the good mirror and the
/// misbehaving server as one that serves wrong bytes for a piece, or a wrong `Repr-Digest`.
@Suite(.serialized) struct PieceHashesCLITests {
    let fixture = CLIFixture.shared
    static let mib = 1 << 20

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-pieces-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func haul(_ arguments: [String], in directory: String) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync"] + arguments, in: directory, timeout: 60)
    }

    /// A one-file Metalink for `bytes` (sha-256 of the file and of each `pieceLength` piece) with `urls` in order of preference.
    func document(name: String, bytes: [UInt8], pieceLength: Int, urls: [String]) throws -> String {
        var pieces = ""
        for start in stride(from: 0, to: bytes.count, by: pieceLength) {
            pieces += "<hash>\(try TestFiles.sha256(of: Array(bytes[start..<min(start + pieceLength, bytes.count)])))</hash>\n"
        }
        let links = urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined(separator: "\n")
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="\(name)">
                <size>\(bytes.count)</size>
                <hash type="sha-256">\(try TestFiles.sha256(of: bytes))</hash>
                <pieces length="\(pieceLength)" type="sha-256">
                \(pieces)
                </pieces>
                \(links)
              </file>
            </metalink>
            """
    }

    /// How often each byte of `0..<count` was asked for by `ranges` (inclusive first-last pairs): the bytes
    /// asked for `n` times, as half-open ranges, for each `n` that occurs.
    func coverage(_ ranges: [(Int, Int)], count: Int) -> [Int: [Range<Int>]] {
        var edges: [(Int, Int)] = []
        for (first, last) in ranges { edges += [(first, 1), (last + 1, -1)] }
        edges.append((0, 0))
        edges.append((count, 0))
        edges.sort { $0.0 < $1.0 }
        var result: [Int: [Range<Int>]] = [:]
        var depth = 0, previous = 0
        for (offset, step) in edges {
            if offset > previous { result[depth, default: []].append(previous..<offset) }
            depth += step
            previous = offset
        }
        return result.mapValues { $0.reduce(into: []) { merged, range in
            if let last = merged.last, last.upperBound == range.lowerBound { merged[merged.count - 1] = last.lowerBound..<range.upperBound } else { merged.append(range) }
        } }
    }

    static func bounds(_ range: String?) -> (Int, Int)? {
        guard let range, range.hasPrefix("bytes="), case let parts = range.dropFirst(6).split(separator: "-"), parts.count == 2,
              let first = Int(parts[0]), let last = Int(parts[1]) else { return nil }
        return (first, last)
    }

    @Test func aMirrorServingWrongBytesCostsOnlyItsPieceAndIsNamed() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let size = 8 * Self.mib
        let bytes = TestFiles.bytes(count: size, seed: 2501)
        let name = "pieces-\(UUID().uuidString).bin"
        try Data(bytes).write(to: URL(fileURLWithPath: fixture.data + "/" + name))
        defer { try? FileManager.default.removeItem(atPath: fixture.data + "/" + name) }
        // The mirror's copy is wrong in the last piece only (7 MiB..<8 MiB): two bytes flipped.
        var wrong = bytes
        wrong[7 * Self.mib + 100] ^= 0xFF
        wrong[size - 1] ^= 0x01
        let liar = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: wrong, etag: "\"liar\""))
        defer { liar.stop() }
        let meta4 = directory + "/f.meta4"
        try document(name: "f.bin", bytes: bytes, pieceLength: Self.mib, urls: [fixture.nginx.url("/" + name), liar.url("/f.bin")])
            .write(toFile: meta4, atomically: true, encoding: .utf8)

        // Two connections and segments of at least 1 MiB: nginx gets the first half, the liar the second.
        let run = try haul(["-M", meta4, "-d", directory + "/out", "-c", "2", "--min-segment", "1M"], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/out/f.bin") == TestFiles.sha256(of: bytes), "the right file")
        #expect(run.errorText.contains("piece 7 (bytes 7340032-8388607) failed its sha256 check"), "\(run.errorText)")
        #expect(run.errorText.contains("dropping \(liar.url("/f.bin")) for this download"), "the bad mirror is named: \(run.errorText)")

        // Every byte asked for once — but the bad piece, twice: once from the liar, once more from nginx.
        // (nginx's first request is the probe, whose answer the mirror check abandons; the liar's first is that check.)
        let asked = { (log: [AccessLogEntry]) in
            log.filter { $0.target == "/" + name }.dropFirst().compactMap { Self.bounds($0.range) }
                + liar.requests.dropFirst().compactMap { Self.bounds($0.rangeHeader) }
        }
        // nginx logs a request when it finalizes it, a moment after haul has the last byte: its lines are waited
        // for until they cover the file (or the deadline passes and the checks below say what is missing).
        let fromNginx = fixture.nginx.accessLog(waitingUntil: { coverage(asked($0), count: size)[0] == nil })
        #expect(liar.requests.first?.rangeHeader == "bytes=0-0")
        let counts = coverage(asked(fromNginx), count: size)
        #expect(counts[0] == nil, "every byte was asked for: \(counts)")
        #expect(counts[2] == [7 * Self.mib..<size], "only the bad piece twice: \(counts)")
        #expect(counts.keys.allSatisfy { $0 <= 2 }, "\(counts)")
        #expect(fromNginx.contains { $0.range == "bytes=7340032-8388607" }, "the piece alone was fetched again from nginx")
    }

    /// A run without piece hashes took wrong bytes into piece 1 and was killed; the run with the Metalink
    /// resumes its journal but does not trust a piece the journal does not record as verified: piece 1 is
    /// hashed, fails, and is fetched again — alone — and the file comes out right.
    @Test func aResumeAfterAKillDoesNotTrustUnverifiedPieces() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let size = 8 * Self.mib
        let bytes = TestFiles.bytes(count: size, seed: 2504)
        var wrong = bytes
        wrong[Self.mib + 5] ^= 0xFF
        let server = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: wrong, etag: "\"v1\""))
        defer { server.stop() }
        server.hold(afterBodyBytes: 3 * Self.mib)
        let output = directory + "/out/f.bin"
        try FileManager.default.createDirectory(atPath: directory + "/out", withIntermediateDirectories: true)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        process.arguments = ["--no-sync", "-c", "1", "--checkpoint-bytes", "1M", "-o", output, server.url("/f.bin")]
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        // Killed once its journal holds the first 3 MiB (pieces 0 to 2, the wrong piece 1 among them).
        let durable = poll(within: 30, reading: { () -> Int64 in
            guard let image = FileManager.default.contents(atPath: output + ".part.haul"),
                  let state = try? JournalCodec.decodeFile(Array(image)) else { return 0 }
            return state.durable.contains(0..<Int64(3 * Self.mib)) ? 3 * Int64(Self.mib) : 0
        }, until: { $0 > 0 })
        #expect(durable > 0, "the journal never recorded 3 MiB")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(FileManager.default.fileExists(atPath: output + ".part"))

        // The server's copy is right now (the wrong bytes came from a fault on the way, say), with the same ETag.
        let before = server.requests.count
        server.setResource(MisbehavingServer.Resource(bytes: bytes, etag: "\"v1\""))
        server.release()
        let meta4 = directory + "/f.meta4"
        try document(name: "f.bin", bytes: bytes, pieceLength: Self.mib, urls: [server.url("/f.bin")])
            .write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try haul(["-M", meta4, "-d", directory + "/out", "-c", "1"], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: output) == TestFiles.sha256(of: bytes), "the right file, not the killed run's bytes")
        #expect(run.errorText.contains("piece 1 (bytes 1048576-2097151) failed its sha256 check: fetching it again"), "\(run.errorText)")
        let asked = server.requests.dropFirst(before).compactMap { Self.bounds($0.rangeHeader) }
        #expect(asked.contains { $0 == (Self.mib, 2 * Self.mib - 1) }, "piece 1 fetched again: \(asked)")
        #expect(!asked.contains { $0.0 < Self.mib || ($0.0 < 3 * Self.mib && $0.1 >= 2 * Self.mib) },
                "pieces 0 and 2 were verified from the file, not fetched again: \(asked)")
    }

    @Test func aReprDigestMismatchFailsNamingTheFieldAndKeepsThePart() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = TestFiles.bytes(count: 300_000, seed: 2502)
        // The sha-256 of other bytes, as a Byte Sequence; sha-512 of the right ones would pass, so only sha-256 is sent.
        let wrong = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
        let server = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: bytes), script: .always(.field("Repr-Digest", wrong)))
        defer { server.stop() }
        let run = try haul(["-o", directory + "/r.bin", server.url("/r.bin")], in: directory)
        #expect(run.exitStatus == 8, "the checksum-mismatch exit status: \(run.errorText)")
        #expect(run.errorText.contains("Repr-Digest field from \(server.url("/r.bin"))"), "\(run.errorText)")
        #expect(run.errorText.contains("sha-256 is \(try TestFiles.sha256(of: bytes))"), "\(run.errorText)")
        #expect(FileManager.default.fileExists(atPath: directory + "/r.bin.part"), "the .part is kept, as for a checksum mismatch")
        #expect(!FileManager.default.fileExists(atPath: directory + "/r.bin"))
    }

    @Test func aMatchingReprDigestAndUnknownAlgorithmsPass() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = TestFiles.bytes(count: 200_000, seed: 2503)
        let digest = try TestFiles.sha256(of: bytes)
        var raw: [UInt8] = []
        var index = digest.startIndex
        while index < digest.endIndex {
            let next = digest.index(index, offsetBy: 2)
            raw.append(UInt8(digest[index..<next], radix: 16)!)
            index = next
        }
        let field = "unixsum=:AAAA:, sha-256=:\(Data(raw).base64EncodedString()):"
        let server = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: bytes), script: .always(.field("Repr-Digest", field)))
        defer { server.stop() }
        let run = try haul(["-o", directory + "/ok.bin", server.url("/ok.bin")], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/ok.bin") == digest)
    }
}
