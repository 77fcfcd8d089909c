import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// Never a file of two versions: every response is held to the download's identity (strong ETag, weak ETag,
/// Last-Modified, length), on the first run and on resume, against servers that change the file and ignore
/// `If-Range`; a download without any validator is one response; a `200` that proves the file unchanged is a
/// faulty response, not a change.
///
/// Each test ends in a wrong file (exit 0) or a false "changed" with the validators compared as before
/// (strong ETags only).
@Suite(.serialized) struct ValidatorHardeningTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Resource = MisbehavingServer.Resource
    typealias Script = MisbehavingServer.Script

    static let size = 6 << 20
    static let firstDate = "Wed, 21 Oct 2015 07:28:00 GMT"
    static let laterDate = "Thu, 22 Oct 2015 07:28:00 GMT"
    static let deadline: Duration = .seconds(30)

    /// How a resource's validators go from one version to the next.
    struct Change: Sendable, CustomTestStringConvertible {
        var name: String
        var before: (etag: String?, lastModified: String?)
        var after: (etag: String?, lastModified: String?)
        var testDescription: String { name }

        func old(seed: UInt64 = 1) -> Resource {
            Resource(bytes: TestFiles.bytes(count: ValidatorHardeningTests.size, seed: seed), etag: before.etag, lastModified: before.lastModified)
        }

        func new(seed: UInt64 = 2) -> Resource {
            Resource(bytes: TestFiles.bytes(count: ValidatorHardeningTests.size, seed: seed), etag: after.etag, lastModified: after.lastModified)
        }
    }

    /// The class: every validator changed, flipped, dropped or gained, where strong ETags alone say nothing.
    static let changes: [Change] = [
        Change(name: "weak ETag changed", before: ("W/\"a\"", nil), after: ("W/\"b\"", nil)),
        Change(name: "Last-Modified changed (date only)", before: (nil, firstDate), after: (nil, laterDate)),
        Change(name: "Last-Modified changed, same weak ETag", before: ("W/\"a\"", firstDate), after: ("W/\"a\"", laterDate)),
        Change(name: "strong ETag turned weak", before: ("\"a\"", firstDate), after: ("W/\"a\"", firstDate)),
        Change(name: "weak ETag turned strong", before: ("W/\"a\"", nil), after: ("\"a\"", nil)),
        Change(name: "ETag dropped", before: ("\"a\"", firstDate), after: (nil, firstDate)),
        Change(name: "ETag gained", before: (nil, firstDate), after: ("\"b\"", firstDate)),
        Change(name: "Last-Modified dropped", before: ("W/\"a\"", firstDate), after: ("W/\"a\"", nil)),
        Change(name: "Last-Modified gained", before: ("W/\"a\"", nil), after: ("W/\"a\"", firstDate)),
    ]

    /// Where the change happens: probe → retry of its range (one connection), probe → ranged, ranged → ranged.
    static let moments: [(connections: Int, fromRequest: Int)] = [(1, 1), (4, 1), (4, 3)]

    func options(connections: Int = 4) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 30, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        return options
    }

    func run(_ request: DownloadRequest, options: DownloadOptions) async throws -> (Result<DownloadResult, HaulError>, DownloadTask) {
        try await runToEnd(request, options: options, within: Self.deadline)
    }

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0) } }

    /// Expects a failure for a change, and no file: never the old bytes completed with new ones.
    func expectChanged(_ result: Result<DownloadResult, HaulError>, path: String, _ what: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        switch result {
        case .success:
            let mixed = contents(path).map { "\($0.count) bytes" } ?? "no file"
            Issue.record("\(what): the download succeeded (\(mixed)) although the file changed under it", sourceLocation: sourceLocation)
        case .failure(let error):
            guard case .changedOnServer = error.reason else {
                Issue.record("\(what): expected 'changed on the server', got \(error)", sourceLocation: sourceLocation)
                return
            }
        }
        #expect(!FileManager.default.fileExists(atPath: path), "\(what): no file", sourceLocation: sourceLocation)
    }

    /// The first try of the probe is cut after 1 MiB (so that one connection sends a second request); from
    /// request `changeAt` on the server has the new version and answers ranges with `206` whatever `If-Range`.
    func changingScript(_ change: Change, from changeAt: Int) -> Script {
        let new = change.new()
        return Script { request in
            if request.index == 0 { return .closeMidBody(afterBytes: 1 << 20) }
            return request.index >= changeAt ? .serve(new).with { $0.ignoresIfRange = true } : .normal
        }
    }

    // MARK: Changes on the first run

    @Test(arguments: changes, moments.indices)
    func aChangeOfAnyValidatorIsNeverMixedIn(change: Change, moment: Int) async throws {
        let (connections, changeAt) = Self.moments[moment]
        let server = try MisbehavingServer(resource: change.old(), script: changingScript(change, from: changeAt))
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let (result, _) = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options(connections: connections))
        expectChanged(result, path: path, "\(change.name), \(connections) connection(s), new from request \(changeAt)")
    }

    @Test(arguments: [changes[0], changes[1], changes[5]])
    func withRestartTheFileIsTheNewVersionWhole(change: Change) async throws {
        let server = try MisbehavingServer(resource: change.old(), script: changingScript(change, from: 1))
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let request = DownloadRequest(url: server.url("/f"), destination: .file(path), ifChangedOnServer: .restart)
        let (result, _) = try await run(request, options: options())
        if case .failure(let error) = result { Issue.record("\(change.name): expected the new version, got \(error)") }
        #expect(contents(path).map { sameBytes($0, change.new().bytes) } == true, "\(change.name): the file is the new version, whole")
    }

    // MARK: Resume

    /// Leaves `path.part` and its journal behind: the server breaks off the third request and the download
    /// has no retries.
    func interruptedDownload(_ server: MisbehavingServer, to path: String) async throws {
        server.setScript(Script { $0.index >= 2 ? .closeMidBody(afterBytes: 100_000) : .normal })
        var options = options()
        options.retry = .none
        options.checkpointBytes = 64 << 10
        let (result, _) = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options)
        guard case .failure = result else { Issue.record("the first run was to fail"); return }
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        try #require(state.durable.count > 0, "the first run left durable bytes")
    }

    /// Interrupts a download of `change`'s old version, gives the server the new one (answering ranges with
    /// `206` whatever `If-Range` says), and runs the download again with `policy`.
    func resumeAfterChange(_ change: Change, policy: ChangePolicy, to path: String) async throws -> Result<DownloadResult, HaulError> {
        let server = try MisbehavingServer(resource: change.old())
        defer { server.stop() }
        try await interruptedDownload(server, to: path)
        server.setResource(change.new())
        server.setScript(.always(.ignoreIfRange))
        let request = DownloadRequest(url: server.url("/f"), destination: .file(path), ifChangedOnServer: policy)
        return try await run(request, options: options()).0
    }

    @Test(arguments: changes)
    func aResumeAfterAChangeOfAnyValidatorStops(change: Change) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let result = try await resumeAfterChange(change, policy: .fail, to: path)
        expectChanged(result, path: path, "resume, \(change.name)")
    }

    @Test func aResumeAfterAChangeWithRestartIsTheNewVersionWhole() async throws {
        let change = Self.changes[0]
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        if case .failure(let error) = try await resumeAfterChange(change, policy: .restart, to: path) {
            Issue.record("expected the new version, got \(error)")
        }
        #expect(contents(path).map { sameBytes($0, change.new().bytes) } == true, "the file is the new version, whole")
    }

    // MARK: No validator at all

    static let untagged = Change(name: "no validator", before: (nil, nil), after: (nil, nil))

    @Test(arguments: [1, 4])
    func withoutValidatorsTheFileIsOneResponseOfOneVersion(connections: Int) async throws {
        let change = Self.untagged
        let server = try MisbehavingServer(resource: change.old(), script: changingScript(change, from: 1))
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let (result, task) = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options(connections: connections))
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        // The first response was cut (and, at 4 connections, asked for a part only): the next one carried all.
        #expect(contents(path).map { sameBytes($0, change.new().bytes) } == true, "the file is one version, whole: \(contents(path)?.count ?? -1) bytes")
        let asked = server.requests.map { $0.rangeHeader ?? "no Range" }
        #expect(asked.count == 2 && asked.allSatisfy { $0 == "no Range" || $0.hasPrefix("bytes=0-") },
                "each request asks for the file from its first byte, the second without Range: \(asked)")
        #expect(server.exchanges.last?.bodyBytesSent == Self.size, "the last response carried the whole file")
        #expect(task.currentProgress.notices.contains { $0.contains("no ETag or Last-Modified") }, "\(task.currentProgress.notices)")
    }

    @Test func aPausedDownloadWithoutValidatorsStartsOverInsteadOfMixing() async throws {
        let change = Self.untagged
        let server = try MisbehavingServer(resource: change.old())
        defer { server.stop() }
        // The first run is still going when it is paused, however late the test gets to run.
        server.hold(afterBodyBytes: 2 << 20)
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        // One connection: at N, the bounded probe dropped for a request without Range could spend the hold.
        var options = options(connections: 1)
        options.checkpointBytes = 256 << 10
        options.timeouts.idle = .seconds(60)
        let request = DownloadRequest(url: server.url("/f"), destination: .file(path))
        let task = try HaulClient(options: options).start(request)
        await eventually { task.currentProgress.bytesDone >= 1 << 20 || task.currentProgress.phase == .failed }
        try #require(task.currentProgress.bytesDone >= 1 << 20, "the first run got going: \(task.currentProgress)")
        try await task.pause()
        #expect(!task.currentProgress.canResume, "nothing could show that the rest is of the same file")
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"), "no journal to resume from")
        server.setResource(change.new())
        server.release()
        let (result, _) = try await run(request, options: options)
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        #expect(contents(path).map { sameBytes($0, change.new().bytes) } == true, "the file is one version, whole")
    }

    @Test func aJournalWithoutValidatorsStartsOverInsteadOfMixing() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 5)
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        // What an older Haul left of a download from a server without validators: half the file "durable",
        // from a version the server no longer has.
        let stale = TestFiles.bytes(count: Self.size, seed: 6)
        try Data(stale).write(to: URL(fileURLWithPath: path + ".part"))
        let state = JournalState(url: server.url("/f"), totalLength: Int64(Self.size), minimumSegmentSize: 256 << 10,
                                 createdAt: 1_445_412_480, durable: ByteRangeSet([0..<Int64(Self.size / 2)]))
        _ = try ResumeJournal.create(path: path + ".part.haul", state: state)
        let (result, task) = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options())
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true, "the file is the server's, not half of the stale one")
        #expect(task.currentProgress.notices.contains { $0.contains("starting over") }, "\(task.currentProgress.notices)")
        #expect(!FileManager.default.fileExists(atPath: path + ".part.haul"))
    }

    // MARK: A 200 that is not a change

    /// A load-balanced backend that ignores `Range` answers the first try of each range after the probe with the
    /// whole file and the same ETag (retried), or every request after the probe (taken out of the whole file).
    @Test(arguments: [false, true])
    func aWholeFileAnswerWithTheSameStrongETagIsNotAChange(everyRequest: Bool) async throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: everyRequest ? 8 : 7)
        let tries = HostileServerTests.TryCounter()
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            guard request.index > 0, let range = request.rangeHeader else { return .normal }
            return everyRequest || tries.next(range) == 0 ? .ignoreRange : .normal
        })
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let (result, _) = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options())
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true)
        #expect(server.exchanges.contains { $0.status == 200 }, "some ranges got the whole file")
    }

    @Test func aWholeFileAnswerWithAnotherStrongETagIsAChange() async throws {
        let old = MisbehavingServer.Resource.pattern(size: Self.size, seed: 9)
        let new = MisbehavingServer.Resource.pattern(size: Self.size, seed: 10)
        let server = try MisbehavingServer(resource: old, script: Script { $0.index > 0 ? .serve(new).with { $0.rangeHandling = .ignore } : .normal })
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let (result, _) = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options())
        expectChanged(result, path: path, "a 200 with another ETag")
    }

    // MARK: Mirrors

    @Test func aMirrorWithoutValidatorsIsLeftOut() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 13)
        let primary = try MisbehavingServer(resource: resource)
        defer { primary.stop() }
        // After its check the mirror has another version, and no validator ever shows it.
        let other = Resource(bytes: TestFiles.bytes(count: Self.size, seed: 14), etag: nil, lastModified: nil)
        let mirror = try MisbehavingServer(resource: Resource(bytes: resource.bytes, etag: nil, lastModified: nil),
                                           script: Script { $0.index > 0 ? .serve(other) : .normal })
        defer { mirror.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let request = DownloadRequest(url: primary.url("/f"), mirrors: [mirror.url("/f")], destination: .file(path))
        let (result, _) = try await run(request, options: options())
        if case .failure(let error) = result { Issue.record("expected the file from the primary, got \(error)") }
        #expect(contents(path).map { sameBytes($0, resource.bytes) } == true, "the file is the primary's, whole")
        #expect(mirror.requests.map(\.rangeHeader) == ["bytes=0-0"], "the mirror answered its check only")
    }

    @Test func aVerifiedMirrorWhoseWeakETagChangesIsAChange() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 11)
        let mirrored = Resource(bytes: resource.bytes, etag: "W/\"mirror\"", lastModified: nil)
        let changed = Resource(bytes: TestFiles.bytes(count: Self.size, seed: 12), etag: "W/\"mirror-2\"", lastModified: nil)
        let primary = try MisbehavingServer(resource: resource)
        defer { primary.stop() }
        // After its check (`bytes=0-0`), the mirror has another version.
        let mirror = try MisbehavingServer(resource: mirrored, script: Script { $0.index > 0 ? .serve(changed) : .normal })
        defer { mirror.stop() }
        let directory = try TemporaryDirectory()
        let path = directory.file("f")
        let request = DownloadRequest(url: primary.url("/f"), mirrors: [mirror.url("/f")], destination: .file(path))
        let (result, _) = try await run(request, options: options())
        try #require(mirror.exchanges.dropFirst().contains { $0.bodyBytesSent > 0 || $0.status != nil }, "the mirror got ranges")
        expectChanged(result, path: path, "a mirror's weak ETag changed")
    }
}
