import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// An nginx of the suite's own (its access log counts only this suite's requests), with small files and one
/// large enough that several connections share it (the probe asks for 4 MiB).
final class MemoryFixture: Sendable {
    static let shared: MemoryFixture = try! MemoryFixture()

    let nginx: NginxServer
    let data: String
    static let smallSize = 100_000
    static let shared10M = (path: "/shared.bin", size: 10 << 20, seed: UInt64(31))

    init() throws {
        data = try scratchDirectory()
        RunScopedDirectories.removeAtExit(data)
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        configuration.enableTLS = false
        nginx = try NginxServer(configuration: configuration)
        for index in 0..<4 {
            try TestFiles.create(at: data + "/small-\(index).bin", size: Self.smallSize + index, seed: UInt64(index))
        }
        try TestFiles.create(at: data + Self.shared10M.path, size: Self.shared10M.size, seed: Self.shared10M.seed)
    }

    /// The bytes of `/small-INDEX.bin`.
    static func small(_ index: Int) -> [UInt8] { TestFiles.bytes(count: smallSize + index, seed: UInt64(index)) }
}

/// Downloads kept in memory (``DownloadRequest/Destination/memory(limit:)``): the bytes are the resource's,
/// over one connection or several, checked by a checksum, and never more than the limit — whatever the
/// server announces, or fails to.
@Suite(.serialized) struct MemoryDestinationTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Script = MisbehavingServer.Script

    let fixture = MemoryFixture.shared

    /// Generous limit for any one download here, so that no test can hang the run.
    static let deadline: Duration = .seconds(120)

    func options(connections: Int = 8) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(5), maxDelay: .milliseconds(50))
        return options
    }

    /// For a download the server stalls until the test has acted: its connection waits for the test rather
    /// than time out. (With the 30 s idle default, a test the machine kept from running that long saw the stall
    /// end in a retry that finished the download before the pause or cancel it was to meet.)
    func stalledOptions() -> DownloadOptions {
        var options = options(connections: 1)
        options.timeouts.idle = .seconds(600)
        options.lowSpeedLimit = nil
        return options
    }

    /// Runs `request` to its end within the deadline, with the task (for its last progress).
    func run(_ request: DownloadRequest, options: DownloadOptions) async throws -> (Result<DownloadResult, HaulError>, DownloadTask) {
        try await runToEnd(request, options: options, within: Self.deadline)
    }

    /// The error of a download that must fail with ``HaulError/Reason/responseTooLarge(url:limit:length:)``.
    func tooLarge(_ result: Result<DownloadResult, HaulError>, sourceLocation: SourceLocation = #_sourceLocation)
        -> (limit: Int, length: Int64?, error: HaulError)? {
        switch result {
        case .success(let value):
            Issue.record("expected the download to be refused, it succeeded with \(value.bytes) bytes", sourceLocation: sourceLocation)
        case .failure(let error):
            if case .responseTooLarge(_, let limit, let length) = error.reason { return (limit, length, error) }
            Issue.record("expected responseTooLarge, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    // MARK: Against nginx

    @Test(arguments: [1, 8])
    func aSmallFileIntoMemoryIsTheFile(connections: Int) async throws {
        let path = "/small-2.bin"
        let source = MemoryFixture.small(2)
        let (result, _) = try await run(DownloadRequest(url: fixture.nginx.url(path), destination: .memory(limit: 1 << 20)),
                                        options: options(connections: connections))
        let value = try result.get()
        let body = try #require(value.body)
        #expect(sameBytes(body, source), "\(body.count) bytes")
        #expect(value.bytes == Int64(source.count))
        #expect(value.path.isEmpty, "nothing on disk has a path")
    }

    @Test func severalConnectionsFillOneBuffer() async throws {
        let file = MemoryFixture.shared10M
        // Durable mode, the default: a download into memory has no disk to sync, and must not try.
        var durable = options(connections: 8)
        durable.synchronizesToDisk = true
        let (result, _) = try await run(DownloadRequest(url: fixture.nginx.url(file.path), destination: .memory(limit: file.size)),
                                        options: durable)
        let value = try result.get()
        #expect(value.connections > 1, "the file was shared between connections")
        #expect(value.bytesRequested == Int64(file.size), "no byte requested twice")
        let body = try #require(value.body)
        #expect(sameBytes(body, TestFiles.bytes(count: file.size, seed: file.seed)), "\(body.count) bytes")
    }

    @Test func aLengthOverTheLimitIsRefusedBeforeAnyBodyIsKept() async throws {
        // A file no other test of the suite asks for, so that the access log's entries for it are this test's.
        let path = "/small-0.bin"
        let (result, task) = try await run(DownloadRequest(url: fixture.nginx.url(path), destination: .memory(limit: 99_999)),
                                           options: options())
        guard let refused = tooLarge(result) else { return }
        #expect(refused.limit == 99_999 && refused.length == 100_000)
        #expect(refused.error.attempts == 1, "the resource will not shrink: not tried again")
        #expect(refused.error.description.contains(fixture.nginx.url(path)))
        #expect(task.currentProgress.bytesDone == 0 && task.currentProgress.completedRanges.isEmpty)
        // One request, the probe: no other connection was opened for a download refused at its first head.
        let entries = poll(reading: { fixture.nginx.accessLog().filter { $0.target == path } }, until: { !$0.isEmpty })
        #expect(entries.map(\.range) == ["bytes=0-4194303"])
    }

    @Test func aLengthOfExactlyTheLimitIsKept() async throws {
        let bytes = try await HaulClient(options: options()).bytes(from: fixture.nginx.url("/small-1.bin"), limit: 100_001)
        #expect(sameBytes(bytes, MemoryFixture.small(1)), "\(bytes.count) bytes")
    }

    @Test func aMemoryDownloadPassesItsChecksumAndFailsAWrongOne() async throws {
        let path = "/small-3.bin"
        let right = try Checksum("sha256=" + TestFiles.sha256(ofFile: fixture.data + path))
        let client = try HaulClient(options: options())
        let body = try await client.bytes(from: fixture.nginx.url(path), checksum: right)
        #expect(sameBytes(body, MemoryFixture.small(3)))

        let wrong = try Checksum("sha256=" + String(repeating: "0", count: 64))
        await #expect(throws: HaulError.self) { _ = try await client.bytes(from: fixture.nginx.url(path), checksum: wrong) }
        do {
            _ = try await client.bytes(from: fixture.nginx.url(path), checksum: wrong)
        } catch {
            guard case .checksumMismatch(let label, let expected, let actual) = error.reason else {
                Issue.record("expected a checksum mismatch, got \(error)"); return
            }
            #expect(expected == wrong && actual == right.hex)
            #expect(label.contains("in memory"), "no .part path for a download without one: \(label)")
        }
    }

    @Test func aNegativeLimitIsAnInvalidDestination() async throws {
        let (result, _) = try await run(DownloadRequest(url: fixture.nginx.url("/small-3.bin"), destination: .memory(limit: -1)),
                                        options: options())
        guard case .failure(let error) = result, case .invalidDestination = error.reason else {
            Issue.record("expected invalidDestination, got \(result)"); return
        }
    }

    // MARK: Against a server that lies

    let resource = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 23)

    /// A body without a length (close-delimited or chunked, from a server ignoring ranges) is stopped as soon
    /// as it passes the limit: the download fails with the clear error, never with more than the limit kept.
    @Test(arguments: [MisbehavingServer.Framing.closeDelimited, .chunked])
    func anUnannouncedBodyPastTheLimitIsStoppedThere(framing: MisbehavingServer.Framing) async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(Behavior.ignoreRange.with { $0.framing = framing }))
        defer { server.stop() }
        let limit = 300_000
        let (result, task) = try await run(DownloadRequest(url: server.url("/f"), destination: .memory(limit: limit)), options: options())
        guard let refused = tooLarge(result) else { return }
        #expect(refused.limit == limit && refused.length == nil)
        #expect(refused.error.attempts == 1)
        #expect(task.currentProgress.bytesDone <= Int64(limit), "kept \(task.currentProgress.bytesDone) bytes")
        #expect(server.requests.count == 1, "not fetched again: it would be as large the next time")
    }

    /// The same body under the limit is the resource: a missing length is no fault in itself.
    @Test(arguments: [MisbehavingServer.Framing.closeDelimited, .chunked])
    func anUnannouncedBodyUnderTheLimitIsKept(framing: MisbehavingServer.Framing) async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(Behavior.ignoreRange.with { $0.framing = framing }))
        defer { server.stop() }
        let (result, _) = try await run(DownloadRequest(url: server.url("/f"), destination: .memory(limit: resource.bytes.count)),
                                        options: options())
        let body = try #require(try result.get().body)
        #expect(sameBytes(body, resource.bytes), "\(body.count) bytes")
    }

    /// A whole-file answer whose `Content-Length` counts bytes past the resource announces a length over the
    /// limit: refused at its head.
    @Test func aLengthInflatedByTheServerIsRefused() async throws {
        let script = Script.always(Behavior.ignoreRange.with {
            $0.overrunBytes = 4096
            $0.framing = .contentLength
        })
        let server = try MisbehavingServer(resource: resource, script: script)
        defer { server.stop() }
        let (result, task) = try await run(DownloadRequest(url: server.url("/f"), destination: .memory(limit: resource.bytes.count)),
                                           options: options())
        guard let refused = tooLarge(result) else { return }
        #expect(refused.length == Int64(resource.bytes.count + 4096))
        #expect(task.currentProgress.bytesDone == 0)
    }

    /// Ranged answers whose bodies run on past their range (by any framing) with the limit at exactly the
    /// resource's length: the extra bytes never land, so the result is the resource and within the limit.
    @Test(arguments: [MisbehavingServer.Framing.contentLength, .chunked, .closeDelimited])
    func aBodyRunningPastItsRangeNeverTakesTheResultPastTheLimit(framing: MisbehavingServer.Framing) async throws {
        let size = resource.bytes.count
        let tries = HostileServerTests.TryCounter()
        let script = Script { request in
            guard request.range != nil, tries.next(request.rangeHeader ?? "") < 1 else { return .normal }
            return Behavior.bodyOverrun(extra: 200_000, framing: framing)
        }
        let server = try MisbehavingServer(resource: resource, script: script)
        defer { server.stop() }
        let (result, _) = try await run(DownloadRequest(url: server.url("/f"), destination: .memory(limit: size)),
                                        options: options())
        let body = try #require(try result.get().body)
        #expect(body.count == size)
        #expect(sameBytes(body, resource.bytes))
        let overruns = server.exchanges.filter { $0.status == 206 && $0.bodyBytesSent > ($0.request.range?.resolved(length: size)?.count ?? size) }
        #expect(!overruns.isEmpty, "the server did send bodies past their ranges")
    }

    /// An empty resource (a `416` to `bytes=0-`, with an error page that is not the resource) is an empty body.
    @Test func anEmptyResourceIsAnEmptyBody() async throws {
        let server = try MisbehavingServer(resource: MisbehavingServer.Resource(bytes: []))
        defer { server.stop() }
        let bytes = try await HaulClient(options: options()).bytes(from: server.url("/empty"), limit: 0)
        #expect(bytes.isEmpty)
        #expect(server.exchanges.first?.status == 416)
    }

    /// A pause keeps nothing of a download in memory: the resume fetches it again, and the result is whole.
    @Test func aPausedMemoryDownloadStartsOverOnResume() async throws {
        // The first response stalls after 64 KiB until the server stops: still running whenever the test acts.
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallMidBody(afterBytes: 64 << 10, .untilStopped)]))
        defer { server.stop() }
        let task = try HaulClient(options: stalledOptions())
            .start(DownloadRequest(url: server.url("/f"), destination: .memory(limit: resource.bytes.count)))
        #expect(await eventually { task.currentProgress.bytesDone > 0 }, "some bytes arrive")
        try await task.pause()
        #expect(task.currentProgress.phase == .paused)
        #expect(!task.currentProgress.canResume, "nothing of it is kept to continue from")
        try await task.resume()
        guard let result = await outcomeWithin(Self.deadline, of: task) else { Issue.record("did not end"); return }
        let body = try #require(try result.get().body)
        #expect(sameBytes(body, resource.bytes), "\(body.count) bytes")
    }

    @Test func cancellingAMemoryDownloadEndsIt() async throws {
        // The first response stalls after 64 KiB until the server stops: still running whenever the test acts.
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallMidBody(afterBytes: 64 << 10, .untilStopped)]))
        defer { server.stop() }
        let task = try HaulClient(options: stalledOptions())
            .start(DownloadRequest(url: server.url("/f"), destination: .memory(limit: resource.bytes.count)))
        #expect(await eventually { task.currentProgress.bytesDone > 0 })
        await task.cancel()
        guard case .failure(let error)? = await outcomeWithin(Self.deadline, of: task), error.isCancelled else {
            Issue.record("expected the download to end cancelled"); return
        }
    }
}
