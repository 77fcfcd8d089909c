import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// A lying server against a download resumed from its journal: the `.part` holds bytes of one version of the
/// file, and every answer of the resumed run is held to the identity the journal recorded.
///
/// Each attack answers the resumed run's ranged requests (with `If-Range`) with a hand-made response,
/// usually carrying the bytes of *another* version of the file under headers that lie about it in one way.
/// The oracle, whatever Haul does: the download ends within the deadline; when it succeeds the file is
/// exactly one version — the old one or the new one, never the old bytes stitched to new ones; when it
/// fails nothing is under the final name and the error names the server. An attack may also require the
/// file or an error. Each runs with `--on-change fail` and `restart`.
@Suite(.serialized) struct ResumeRedTeamTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Honest = NetworkRedTeamTests.Honest
    typealias Resource = MisbehavingServer.Resource

    static let deadline: Duration = .seconds(30)
    static let size = 4 << 20
    static let old = Resource.pattern(size: size, seed: 35)
    /// Same length, every byte different, another strong ETag and a later date.
    static let new = old.otherVersion

    enum Expectation: Sendable {
        /// The right file (the response is valid, or a retry gets past it).
        case file
        /// One whole version or a clear error.
        case fileOrError
        /// A clear error with `--on-change fail` (the attack never stops, or the file changed).
        case error
    }

    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        var expectation: Expectation
        /// Attack only the first request of the resumed run (else every one of its requests).
        var onceOnly = false
        /// The new version when the attack serves it whole as another length than the old one's.
        var servedWhole: [UInt8]? = nil
        /// The response to a request of the resumed run, given the honest answers of both versions; nil: honest (old).
        var make: @Sendable (_ request: MisbehavingServer.ReceivedRequest, _ old: Honest, _ new: Honest) -> Behavior?
        var testDescription: String { name }
    }

    static func raw(_ bytes: [UInt8]) -> Behavior { .raw(bytes, ending: .keepAlive) }

    /// Only requests with `Range` (the resumed run's): a probe of a restart is answered honestly by the new version.
    static func ranged(_ make: @escaping @Sendable (Honest, Honest) -> Behavior?) -> @Sendable (MisbehavingServer.ReceivedRequest, Honest, Honest) -> Behavior? {
        { request, old, new in old.status == 206 ? make(old, new) : nil }
    }

    static let attacks: [Attack] = [
        Attack(name: "honest server (control)", expectation: .file) { _, _, _ in nil },
        Attack(name: "weak ETag where it was strong, new bytes", expectation: .error, make: ranged { _, n in
            raw(n.replacing("ETag", with: "W/" + old.etag!).replacing("Last-Modified", with: old.lastModified).response)
        }),
        Attack(name: "weak ETag where it was strong, same bytes", expectation: .fileOrError, make: ranged { o, _ in
            raw(o.replacing("ETag", with: "W/" + old.etag!).response)
        }),
        Attack(name: "same ETag, another Last-Modified, new bytes", expectation: .error, make: ranged { _, n in
            raw(n.replacing("ETag", with: old.etag).response)
        }),
        Attack(name: "same ETag, Last-Modified dropped, new bytes", expectation: .error, make: ranged { _, n in
            raw(n.replacing("ETag", with: old.etag).replacing("Last-Modified", with: nil).response)
        }),
        Attack(name: "no validators at all, new bytes", expectation: .error, make: ranged { _, n in
            raw(n.replacing("ETag", with: nil).replacing("Last-Modified", with: nil).response)
        }),
        Attack(name: "no validators at all, same bytes", expectation: .fileOrError, make: ranged { o, _ in
            raw(o.replacing("ETag", with: nil).replacing("Last-Modified", with: nil).response)
        }),
        Attack(name: "same validators, Content-Range total one more, new bytes", expectation: .error, make: ranged { o, n in
            raw(n.replacing("ETag", with: old.etag).replacing("Last-Modified", with: old.lastModified)
                .replacing("Content-Range", with: "bytes \(o.range.lowerBound)-\(o.range.upperBound - 1)/\(o.total + 1)").response)
        }),
        Attack(name: "200 to If-Range: the new file whole", expectation: .error) { request, o, n in
            guard o.status == 206 else { return nil }
            let whole = Honest(status: 200, fields: n.fields.filter { $0.0 != "Content-Range" }, body: new.bytes, range: 0..<n.total, total: n.total)
            return raw(whole.response)
        },
        Attack(name: "200 to If-Range without validators, new bytes", expectation: .error) { request, o, n in
            guard o.status == 206 else { return nil }
            let whole = Honest(status: 200, fields: [("Content-Type", "application/octet-stream")], body: new.bytes, range: 0..<n.total, total: n.total)
            return raw(whole.response)
        },
        Attack(name: "200 to If-Range with the same validators, a longer new file", expectation: .error, servedWhole: new.bytes + [1, 2, 3]) { request, o, n in
            guard o.status == 206 else { return nil }
            let whole = Honest(status: 200, fields: o.fields.filter { $0.0 != "Content-Range" }, body: new.bytes + [1, 2, 3], range: 0..<(n.total + 3), total: n.total + 3)
            return raw(whole.response)
        },
        Attack(name: "206 of another range than asked (one byte later), old bytes", expectation: .error, make: ranged { o, _ in
            var shifted = o
            let from = o.range.lowerBound + 1, to = min(o.range.upperBound + 1, o.total)
            shifted = shifted.replacing("Content-Range", with: "bytes \(from)-\(to - 1)/\(o.total)")
            shifted.body = Array(old.bytes[from..<to])
            return raw(shifted.response)
        }),
        Attack(name: "206 of another range than asked, once", expectation: .file, onceOnly: true, make: ranged { o, _ in
            var shifted = o.replacing("Content-Range", with: "bytes 0-\(o.range.count - 1)/\(o.total)")
            shifted.body = Array(old.bytes[0..<o.range.count])
            return raw(shifted.response)
        }),
        Attack(name: "416 with the journal's length", expectation: .error, make: ranged { o, _ in
            raw(Array("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(o.total)\r\nContent-Length: 0\r\n\r\n".utf8))
        }),
        Attack(name: "416 with another length", expectation: .error, make: ranged { o, _ in
            raw(Array("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(o.total / 2)\r\nContent-Length: 0\r\n\r\n".utf8))
        }),
        Attack(name: "416 without Content-Range", expectation: .error, make: ranged { _, _ in
            raw(Array("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n\r\n".utf8))
        }),
        Attack(name: "304 to the If-Range request", expectation: .error, make: ranged { o, _ in
            raw(Array("HTTP/1.1 304 Not Modified\r\nETag: \(old.etag!)\r\n\r\n".utf8))
        }),
        Attack(name: "redirect to another URL serving the new version", expectation: .error) { request, o, _ in
            request.target == "/f" && o.status == 206 ? .redirect(to: "/new") : nil
        },
        Attack(name: "redirect to another URL serving the same version", expectation: .file) { request, o, _ in
            request.target == "/f" && o.status == 206 ? .redirect(to: "/same") : nil
        },
        Attack(name: "Content-Encoding gzip on the 206 now", expectation: .error, make: ranged { o, _ in
            raw(o.adding("Content-Encoding", "gzip").response)
        }),
        Attack(name: "Content-Encoding gzip on the 206 once", expectation: .file, onceOnly: true, make: ranged { o, _ in
            raw(o.adding("Content-Encoding", "gzip").response)
        }),
        Attack(name: "multipart/byteranges 206", expectation: .error, make: ranged { o, _ in
            raw(o.replacing("Content-Type", with: "multipart/byteranges; boundary=X").response)
        }),
        Attack(name: "206 without Content-Range, new bytes", expectation: .error, make: ranged { o, n in
            raw(n.replacing("ETag", with: old.etag).replacing("Last-Modified", with: old.lastModified).replacing("Content-Range", with: nil).response)
        }),
        Attack(name: "chunked 206 that ends early, then honest", expectation: .file, onceOnly: true, make: ranged { o, _ in
            var short = o
            short.body = Array(o.body.prefix(o.body.count / 2))
            return .raw(short.chunkedResponse(chunk: 4096), ending: .close)
        }),
        Attack(name: "206 with a new strong ETag and the old date, new bytes", expectation: .error, make: ranged { _, n in
            raw(n.replacing("Last-Modified", with: old.lastModified).response)
        }),
        Attack(name: "206 with the old ETag and an ETag field twice", expectation: .error, make: ranged { o, _ in
            raw(o.adding("ETag", new.etag!).response)
        }),
    ]

    func options() -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 12, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        options.checkpointBytes = 64 << 10
        return options
    }

    /// A server of the old version at `/f` and `/same`, the new one at `/new`, 404 elsewhere.
    static func honest(_ request: MisbehavingServer.ReceivedRequest) -> (Honest, Honest)? {
        switch request.target {
        case "/f", "/same": (Honest.of(request, old), Honest.of(request, new))
        case "/new": (Honest.of(request, new), Honest.of(request, new))
        default: nil
        }
    }

    @Test(arguments: attacks, [ChangePolicy.fail, .restart])
    func resumeAgainstALyingServer(attack: Attack, policy: ChangePolicy) async throws {
        let server = try MisbehavingServer(resource: Self.old)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"

        // The first run: broken off after its first two requests, leaving `.part` and journal.
        server.setScript(MisbehavingServer.Script { $0.index >= 2 ? .closeMidBody(afterBytes: 100_000) : .normal })
        var first = options()
        first.retry = .none
        await #expect(throws: HaulError.self) { _ = try await HaulClient(options: first).download(server.url("/f"), to: path) }
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        #expect(state.durable.count > 0 && state.durable.count < Int64(Self.size), "the first run left part of the file")
        let before = server.requests.count

        let attacked = Once()
        server.setScript(MisbehavingServer.Script { request in
            guard let versions = Self.honest(request) else { return .status(404) }
            let (o, n) = versions
            if attack.onceOnly, !attacked.first() { return Self.raw(o.response) }
            return attack.make(request, o, n) ?? Self.raw(o.response)
        })
        let request = DownloadRequest(url: server.url("/f"), destination: .file(path), ifChangedOnServer: policy)
        let (result, task) = try await runToEnd(request, options: options(), within: Self.deadline)
        let asked = server.requests.dropFirst(before)
        #expect(asked.contains { $0.header("If-Range") != nil }, "\(attack.name): the resumed run asked with If-Range")
        let label = "\(attack.name) [\(policy)]"
        switch result {
        case .success(let done):
            let bytes = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
            let isOld = sameBytes(bytes, Self.old.bytes)
            // A whole file the server served as such (a 200 to a restart's probe) is the new version too.
            let isNew = sameBytes(bytes, attack.servedWhole ?? Self.new.bytes)
            #expect(isOld || isNew, "\(label): exit 0 with a WRONG file: \(bytes.count) bytes, \(mixedDescription(bytes))")
            #expect(done.bytes == Int64(bytes.count), "\(label): \(done.bytes) bytes reported for \(bytes.count)")
            #expect(attack.expectation != .error || policy == .restart, "\(label): expected an error, got the file")
            if isNew {
                #expect(policy == .restart, "\(label): the new version kept without --on-change restart")
                #expect(task.currentProgress.notices.contains { $0.contains("starting over") },
                        "\(label): a file fetched again says so: \(task.currentProgress.notices)")
            }
            print("[\(policy)] \(attack.name): file (\(isOld ? "old" : isNew ? "new" : "MIXED")), \(done.bytesRequested) bytes requested")
        case .failure(let error):
            #expect(attack.expectation != .file, "\(label): expected the file, got: \(error)")
            #expect(!FileManager.default.fileExists(atPath: path), "\(label): failed (\(error)) but left a file under the final name")
            let text = error.description
            #expect(text.contains("127.0.0.1") || text.contains("localhost"), "\(label): the error names no server: \(text)")
            print("[\(policy)] \(attack.name): \(text)")
        }
    }

    /// The lie no validator can show: the server keeps the strong ETag and date of the journal and serves the
    /// new bytes. Only a hash can tell; with a whole-file checksum or Metalink piece hashes the resumed download
    /// must never end with exit 0 and the old bytes stitched to new ones.
    @Test(arguments: [false, true])
    func sameStrongValidatorsNewBytesAreCaughtByHashes(pieces: Bool) async throws {
        let server = try MisbehavingServer(resource: Self.old)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        var request = DownloadRequest(url: server.url("/f"), destination: .file(path))
        if pieces {
            let length = 256 << 10
            let digests = try stride(from: 0, to: Self.size, by: length).map { try TestFiles.sha256(of: Array(Self.old.bytes[$0..<min($0 + length, Self.size)])) }
            request.pieceHashes = try PieceHashes(length: Int64(length), algorithm: .sha256, digests: digests)
        } else {
            request.checksum = Checksum(algorithm: .sha256, hex: try TestFiles.sha256(of: Self.old.bytes))
        }
        server.setScript(MisbehavingServer.Script { $0.index >= 2 ? .closeMidBody(afterBytes: 100_000) : .normal })
        var first = options()
        first.retry = .none
        await #expect(throws: HaulError.self) { _ = try await HaulClient(options: first).download(request) }
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"), "the first run left its journal")
        // The new bytes under the old validators.
        let lying = Resource(bytes: Self.new.bytes, etag: Self.old.etag, lastModified: Self.old.lastModified)
        server.setScript(.always(.serve(lying)))
        let (result, _) = try await runToEnd(request, options: options(), within: Self.deadline)
        switch result {
        case .success:
            let bytes = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
            Issue.record("exit 0 after a lie only a hash can show: old \(sameBytes(bytes, Self.old.bytes)), \(mixedDescription(bytes))")
        case .failure(let error):
            #expect(!FileManager.default.fileExists(atPath: path), "failed (\(error)) but left a file under the final name")
            // A whole-file hash names the `.part` and both digests (with mirrors no one server is to blame).
            #expect(error.description.contains("127.0.0.1") || error.description.contains(path + ".part: sha256"), "the error says what failed: \(error)")
            print("[hashes, pieces \(pieces)] \(error)")
        }
    }

    /// A journal whose only validator is a weak ETag (no date): no `If-Range` can carry it (RFC 9110 §13.1.5),
    /// and a weak tag does not promise the same bytes, so ranges under it may not be combined (§15.3.7.3). The
    /// server now serves other bytes under the same weak tag: the resumed download must not stitch them to the
    /// old ones.
    @Test func aJournalWithOnlyAWeakETagIsNotContinuedWithOtherBytes() async throws {
        let weakOld = Resource(bytes: Self.old.bytes, etag: "W/\"same\"", lastModified: nil)
        let weakNew = Resource(bytes: Self.new.bytes, etag: "W/\"same\"", lastModified: nil)
        let server = try MisbehavingServer(resource: weakOld)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        server.setScript(MisbehavingServer.Script { $0.index >= 2 ? .closeMidBody(afterBytes: 100_000) : .normal })
        var first = options()
        first.retry = .none
        await #expect(throws: HaulError.self) { _ = try await HaulClient(options: first).download(server.url("/f"), to: path) }
        #expect(FileManager.default.fileExists(atPath: path + ".part.haul"), "the first run left its journal")
        server.setScript(.always(.serve(weakNew)))
        let (result, task) = try await runToEnd(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options(), within: Self.deadline)
        switch result {
        case .success:
            let bytes = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
            #expect(sameBytes(bytes, Self.new.bytes), "exit 0 with a WRONG file: \(mixedDescription(bytes))")
            #expect(task.currentProgress.notices.contains { $0.contains("starting over") }, "said: \(task.currentProgress.notices)")
        case .failure(let error):
            #expect(!FileManager.default.fileExists(atPath: path), "failed (\(error)) but left a file")
        }
    }

    /// Where a file that is neither version agrees with each.
    func mixedDescription(_ bytes: [UInt8]) -> String {
        guard bytes.count == Self.size else { return "length differs" }
        var oldRun = 0, newRun = 0, other = 0
        for index in stride(from: 0, to: bytes.count, by: 4096) {
            if bytes[index] == Self.old.bytes[index] { oldRun += 1 } else if bytes[index] == Self.new.bytes[index] { newRun += 1 } else { other += 1 }
        }
        return "\(oldRun) sampled pages old, \(newRun) new, \(other) neither"
    }
}

/// True the first time only: an attack made once across the server's connections.
final class Once: Sendable {
    private let taken = Mutex(false)

    func first() -> Bool {
        taken.withLock { taken in
            defer { taken = true }
            return !taken
        }
    }
}
