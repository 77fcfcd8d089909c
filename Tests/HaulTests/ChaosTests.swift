import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// Many downloads against servers that pick a fault for about a third of their responses
/// (``MisbehavingServer/Script/chaos(seed:faultRate:faults:)``). Every download must end in the exact file
/// or a clear ``HaulError`` with no destination file and no `.part` longer than the resource.
///
/// The seed comes from `HAUL_CHAOS_SEED` (decimal or `0x` hex) or a fixed default, and is printed first and
/// in every failure message. Download `i` uses the server seed `SplitMix64(seed ^ i)`; set
/// `HAUL_CHAOS_DOWNLOAD=i` to run only that one again.
@Suite(.serialized) struct ChaosTests {
    static let size = 2 << 20
    static let downloads = 100
    /// Downloads running at once (each with its own server and directory), to stay within about a minute.
    static let concurrency = 4
    /// Longest any one download may take before the test gives up on it (a hang is a failure).
    static let deadline: Duration = .seconds(30)
    static let defaultSeed: UInt64 = 20_261_124

    static var seed: UInt64 {
        guard let text = ProcessInfo.processInfo.environment["HAUL_CHAOS_SEED"]?.trimmingCharacters(in: .whitespaces) else {
            return defaultSeed
        }
        if text.lowercased().hasPrefix("0x") { return UInt64(text.dropFirst(2), radix: 16) ?? defaultSeed }
        return UInt64(text) ?? defaultSeed
    }

    static var onlyDownload: Int? {
        ProcessInfo.processInfo.environment["HAUL_CHAOS_DOWNLOAD"].flatMap { Int($0) }
    }

    let resource = MisbehavingServer.Resource.pattern(size: ChaosTests.size, seed: 31)

    func options() -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 8, minimumSegment: 64 << 10)
        options.timeouts = ConnectionTimeouts(connect: .seconds(2), tlsHandshake: .seconds(2), idle: .seconds(1))
        options.retry = RetryPolicy(triesPerRange: 8, totalRetries: 200, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50),
                                    maxRetryAfter: .seconds(1))
        options.checkpointBytes = 256 << 10  // journal as it goes, so that checkpoints meet the faults too
        return options
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

    func runOne(_ index: Int, seed: UInt64) async -> Outcome {
        let serverSeed = Self.serverSeed(seed, download: index)
        let tag = "HAUL_CHAOS_SEED=\(seed) HAUL_CHAOS_DOWNLOAD=\(index) (server seed \(serverSeed))"
        var outcome = Outcome(index: index, serverSeed: serverSeed, ending: "not started", faults: [:], requests: 0, problems: [])
        do {
            let server = try MisbehavingServer(resource: resource, script: .chaos(seed: serverSeed))
            defer { server.stop() }
            let directory = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/f"
            let task = try HaulClient(options: options()).start(DownloadRequest(url: server.url("/f"), destination: .file(path)))
            let result = await outcomeWithin(Self.deadline, of: task)
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
                if let bytes, !sameBytes(bytes, resource.bytes) {
                    let difference = (0..<min(bytes.count, Self.size)).first { bytes[$0] != resource.bytes[$0] } ?? min(bytes.count, Self.size)
                    outcome.problems.append("completed, but the file is \(bytes.count) bytes and differs from the resource from offset \(difference) on; \(context)")
                } else if bytes == nil {
                    outcome.problems.append("completed, but there is no file; \(context)")
                }
            case .failure(let error)?:
                outcome.ending = Self.errorClass(error)
                if case .cancelled = error.reason { outcome.problems.append("ended as cancelled: \(context)") }
                if FileManager.default.fileExists(atPath: path) {
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

    @Test func downloadsAgainstAChaoticServerEndInTheFileOrAClearError() async throws {
        let seed = Self.seed
        print("chaos: HAUL_CHAOS_SEED=\(seed) (set it to replay; HAUL_CHAOS_DOWNLOAD=i runs download i alone)")
        let indices = Self.onlyDownload.map { [$0] } ?? Array(0..<Self.downloads)
        let started = ContinuousClock.now
        var outcomes: [Outcome] = []
        await withTaskGroup(of: Outcome.self) { group in
            var next = indices.makeIterator()
            for _ in 0..<Self.concurrency {
                guard let index = next.next() else { break }
                group.addTask { await runOne(index, seed: seed) }
            }
            while let outcome = await group.next() {
                outcomes.append(outcome)
                if let index = next.next() { group.addTask { await runOne(index, seed: seed) } }
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
        print("chaos: HAUL_CHAOS_SEED=\(seed): \(outcomes.count) downloads in \(elapsed), \(outcomes.reduce(0) { $0 + $1.requests }) requests")
        print("chaos: endings: " + endings.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        print("chaos: faults injected: " + MisbehavingServer.ChaosFault.allCases.map { "\($0.rawValue) \(faults[$0] ?? 0)" }.joined(separator: ", "))
        let bad = outcomes.filter { !$0.problems.isEmpty }
        if !bad.isEmpty {
            print("chaos: \(bad.count) downloads broke the rule (file or clear error): " + bad.map { "#\($0.index) \($0.ending)" }.joined(separator: ", "))
        }
    }
}
