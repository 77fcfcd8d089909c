import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// A lying server against conditional downloads (``DownloadRequest/onlyIfChanged``, `-N`;
/// ``DownloadRequest/modifiedSince``, `-z`) and `HEAD` (``HaulClient/responseHeads(_:logger:)``).
///
/// The oracle: the download ends; on success the destination is exactly one version the server vouched for
/// (the local file kept only after a `304` that can be believed, else the served file whole); on failure the
/// local file is untouched and the error names the server.
@Suite(.serialized) struct ConditionalRedTeamTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Honest = NetworkRedTeamTests.Honest
    typealias Resource = MisbehavingServer.Resource

    static let deadline: Duration = .seconds(30)
    static let old = Resource.pattern(size: 3000, seed: 36)
    static let new = old.otherVersion

    func options() -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 6, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        return options
    }

    static func raw(_ text: String, body: [UInt8] = []) -> Behavior { .raw(Array(text.utf8) + body, ending: .keepAlive) }

    enum Outcome: Sendable { case keepsOld, getsNew, keepsOldOrError, newOrError, error }

    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        var outcome: Outcome
        /// The answer to the conditional request, the server holding the new version (nil: honest).
        var make: @Sendable (MisbehavingServer.ReceivedRequest) -> Behavior?
        var testDescription: String { name }
    }

    static let attacks: [Attack] = [
        Attack(name: "honest 200 of the new version (control)", outcome: .getsNew) { _ in nil },
        Attack(name: "honest 304 (control)", outcome: .keepsOld) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: \(old.etag!)\r\n\r\n")
        },
        Attack(name: "304 with the file's Content-Length (control)", outcome: .keepsOld) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: \(old.etag!)\r\nContent-Length: \(old.bytes.count)\r\n\r\n")
        },
        // Its Content-Length (10) is not the file's: another file, fetched again.
        Attack(name: "304 with a 10-byte body", outcome: .newOrError) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: \(old.etag!)\r\nContent-Length: 10\r\n\r\n", body: Array("0123456789".utf8))
        },
        Attack(name: "304 with a chunked body", outcome: .keepsOldOrError) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: \(old.etag!)\r\nTransfer-Encoding: chunked\r\n\r\n", body: Array("5\r\nEVIL!\r\n0\r\n\r\n".utf8))
        },
        Attack(name: "304 carrying another ETag than the one asked about", outcome: .newOrError) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: \(new.etag!)\r\n\r\n")
        },
        Attack(name: "304 with a Content-Length other than the local file's", outcome: .newOrError) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: \(old.etag!)\r\nContent-Length: \(old.bytes.count + 1000)\r\n\r\n")
        },
        Attack(name: "304 with a weak form of the ETag asked about", outcome: .keepsOldOrError) { _ in
            raw("HTTP/1.1 304 Not Modified\r\nETag: W/\(old.etag!)\r\n\r\n")
        },
        Attack(name: "200 with an older Last-Modified", outcome: .getsNew) { request in
            Honest.of(request, new).replacing("Last-Modified", with: "Mon, 01 Jan 2001 00:00:00 GMT").response.asRaw
        },
        Attack(name: "200 with Last-Modified in the future", outcome: .getsNew) { request in
            Honest.of(request, new).replacing("Last-Modified", with: "Fri, 01 Jan 2100 00:00:00 GMT").response.asRaw
        },
        Attack(name: "200 with an unparseable Last-Modified", outcome: .getsNew) { request in
            Honest.of(request, new).replacing("Last-Modified", with: "yesterday-ish").response.asRaw
        },
    ]

    /// A file downloaded once (validators stored), the server then holding the new version and answering the
    /// next, conditional request as `attack` says; then a plain download of another file on the same client
    /// (a 304's leftover bytes must not become it).
    @Test(arguments: attacks)
    func conditionalDownloadAgainstALyingServer(attack: Attack) async throws {
        let server = try MisbehavingServer(resource: Self.old)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let client = try HaulClient(options: options())
        _ = try await client.download(DownloadRequest(url: server.url("/f"), destination: .file(path)))
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), Self.old.bytes))

        let before = server.requests.count
        let attacked = Once()
        server.setScript(MisbehavingServer.Script { request in
            if request.target == "/other" { return .serve(Self.old) }
            if !attacked.first() { return .serve(Self.new) }
            return attack.make(request) ?? .serve(Self.new)
        })
        var request = DownloadRequest(url: server.url("/f"), destination: .file(path))
        request.onlyIfChanged = true
        let task = client.start(request)
        guard let result = await outcomeWithin(Self.deadline, of: task) else {
            Issue.record("\(attack.name): did not end within \(Self.deadline)")
            await client.shutdown()
            return
        }
        let first = server.requests.dropFirst(before).first
        #expect(first?.header("If-None-Match") == Self.old.etag, "\(attack.name): the request asked about the stored ETag")
        let bytes = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
        let isOld = sameBytes(bytes, Self.old.bytes), isNew = sameBytes(bytes, Self.new.bytes)
        switch result {
        case .success(let done):
            switch attack.outcome {
            case .keepsOld, .keepsOldOrError:
                #expect(done.upToDate && isOld, "\(attack.name): expected the file kept, up to date: upToDate \(done.upToDate), old \(isOld), new \(isNew)")
            case .getsNew, .newOrError:
                #expect(!done.upToDate && isNew, "\(attack.name): exit 0 with a WRONG file: upToDate \(done.upToDate), old \(isOld), new \(isNew)")
            case .error:
                Issue.record("\(attack.name): expected an error, got upToDate \(done.upToDate), old \(isOld)")
            }
            print("\(attack.name): \(done.upToDate ? "up to date" : "downloaded") (\(isOld ? "old" : isNew ? "new" : "WRONG"))")
        case .failure(let error):
            #expect(attack.outcome != .keepsOld && attack.outcome != .getsNew, "\(attack.name): expected success, got \(error)")
            #expect(isOld, "\(attack.name): failed but the local file changed")
            #expect(error.description.contains("127.0.0.1"), "\(attack.name): the error names no server: \(error)")
            print("\(attack.name): \(error)")
        }
        // The same client's next download (its pool's connection, maybe the one the attack answered on).
        let other = directory + "/other"
        let next = client.start(DownloadRequest(url: server.url("/other"), destination: .file(other)))
        if case .success? = await outcomeWithin(Self.deadline, of: next) {
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: other)), Self.old.bytes), "\(attack.name): the next download got WRONG bytes")
        } else {
            Issue.record("\(attack.name): the next download on the same client failed")
        }
        await client.shutdown()
    }

    /// A `304` to a request that asked no condition (no file there) is a lie: an error, and no file appears.
    @Test func a304ToAnUnconditionalRequestLeavesNoFile() async throws {
        let server = try MisbehavingServer(resource: Self.old, script: .always(Self.raw("HTTP/1.1 304 Not Modified\r\nETag: \(Self.old.etag!)\r\n\r\n")))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        for conditional in [false, true] {
            var request = DownloadRequest(url: server.url("/f"), destination: .file(path))
            request.onlyIfChanged = conditional
            let (result, _) = try await runToEnd(request, options: options(), within: Self.deadline)
            guard case .failure(let error) = result else { Issue.record("a 304 nobody asked for made a download succeed"); continue }
            #expect(!FileManager.default.fileExists(atPath: path), "no file after \(error)")
            #expect(!FileManager.default.fileExists(atPath: path + ".part"), "no .part after \(error)")
            #expect(error.description.contains("304") && error.description.contains("127.0.0.1"), "\(error)")
        }
    }

    /// `-z DATE` against a 304 with a body: up to date, nothing written; the leftover bytes are no next file.
    @Test func timeConditionWithA304CarryingABodyWritesNothing() async throws {
        let script = MisbehavingServer.Script { request in
            request.target == "/f"
                ? Self.raw("HTTP/1.1 304 Not Modified\r\nContent-Length: 38\r\n\r\n", body: Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n".utf8))
                : .serve(Self.old)
        }
        let server = try MisbehavingServer(resource: Self.old, script: script)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options())
        var request = DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f"))
        request.modifiedSince = HTTPDate(secondsSinceEpoch: 1_000_000_000)
        let done = try await client.download(request)
        #expect(done.upToDate)
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
        _ = try await client.download(DownloadRequest(url: server.url("/g"), destination: .file(directory + "/g")))
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/g")), Self.old.bytes), "the next download is its own file")
        await client.shutdown()
    }

    /// `HEAD` answered with a body (whose bytes are a response), then downloads on the same client: the
    /// heads are the server's, the files their own bytes.
    @Test(arguments: [false, true])
    func headWithABodyThenDownloadsOnTheSameClient(lengthsDiffer: Bool) async throws {
        let evil = Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!".utf8)
        let script = MisbehavingServer.Script { request in
            guard request.method == "HEAD" else { return .serve(Self.old) }
            let length = lengthsDiffer ? Self.old.bytes.count * 2 : evil.count
            return Self.raw("HTTP/1.1 200 OK\r\nETag: \(Self.old.etag!)\r\nContent-Length: \(length)\r\n\r\n", body: evil)
        }
        let server = try MisbehavingServer(resource: Self.old, script: script)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options())
        for index in 0..<4 {
            let heads = try await client.responseHeads(DownloadRequest(url: server.url("/f"), destination: .directory(directory)))
            #expect(heads.count == 1 && heads.last?.status == 200)
            let path = directory + "/f\(index)"
            let task = client.start(DownloadRequest(url: server.url("/f"), destination: .file(path)))
            guard let result = await outcomeWithin(Self.deadline, of: task) else { Issue.record("did not end"); break }
            switch result {
            case .success:
                #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), Self.old.bytes), "exit 0 with a WRONG file after a HEAD with a body")
            case .failure(let error):
                Issue.record("a retry on a new connection gets the file: \(error)")
            }
        }
        await client.shutdown()
    }
}

extension Array where Element == UInt8 {
    var asRaw: MisbehavingServer.Behavior { .raw(self, ending: .keepAlive) }
}
