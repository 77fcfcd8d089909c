import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// What a 206's head says about its body — `multipart/byteranges` framing, a content coding — and a probe
/// whose range the server refuses, end to end against a scripted server: the exact file, or a clear error and
/// no file, never a file with MIME framing or coded bytes in it.
@Suite(.serialized) struct MediaTypeAndProbeTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Script = MisbehavingServer.Script
    typealias Framing = MisbehavingServer.Framing

    /// Larger than the probe's bounded range (4 MiB), so that ranged requests follow it.
    static let size = 6 << 20
    let resource = MisbehavingServer.Resource.pattern(size: MediaTypeAndProbeTests.size, seed: 22)
    /// Smaller than the probe's bounded range: webfs refuses `bytes=0-4194303` for it.
    let small = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 23)
    /// The download helpers (run under a deadline, compare files without printing them).
    let hostile = HostileServerTests()

    /// Downloads the server's `/f` into a fresh directory and hands the result and the path to `check`.
    func download(from server: MisbehavingServer, options: DownloadOptions? = nil,
                  _ check: (Result<DownloadResult, HaulError>, String) throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        // Held to the end: a directory released after its last use would go while the download writes into it.
        defer { directory.remove() }
        let path = directory.file("f")
        let result = try await hostile.run(DownloadRequest(url: server.url("/f"), destination: .file(path)),
                                           options: options ?? hostile.options())
        try check(result, path)
    }

    /// Few tries, so that a fault on every response ends soon.
    func fewTries() -> DownloadOptions {
        var options = hostile.options()
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(10), maxDelay: .milliseconds(20))
        return options
    }

    /// `behavior` for the first try of each distinct `Range` value (from request `from` on), correct after
    /// that; `sent` records the ranges that got it.
    static func firstTryOfEachRange(_ behavior: Behavior, from first: Int = 0, sent: Ranges) -> Script {
        let tries = HostileServerTests.TryCounter()
        return Script { request in
            guard request.index >= first, let range = request.rangeHeader, tries.next(range) == 0 else { return .normal }
            sent.add(range)
            return behavior
        }
    }

    /// `Range` values, recorded from the server's threads.
    final class Ranges: Sendable {
        private let values = Mutex<[String]>([])
        func add(_ range: String) { values.withLock { $0.append(range) } }
        var count: Int { values.withLock { $0.count } }
        /// How many were not the probe's (which asks from byte 0).
        var notFromZero: Int { values.withLock { $0.filter { !$0.hasPrefix("bytes=0-") }.count } }
    }

    /// Expects a clear error that is a faulty response whose detail contains `words`, naming the URL, and no file.
    func expectFaultyResponse(_ result: Result<DownloadResult, HaulError>, at path: String, mentioning words: String,
                              _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        switch result {
        case .success:
            Issue.record("\(what): expected a clear error, got a file: \(hostile.describe(path))", sourceLocation: sourceLocation)
        case .failure(let error):
            guard case .faultyResponse(let url, let detail) = error.reason else {
                Issue.record("\(what): expected a faulty response, got \(error)", sourceLocation: sourceLocation)
                return
            }
            #expect(url.hasSuffix("/f") && detail.lowercased().contains(words.lowercased()), "\(what): \(error)", sourceLocation: sourceLocation)
        }
        #expect(!FileManager.default.fileExists(atPath: path), "\(what): no file", sourceLocation: sourceLocation)
    }

    // MARK: multipart/byteranges

    /// The first try of every range (the probe's included) is a multipart 206 whose top-level Content-Range and
    /// length match the request: its framing would land in the file at the range's offset.
    @Test(arguments: [Framing.contentLength, .chunked, .closeDelimited])
    func aMultipartAnswerNowAndThenEndsWithTheExactFile(framing: Framing) async throws {
        let sent = Ranges()
        let script = Self.firstTryOfEachRange(Behavior.multipartByteranges().with { $0.framing = framing }, sent: sent)
        let server = try MisbehavingServer(resource: resource, script: script)
        defer { server.stop() }
        try await download(from: server) { result, path in
            switch result {
            case .success:
                hostile.expectFile(path, holds: resource.bytes, "multipart (\(framing)) on \(sent.count) first tries")
            case .failure(let error):
                Issue.record("multipart (\(framing)) on the first try of each range: expected the file, got \(error)")
            }
        }
        #expect(sent.count > sent.notFromZero && sent.notFromZero >= 1, "the probe and ranged requests were answered multipart")
    }

    static let multipartEverywhere: [(String, Framing, Bool)] = [
        ("multipart/byteranges; boundary=HAUL_SEPARATES_PARTS", .contentLength, true),
        ("Multipart/ByteRanges; BOUNDARY=\"HAUL_SEPARATES_PARTS\"", .chunked, true),
        ("multipart/byteranges", .closeDelimited, true),
        ("MULTIPART/BYTERANGES;charset=utf-8;boundary=HAUL_SEPARATES_PARTS", .contentLength, false),
        ("multipart/byteranges; boundary=\"HAUL_SEPARATES_PARTS", .chunked, false),
    ]

    /// Every 206 (or every one after a correct probe) is multipart, under odd case, a quoted boundary, no
    /// boundary, more parameters: a clear error, never a file.
    @Test(arguments: multipartEverywhere)
    func aMultipartAnswerEveryTimeIsAClearError(contentType: String, framing: Framing, onTheProbeToo: Bool) async throws {
        let multipart = Behavior.multipartByteranges(contentType: contentType).with { $0.framing = framing }
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            request.index == 0 && !onTheProbeToo ? .normal : multipart
        })
        defer { server.stop() }
        try await download(from: server, options: fewTries()) { result, path in
            expectFaultyResponse(result, at: path, mentioning: contentType, "\(contentType) (\(framing), probe \(onTheProbeToo))")
        }
    }

    // MARK: Content-Encoding

    /// After a correct probe, the first try of every range is `Content-Encoding: gzip` over bytes that are not
    /// the file's, at the length the head promises.
    @Test func aCodedRangeNowAndThenEndsWithTheExactFile() async throws {
        let sent = Ranges()
        let server = try MisbehavingServer(resource: resource, script: Self.firstTryOfEachRange(.contentEncoded("gzip"), from: 1, sent: sent))
        defer { server.stop() }
        try await download(from: server) { result, path in
            switch result {
            case .success:
                hostile.expectFile(path, holds: resource.bytes, "gzip on \(sent.count) first tries of ranges")
            case .failure(let error):
                Issue.record("gzip on the first try of each range: expected the file, got \(error)")
            }
        }
        #expect(sent.notFromZero >= 1, "ranged requests were answered in gzip")
    }

    @Test func aCodedRangeEveryTimeAfterTheProbeIsAClearError() async throws {
        let server = try MisbehavingServer(resource: resource, script: Script { $0.index == 0 ? .normal : .contentEncoded("gzip") })
        defer { server.stop() }
        try await download(from: server, options: fewTries()) { result, path in
            expectFaultyResponse(result, at: path, mentioning: "Content-Encoding \"gzip\"", "gzip on every range")
        }
    }

    /// Every 206 is coded, the plain GET's 200 is not: no range is taken over a coding, one plain GET is.
    @Test func aCodedProbeFallsBackToOnePlainGet() async throws {
        let server = try MisbehavingServer(resource: resource, script: Script { $0.rangeHeader == nil ? .normal : .contentEncoded("gzip") })
        defer { server.stop() }
        try await download(from: server) { result, path in
            switch result {
            case .success:
                hostile.expectFile(path, holds: resource.bytes)
            case .failure(let error):
                Issue.record("gzip on every range: expected the file from one plain GET, got \(error)")
            }
        }
        #expect(server.requests.map(\.rangeHeader) == ["bytes=0-4194303", nil])
    }

    // MARK: A refused probe

    /// webfs answers 400 to `bytes=0-4194303` for a file shorter than 4 MiB; others 416.
    @Test(arguments: [400, 416])
    func aBoundedProbeRefusedForASmallFileAsksOpenEnded(status: Int) async throws {
        let server = try MisbehavingServer(resource: small, script: .always(.refuseBoundedRangePastEnd(status: status)))
        defer { server.stop() }
        try await download(from: server) { result, path in
            switch result {
            case .success(let value):
                hostile.expectFile(path, holds: small.bytes)
                #expect(value.retries == 1, "the refusal counts as one retry")
            case .failure(let error):
                Issue.record("\(status) to the bounded probe of a small file: expected the file, got \(error)")
            }
        }
        #expect(server.requests.prefix(2).map(\.rangeHeader) == ["bytes=0-4194303", "bytes=0-"])
    }

    /// A refusal is an answer, not a failure: the probe falls back even when no retry is allowed.
    @Test func aRefusedProbeFallsBackWithoutRetries() async throws {
        let server = try MisbehavingServer(resource: small, script: .always(.refuseEveryRange(status: 400)))
        defer { server.stop() }
        var options = hostile.options()
        options.retry = .none
        try await download(from: server, options: options) { result, path in
            switch result {
            case .success:
                hostile.expectFile(path, holds: small.bytes)
            case .failure(let error):
                Issue.record("400 to every Range with no retries: expected the file, got \(error)")
            }
        }
    }

    /// Every `Range` refused, with one connection (open-ended probe) or several (bounded): one plain GET.
    @Test(arguments: [400, 416, 501], [1, 8])
    func aServerThatRefusesEveryRangeIsDownloadedWithOnePlainGet(status: Int, connections: Int) async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.refuseEveryRange(status: status)))
        defer { server.stop() }
        try await download(from: server, options: hostile.options(connections: connections)) { result, path in
            switch result {
            case .success(let value):
                hostile.expectFile(path, holds: resource.bytes)
                #expect(value.retries == (connections > 1 ? 2 : 1))
            case .failure(let error):
                Issue.record("\(status) to every Range (\(connections) connections): expected the file, got \(error)")
            }
        }
        let expected: [String?] = connections > 1 ? ["bytes=0-4194303", "bytes=0-", nil] : ["bytes=0-", nil]
        #expect(server.requests.map(\.rangeHeader) == expected)
    }

    /// Every form refused: the error names the URL and the status, after one request per form.
    @Test func aServerThatRefusesEveryFormFailsWithItsStatus() async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.status(400)))
        defer { server.stop() }
        try await download(from: server) { result, path in
            guard case .failure(let error) = result, case .httpStatus(400, _, let url) = error.reason else {
                Issue.record("expected HTTP 400, got \(result)")
                return
            }
            #expect(url == server.url("/f") && error.description.contains(server.url("/f")) && error.description.contains("400"), "\(error)")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
        #expect(server.requests.map(\.rangeHeader) == ["bytes=0-4194303", "bytes=0-", nil])
    }
}
