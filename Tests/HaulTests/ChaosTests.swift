import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// Many downloads against servers that pick a fault for about a third of their responses
/// (``MisbehavingServer/Script/chaos(seed:faultRate:faults:)``): cut, stalled, trickled, overrunning and
/// mis-framed bodies, lying ranges, multipart and coded bodies, another version of the file (with and
/// without `If-Range` honoured), the whole file for a range, and `Retry-After` of decades. Every download must
/// end in the exact file — one version, never a mix — or a clear ``HaulError`` with no destination file and no
/// `.part` longer than the resource.
///
/// The downloads vary what the server can prove: download `i` identifies the file by a strong ETag and a date,
/// a weak ETag, a date only, or a weak ETag and a date (`i % 4`); odd downloads restart on a change, even ones
/// fail; every fifth goes into a directory where the server names its file after another download's `.part`,
/// which must be left as it was.
///
/// Three seeds run by default; `HAUL_CHAOS_SEED` (decimal or `0x` hex) runs that one alone. Each is printed
/// first and in every failure message. Download `i` uses the server seed `SplitMix64(seed ^ i)`; set
/// `HAUL_CHAOS_DOWNLOAD=i` to run only that one again.
@Suite(.serialized) struct ChaosTests {
    static let size = 2 << 20
    static let downloads = 100
    /// Downloads running at once (each with its own server and directory), to stay within about a minute.
    static let concurrency = 4
    /// Longest any one download may take before the test gives up on it (a hang is a failure).
    static let deadline: Duration = .seconds(30)
    static let defaultSeeds: [UInt64] = [20_261_124, 20_261_126, 0x5EED_C4A0_5]

    /// The seeds to run: `HAUL_CHAOS_SEED` alone when set, else the three defaults.
    static var seeds: [UInt64] {
        guard let text = ProcessInfo.processInfo.environment["HAUL_CHAOS_SEED"]?.trimmingCharacters(in: .whitespaces) else {
            return defaultSeeds
        }
        let seed = text.lowercased().hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
        return seed.map { [$0] } ?? defaultSeeds
    }

    /// What another download left in the directory of a directory download: its interrupted `.part`, whose name
    /// the server gives as its own file's.
    static let victimName = "victim.bin.part"
    static let victimBytes = Array("the partial download of victim.bin: not to be touched".utf8)

    static var onlyDownload: Int? {
        ProcessInfo.processInfo.environment["HAUL_CHAOS_DOWNLOAD"].flatMap { Int($0) }
    }

    /// Download `index`'s resource: the same bytes, identified by one of four sets of validators.
    static func resource(for index: Int) -> MisbehavingServer.Resource {
        var resource = MisbehavingServer.Resource.pattern(size: size, seed: 31)
        switch index % 4 {
        case 0: break                                        // strong ETag and Last-Modified
        case 1: resource.etag = "W/\"chaos-weak\""; resource.lastModified = nil
        case 2: resource.etag = nil                           // Last-Modified only
        default: resource.etag = "W/\"chaos-weak\""         // weak ETag and Last-Modified
        }
        return resource
    }

