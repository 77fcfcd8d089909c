import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// What a correct downloader does against hostile, broken or merely unusual servers: one test per defect.
///
/// These are a specification: each asserts the correct outcome (the exact file, or a clear error and no
/// damage), not what the engine happens to do today.
@Suite(.serialized) struct HostileServerTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Script = MisbehavingServer.Script

    static let size = 6 << 20
    let resource = MisbehavingServer.Resource.pattern(size: HostileServerTests.size, seed: 11)

    /// Generous limit for any one download here, so that no test can hang the run.
    static let deadline: Duration = .seconds(20)

    func options(connections: Int = 8, path: BodyPath = .spliced) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 5, totalRetries: 100, baseDelay: .milliseconds(10), maxDelay: .milliseconds(100))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        return path.applied(to: options)
    }

    /// Downloads `request` with `options` within the deadline (logging to `log`, if given); records a test
    /// issue when it does not end.
    func run(_ request: DownloadRequest, options: DownloadOptions,
             log: CapturingLogHandler.Store? = nil) async throws -> Result<DownloadResult, HaulError> {
        let client = if let log { try HaulClient(options: options, logger: CapturingLogHandler.logger(log)) } else { try HaulClient(options: options) }
        let task = client.start(request)
        guard let result = await outcomeWithin(Self.deadline, of: task) else {
            Issue.record("the download did not end within \(HostileServerTests.deadline)")
            return .failure(.unexpected("test deadline"))
        }
        return result
    }

    func fileBytes(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// Whether the file at `path` holds exactly `bytes` (a plain Bool, so that a failure prints no arrays).
    func holds(_ path: String, _ bytes: [UInt8]) -> Bool {
        guard let contents = fileBytes(path) else { return false }
        return sameBytes(contents, bytes)
    }

    /// Expects the file at `path` to hold exactly `bytes`; a failure describes the file, never prints arrays.
    func expectFile(_ path: String, holds bytes: [UInt8], _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        let matches = holds(path, bytes)
        #expect(matches, "\(what.isEmpty ? "" : what + ": ")expected \(bytes.count) bytes, found \(describe(path))", sourceLocation: sourceLocation)
    }

    /// What is at `path`, for failure messages: its size and first bytes, or that nothing is there.
    func describe(_ path: String) -> String {
        guard let contents = fileBytes(path) else { return "no file" }
        return "\(contents.count) bytes starting \(String(decoding: contents.prefix(40), as: UTF8.self).debugDescription)"
    }

    func fileSize(_ path: String) -> Int? {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    /// `behavior` for the first two tries of every distinct `Range` field value, correct after that
    /// (requests without `Range` are always answered correctly).
    static func firstTwoTriesOfEachRange(_ behavior: Behavior) -> Script {
        let tries = TryCounter()
        return Script { request in
            guard let range = request.rangeHeader else { return .normal }
            return tries.next(range) < 2 ? behavior : .normal
        }
    }

    final class TryCounter: Sendable {
        private let counts = Mutex<[String: Int]>([:])

        /// How many times `key` was seen before this call.
        func next(_ key: String) -> Int {
            counts.withLock { counts in
                defer { counts[key, default: 0] += 1 }
                return counts[key, default: 0]
            }
        }
    }

    final class Flag: Sendable {
        private let storage: Mutex<Bool>
        init(_ value: Bool) { storage = Mutex(value) }
        var value: Bool {
            get { storage.withLock { $0 } }
            set { storage.withLock { $0 = newValue } }
        }
    }

    // MARK: 1. Body overrun

    /// The first two tries of each range get a correct head whose body runs 64 KiB past the range. The
    /// server pauses 20 ms after the range's last byte, so the extra bytes arrive in a read of their own (as
    /// they would from a slow or buffering server) and not only at the tail of the range's last read.
    @Test(arguments: [MisbehavingServer.Framing.contentLength, .chunked, .closeDelimited], BodyPath.allCases)
    func bodyRunningPastTheRangeNeverLandsInTheFile(framing: MisbehavingServer.Framing, path bodyPath: BodyPath) async throws {
        let size = HostileServerTests.size
        let tries = TryCounter()
        let script = Script { request in
            guard let range = request.range?.resolved(length: size), tries.next(request.rangeHeader ?? "") < 2 else { return .normal }
            return Behavior.stallMidBody(afterBytes: range.count, .seconds(0.02)).with {
                $0.overrunBytes = 64 * 1024 + 123
                $0.framing = framing
            }
        }
        let server = try MisbehavingServer(resource: resource, script: script)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let log = CapturingLogHandler.Store()
        let result = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options(path: bodyPath), log: log)
        // Splicing stops at the range's end; the overrun is then read, and refused, as on the other path.
        bodyPath.expectTaken(in: log, spliceExpected: framing == .contentLength)
        let overruns = server.exchanges.filter { $0.status == 206 && $0.bodyBytesSent > ($0.request.range?.resolved(length: size)?.count ?? 0) }.count
        switch result {
        case .success:
            #expect(fileSize(path) == size, "the file is exactly the resource's length (\(overruns) responses overran their range)")
            expectFile(path, holds: resource.bytes, "the file is the resource, byte for byte")
        case .failure(let error):
            Issue.record("overrun (\(framing)) on the first two tries of each range: expected the file, got \(error)")
        }
        if let part = fileSize(path + ".part") { #expect(part <= size, ".part grew past the total: \(part)") }
    }

    // MARK: 2. Shifted Content-Range

    @Test(arguments: BodyPath.allCases)
    func shiftedContentRangeIsRetriedAndTheFileFinishes(path bodyPath: BodyPath) async throws {
        let server = try MisbehavingServer(resource: resource, script: Self.firstTwoTriesOfEachRange(.wrongContentRange(shiftedBy: 4096)))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let log = CapturingLogHandler.Store()
        let result = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options(path: bodyPath), log: log)
        bodyPath.expectTaken(in: log)
        switch result {
        case .success:
            expectFile(path, holds: resource.bytes)
        case .failure(let error):
            Issue.record("shifted Content-Range on the first two tries of each range: expected the file, got \(error)")
        }
    }

    // MARK: 3. Credentials stay with their origin

    func credentialOptions() -> DownloadOptions {
        var options = options(connections: 4)
        options.headers = [("Authorization", "Bearer secret"), ("Cookie", "a=b"), ("X-Custom", "1")]
        return options
    }

    func leaked(_ server: MisbehavingServer) -> [String] {
        server.requests.compactMap { request in
            let leaked = ["Authorization", "Cookie"].filter { request.header($0) != nil }
            return leaked.isEmpty ? nil : "request \(request.index) (\(request.rangeHeader ?? "no range")) carried \(leaked)"
        }
    }

    @Test func credentialsDoNotFollowARedirectToAnotherOrigin() async throws {
        let target = try MisbehavingServer(resource: resource)
        defer { target.stop() }
        let redirecting = try MisbehavingServer(resource: resource, script: .always(.redirect(to: target.url("/f"))))
        defer { redirecting.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let result = try await run(DownloadRequest(url: redirecting.url("/f"), destination: .file(path)), options: credentialOptions())
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        expectFile(path, holds: resource.bytes)
        #expect(redirecting.requests.first?.header("Authorization") == "Bearer secret", "the origin itself gets them")
        #expect(!target.requests.isEmpty)
        #expect(leaked(target).isEmpty, "credentials reached another origin: \(leaked(target))")
        #expect(target.requests.allSatisfy { $0.header("X-Custom") == "1" }, "other custom headers follow redirects, as with curl")
    }

    @Test func credentialsAreNotSentToAMirrorOnAnotherOrigin() async throws {
        let primary = try MisbehavingServer(resource: resource)
        defer { primary.stop() }
        let mirror = try MisbehavingServer(resource: resource)
        defer { mirror.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let result = try await run(DownloadRequest(url: primary.url("/f"), mirrors: [mirror.url("/f")], destination: .file(path)),
                                   options: credentialOptions())
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        expectFile(path, holds: resource.bytes)
        #expect(primary.requests.first?.header("Authorization") == "Bearer secret")
        #expect(!mirror.requests.isEmpty, "the mirror was used")
        #expect(leaked(mirror).isEmpty, "credentials reached the mirror's origin: \(leaked(mirror))")
        #expect(mirror.requests.allSatisfy { $0.header("X-Custom") == "1" })
    }

    // MARK: 4. Resume after a redirect

    @Test(arguments: [false, true])
    func aRedirectedDownloadResumesAfterAPause(crossOrigin: Bool) async throws {
        let size = 8 << 20
        let big = MisbehavingServer.Resource.pattern(size: size, seed: 12)
        let dripping = Flag(true)
        let slow = Behavior.drip(bytes: 16 * 1024, everyMilliseconds: 10)
        let target = try MisbehavingServer(resource: big)
        defer { target.stop() }
        let origin = try MisbehavingServer(resource: big)
        defer { origin.stop() }
        let location = crossOrigin ? target.url("/real") : "/real"
        let served = crossOrigin ? target : origin
        let script = Script { request in
            if request.target == "/start" { return .redirect(to: location) }
            return dripping.value ? slow : .normal
        }
        origin.setScript(script)
        target.setScript(script)

        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let request = DownloadRequest(url: origin.url("/start"), destination: .file(path))
        var options = options(connections: 4)
        options.checkpointBytes = 256 << 10

        let client = try HaulClient(options: options)
        let task = client.start(request)
        await eventually { task.currentProgress.bytesDone >= 2 << 20 || task.currentProgress.phase == .failed }
        try #require(task.currentProgress.bytesDone >= 2 << 20, "the first run got going: \(task.currentProgress)")
        try await task.pause()
        let (_, state) = try ResumeJournal.open(path: path + ".part.haul")
        let durable = state.durable.count
        #expect(durable > 0 && durable < Int64(size), "paused mid-way with \(durable) durable bytes")

        dripping.value = false
        let before = served.exchanges.count
        let result = try await run(request, options: options)
        switch result {
        case .success:
            expectFile(path, holds: big.bytes)
            let fetched = served.exchanges.dropFirst(before).reduce(0) { $0 + $1.bodyBytesSent }
            let slack = 64 << 10
            #expect(Int64(fetched) <= Int64(size) - durable + Int64(slack),
                    "the second run fetched \(fetched) bytes; \(Int64(size) - durable) were missing")
        case .failure(let error):
            Issue.record("resuming \(crossOrigin ? "a cross-origin" : "a same-origin") redirect failed: \(error)")
        }
    }

    // MARK: 5. Symlinks

    @Test(arguments: [".part", ".part.haul.tmp"])
    func aSymlinkAtAWorkingPathIsNeverFollowed(suffix: String) async throws {
        let small = MisbehavingServer.Resource.pattern(size: 2 << 20, seed: 13)
        let server = try MisbehavingServer(resource: small)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let victim = directory + "/victim"
        let victimContent = Array("precious content that no download may touch\n".utf8)
        try Data(victimContent).write(to: URL(fileURLWithPath: victim))
        let path = directory + "/f"
        try FileManager.default.createSymbolicLink(atPath: path + suffix, withDestinationPath: victim)
        var options = options(connections: 4)
        options.checkpointBytes = 64 << 10  // well below the file, so that a journal is written

        let result = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options)
        expectFile(victim, holds: victimContent, "the symlink \(suffix) was followed: the victim changed")
        switch result {
        case .success:
            expectFile(path, holds: small.bytes)
        case .failure(let error):
            guard case .disk = error.reason else {
                Issue.record("expected success or a clear disk error, got \(error)")
                return
            }
        }
    }

    // MARK: 6. One writer per destination

    /// While one download writes `f.part`, a second one to `f` must be refused at once (before it fetches
    /// or writes anything), and the first must finish undisturbed.
    @Test(arguments: [false, true])
    func aSecondDownloadToTheSameDestinationIsRefused(sameClient: Bool) async throws {
        let small = MisbehavingServer.Resource.pattern(size: 2 << 20, seed: 14)
        let server = try MisbehavingServer(resource: small)
        defer { server.stop() }
        // The first download is still running when the second one starts and ends, however late the test
        // gets to run: the server holds the rest of the file until released below.
        server.hold(afterBodyBytes: 1 << 20)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        var options = options(connections: 4)
        options.checkpointBytes = 128 << 10
        // Held connections wait for the release instead of timing out and retrying meanwhile (the low-speed
        // limit would close them after its minute of nothing as well).
        options.timeouts.idle = .seconds(120)
        options.lowSpeedLimit = nil
        let request = DownloadRequest(url: server.url("/f"), destination: .file(path))
        let firstClient = try HaulClient(options: options)
        let first = firstClient.start(request)
        await eventually { first.currentProgress.bytesDone > 0 }
        try #require(first.currentProgress.bytesDone > 0 && first.currentProgress.phase == .downloading)

        let secondClient = if sameClient { firstClient } else { try HaulClient(options: options) }
        let second = secondClient.start(request)
        let secondResult = await outcomeWithin(Self.deadline, of: second)
        let firstPhaseThen = first.currentProgress.phase
        server.release()
        let firstResult = await outcomeWithin(Self.deadline, of: first)
        switch secondResult {
        case .failure(let error)?:
            print("the second download into the same destination failed with: \(error)")
            if case .cancelled = error.reason { Issue.record("a clear error, not a cancellation") }
            #expect(second.currentProgress.bytesDone == 0, "refused before writing: the second wrote \(second.currentProgress.bytesDone) bytes, then failed with: \(error)")
            #expect(firstPhaseThen == .downloading, "refused while the first was still running, not after it: \(error)")
        case .success?:
            Issue.record("a second download into \(path) while the first was running succeeded; it must be refused")
        case nil:
            Issue.record("the second download did not end")
        }
        switch firstResult {
        case .success?:
            expectFile(path, holds: small.bytes, "the first download's file is intact")
        case .failure(let error)?:
            Issue.record("the first download failed: \(error)")
        case nil:
            Issue.record("the first download did not end")
        }
    }

    // MARK: 7. Heads that never complete

    @Test(arguments: ["100 Continue every 200 ms", "head dripped 1 byte per 100 ms"])
    func aHeadThatNeverCompletesFails(name: String) async throws {
        let behavior: Behavior = if name.hasPrefix("100") {
            .interimFlood(everyMilliseconds: 200)
        } else {
            // A long Content-Disposition makes the head take well over the deadline at one byte per 100 ms.
            Behavior.dripHead(bytes: 1, everyMilliseconds: 100).with {
                $0.contentDisposition = "attachment; filename=\"\(String(repeating: "h", count: 300)).bin\""
            }
        }
        let server = try MisbehavingServer(resource: resource, script: .always(behavior))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(connections: 1)
        options.retry = .none
        options.timeouts.idle = .seconds(1)
        let started = ContinuousClock.now
        let task = try HaulClient(options: options).start(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f")))
        guard let result = await outcomeWithin(Self.deadline, of: task) else {
            Issue.record("\(name): the download was still waiting for a head after \(HostileServerTests.deadline)")
            return
        }
        switch result {
        case .success:
            Issue.record("\(name): expected a failure, the download succeeded after \(ContinuousClock.now - started)")
        case .failure(let error):
            switch error.reason {
            case .network, .malformedResponse, .timedOut: break
            default: Issue.record("\(name): expected a network or protocol error, got \(error)")
            }
        }
    }

    // MARK: 8. Long suggested names

    @Test func aLongSuggestedNameLeavesRoomForTheWorkingSuffixes() async throws {
        let name = String(repeating: "n", count: 243) + ".tar.gz"
        try #require(name.utf8.count == 250)
        let small = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 15)
        let server = try MisbehavingServer(resource: small, script: .always(.attachment(filename: name)))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(connections: 4)
        options.minimumSegment = 64 << 10
        options.checkpointBytes = 64 << 10  // a journal, and so `NAME.part.haul.tmp`, is written
        let result = try await run(DownloadRequest(url: server.url("/download"), destination: .directory(directory)), options: options)
        switch result {
        case .success(let value):
            let saved = String(value.path.split(separator: "/").last ?? "")
            #expect(saved.utf8.count <= 255 - ".part.haul.tmp".utf8.count, "\(saved.utf8.count)-byte name")
            #expect(saved.hasSuffix(".tar.gz"))
            expectFile(value.path, holds: small.bytes)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == [saved])
        case .failure(let error):
            Issue.record("expected the file under a shortened name, got \(error)")
        }
    }

    // MARK: 9. Empty files

    @Test(arguments: ["caddy 416 with a text body", "webfs 206 bytes 0--1/0"])
    func anEmptyResourceIsAnEmptyFile(style: String) async throws {
        let empty = MisbehavingServer.Resource(bytes: [])
        let server = try MisbehavingServer(resource: empty, script: .always(style.hasPrefix("webfs") ? .webfsEmptyRange : .normal))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        let result = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options())
        switch result {
        case .success(let value):
            #expect(value.bytes == 0)
            #expect(fileSize(path) == 0, "\(style): the file holds \(String(decoding: fileBytes(path) ?? [], as: UTF8.self).debugDescription)")
        case .failure(let error):
            Issue.record("\(style): expected an empty file, got \(error)")
        }
    }

    // MARK: 10. Error statuses

    @Test(arguments: [404, 500])
    func anErrorStatusNeverBecomesContent(status: Int) async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.status(status)))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        var options = options()
        options.retry = RetryPolicy(triesPerRange: 2, totalRetries: 2, baseDelay: .milliseconds(10), maxDelay: .milliseconds(20))
        let result = try await run(DownloadRequest(url: server.url("/f"), destination: .file(path)), options: options)
        switch result {
        case .success:
            Issue.record("a \(status) became the file: \(String(decoding: fileBytes(path) ?? [], as: UTF8.self).debugDescription)")
        case .failure(let error):
            guard case .httpStatus(let received, _, _) = error.reason else {
                Issue.record("expected HTTP \(status), got \(error)")
                return
            }
            #expect(received == status)
        }
        #expect(!FileManager.default.fileExists(atPath: path), "no destination file")
        #expect((fileSize(path + ".part") ?? 0) == 0, "the error body is not written anywhere")
    }
}