    func options(path: BodyPath) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 8, minimumSegment: 64 << 10)
        options.timeouts = ConnectionTimeouts(connect: .seconds(2), tlsHandshake: .seconds(2), idle: .seconds(1))
        options.retry = RetryPolicy(triesPerRange: 8, totalRetries: 200, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50),
                                    maxRetryAfter: .seconds(1))
        options.checkpointBytes = 256 << 10  // journal as it goes, so that checkpoints meet the faults too
        // The trickle fault (3 KiB/s for about a second, then full speed) meets a limit here, so that its cut
        // and retry happen too; the default limit (100 bytes/s over 60 s) would let it pass.
        options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 16 << 10, seconds: 1)
        return path.applied(to: options)
    }

    /// How one download ended.
    struct Outcome: Sendable {
        var index: Int
        var serverSeed: UInt64
        /// "completed", the HaulError case name, or "hung".
        var ending: String
        var faults: [MisbehavingServer.ChaosFault: Int]
        var requests: Int
        /// What was wrong with it, if anything (each is also recorded as a test issue).
        var problems: [String]
        /// Exchanges that spliced some of their body into the file.
        var splicedExchanges = 0
    }

    /// The case name of a HaulError (`network`, `malformedResponse`, ...).
    static func errorClass(_ error: HaulError) -> String {
        Mirror(reflecting: error.reason).children.first?.label ?? String(describing: error.reason)
    }

    static func serverSeed(_ seed: UInt64, download index: Int) -> UInt64 {
        var random = MisbehavingServer.SplitMix64(seed: seed ^ UInt64(index))
        return random.next()
    }

    static func fileSize(_ path: String) -> Int? {
        var info = stat()
        return lstat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    func runOne(_ index: Int, seed: UInt64, bodies: BodyPath) async -> Outcome {
        let serverSeed = Self.serverSeed(seed, download: index)
        let tag = "HAUL_CHAOS_SEED=\(seed) HAUL_CHAOS_DOWNLOAD=\(index) (server seed \(serverSeed), bodies \(bodies))"
        var outcome = Outcome(index: index, serverSeed: serverSeed, ending: "not started", faults: [:], requests: 0, problems: [])
        let resource = Self.resource(for: index)
        let intoDirectory = index % 5 == 0
        do {
            let chaos = MisbehavingServer.Script.chaos(seed: serverSeed)
            let script = intoDirectory
                ? MisbehavingServer.Script { chaos.decide($0).with { $0.contentDisposition = "attachment; filename=\"\(Self.victimName)\"" } }
                : chaos
            let server = try MisbehavingServer(resource: resource, script: script)
            defer { server.stop() }
            let directory = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var path = directory + "/f"
            let destination: DownloadRequest.Destination
            if intoDirectory {
                try Data(Self.victimBytes).write(to: URL(fileURLWithPath: directory + "/" + Self.victimName))
                destination = .directory(directory)
            } else {
                destination = .file(path)
            }
            let request = DownloadRequest(url: server.url("/f"), destination: destination,
                                          ifChangedOnServer: index % 2 == 1 ? .restart : .fail)
            let log = CapturingLogHandler.Store()
            let logger = CapturingLogHandler.logger(log, level: .debug)
            let task = try HaulClient(options: options(path: bodies), logger: logger).start(request)
            defer { outcome.splicedExchanges = log.with(BodyPath.splicingMessage).count }
            let result = await outcomeWithin(Self.deadline, of: task)
            if intoDirectory {
                let victim = FileManager.default.contents(atPath: directory + "/" + Self.victimName).map { Array($0) }
                if victim != Self.victimBytes {
                    outcome.problems.append("the server named its file \(Self.victimName) and the other download's .part changed; \(tag)")
                }
                if case .success(let done)? = result { path = done.path }
            }
            server.stop()
            let exchanges = server.exchanges
            outcome.requests = exchanges.count
            for fault in exchanges.compactMap(\.chaosFault) { outcome.faults[fault, default: 0] += 1 }
            let injected = exchanges.compactMap { exchange in exchange.chaosFault.map { "#\(exchange.request.index) \(exchange.request.rangeHeader ?? "-"): \($0)" } }
            let context = "\(tag); faults: \(injected.joined(separator: ", "))"
            switch result {
            case .success?:
                outcome.ending = "completed"
                let bytes = FileManager.default.contents(atPath: path).map { Array($0) }
                // A version served whole by one response is a true copy of the file as it was then.
                if let bytes, !sameBytes(bytes, resource.bytes), !sameBytes(bytes, resource.otherVersion.bytes) {
                    let difference = (0..<min(bytes.count, Self.size)).first { bytes[$0] != resource.bytes[$0] } ?? min(bytes.count, Self.size)
                    outcome.problems.append("completed, but the file is \(bytes.count) bytes and differs from the resource from offset \(difference) on; \(context)")
                } else if bytes == nil {
                    outcome.problems.append("completed, but there is no file; \(context)")
                }
            case .failure(let error)?:
                outcome.ending = Self.errorClass(error)
                if case .cancelled = error.reason { outcome.problems.append("ended as cancelled: \(context)") }
                if !intoDirectory, FileManager.default.fileExists(atPath: path) {
                    outcome.problems.append("failed (\(error)) yet the destination exists; \(context)")
                }
                if let part = Self.fileSize(path + ".part"), part > Self.size {
                    outcome.problems.append("failed (\(error)) leaving a \(part)-byte .part, longer than the \(Self.size)-byte resource; \(context)")
                }
            case nil:
                outcome.ending = "hung"
                outcome.problems.append("did not end within \(Self.deadline); \(context)")
            }
        } catch {
            outcome.ending = "fixture error"
            outcome.problems.append("fixture: \(error); \(tag)")
        }
        return outcome
    }

    @Test(arguments: ChaosTests.seeds, BodyPath.allCases)
    func downloadsAgainstAChaoticServerEndInTheFileOrAClearError(seed: UInt64, path: BodyPath) async throws {
        print("chaos: HAUL_CHAOS_SEED=\(seed), bodies \(path) (set it to replay; HAUL_CHAOS_DOWNLOAD=i runs download i alone)")
        let indices = Self.onlyDownload.map { [$0] } ?? Array(0..<Self.downloads)
        let started = ContinuousClock.now
        var outcomes: [Outcome] = []
        await withTaskGroup(of: Outcome.self) { group in
            var next = indices.makeIterator()
            for _ in 0..<Self.concurrency {
                guard let index = next.next() else { break }
                group.addTask { await runOne(index, seed: seed, bodies: path) }
            }
            while let outcome = await group.next() {
                outcomes.append(outcome)
                if let index = next.next() { group.addTask { await runOne(index, seed: seed, bodies: path) } }
            }
        }
        outcomes.sort { $0.index < $1.index }

        for outcome in outcomes {
            for problem in outcome.problems { Issue.record("download \(outcome.index): \(problem)") }
        }
        var endings: [String: Int] = [:]
        var faults: [MisbehavingServer.ChaosFault: Int] = [:]
        for outcome in outcomes {
            endings[outcome.ending, default: 0] += 1
            for (fault, count) in outcome.faults { faults[fault, default: 0] += count }
        }
        let elapsed = ContinuousClock.now - started
        let spliced = outcomes.reduce(0) { $0 + $1.splicedExchanges }
        print("chaos: exchanges that spliced their body: \(spliced)")
        if path == .received { #expect(spliced == 0, "splicing is off") }
        if path == .spliced, Self.onlyDownload == nil { #expect(spliced > 0, "splicing is on, yet no exchange spliced") }
        print("chaos: HAUL_CHAOS_SEED=\(seed): \(outcomes.count) downloads in \(elapsed), \(outcomes.reduce(0) { $0 + $1.requests }) requests")
        print("chaos: endings: " + endings.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        print("chaos: faults injected: " + MisbehavingServer.ChaosFault.allCases.map { "\($0.rawValue) \(faults[$0] ?? 0)" }.joined(separator: ", "))
        let bad = outcomes.filter { !$0.problems.isEmpty }
        if !bad.isEmpty {
            print("chaos: \(bad.count) downloads broke the rule (file or clear error): " + bad.map { "#\($0.index) \($0.ending)" }.joined(separator: ", "))
        }
    }
}
