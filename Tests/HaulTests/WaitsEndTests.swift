import Foundation
import Glibc
import Testing
import HaulHTTP
import HaulTestSupport
@testable import Haul

/// Every wait ends: a server cannot hold a download, a retry or a response head forever. One test per way
/// a server can hold one, each with a deadline that fails the test if the download hangs (a bound on
/// hanging, not a timing assertion); limits are shortened through the options to keep the tests quick,
/// and the defaults themselves are checked to be finite.
@Suite(.serialized) struct WaitsEndTests {
    typealias Behavior = MisbehavingServer.Behavior

    /// Far above what any download here needs with the fix (a few seconds), far below what it took without
    /// (forever, or minutes of Retry-After).
    static let deadline: Duration = .seconds(60)
    static let seed: UInt64 = 41

    let resource = MisbehavingServer.Resource.pattern(size: 256 << 10, seed: WaitsEndTests.seed)

    /// A low-speed limit of 100 bytes/s over 2 s (the default's rate, a shorter time), two tries per range.
    func options(connections: Int = 2, idle: Duration? = nil) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 64 << 10)
        options.retry = RetryPolicy(triesPerRange: 2, totalRetries: 10, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        // Idle (and so head) timeout off unless asked: only the low-speed limit can end these waits.
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: idle)
        options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: LowSpeedLimit.standard.bytesPerSecond, seconds: 2)
        return options
    }

    /// The download's outcome, or a recorded issue when it did not end within the deadline.
    func outcome(_ url: String, options: DownloadOptions, in directory: String) async throws -> Result<DownloadResult, HaulError>? {
        print("WaitsEndTests: resource seed \(Self.seed)")
        let task = try HaulClient(options: options).start(DownloadRequest(url: url, destination: .file(directory + "/f")))
        guard let result = await outcomeWithin(Self.deadline, of: task) else {
            Issue.record("the download of \(url) did not end within \(Self.deadline)")
            return nil
        }
        return result
    }

    // MARK: The defaults

    /// With default settings every wait has an end: connect, handshake, stall, head, a trickle, a
    /// `Retry-After`, and the tries.
    @Test func theDefaultsBoundEveryWait() {
        let options = DownloadOptions()
        #expect(options.timeouts.idle != nil && options.timeouts.effectiveHead != nil)
        #expect(options.lowSpeedLimit == LowSpeedLimit(bytesPerSecond: 100, seconds: 60))
        #expect(options.retry.maxRetryAfter == .seconds(60))
        #expect(options.retry.triesPerRange == 5 && options.retry.totalRetries == 100)
    }

    // MARK: Retry-After

    /// A `Retry-After` past the bound (60 s by default) fails the try at once — as seconds or as an HTTP-date,
    /// on a 503 or a 429 — and counts like any failed try: the default tries per range on the policy's own
    /// backoff (seconds, not the asked wait), then an error with the URL, the status, the asked wait and the bound.
    @Test(arguments: ["503 after 999999999 s", "503 after 61 s", "429 until tomorrow (HTTP-date)"])
    func aRetryAfterPastTheBoundFailsEachTryAtOnce(name: String) async throws {
        let status = name.hasPrefix("429") ? 429 : 503
        let value = switch name {
        case "503 after 999999999 s": "999999999"
        case "503 after 61 s": "61"
        default: HTTPDate(secondsSinceEpoch: Int64(time(nil)) + 86_400).description
        }
        let server = try MisbehavingServer(resource: resource, script: .always(.status(status, retryAfter: value)))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 2)
        options.retry = RetryPolicy()   // the default bound
        guard let result = try await outcome(server.url("/f"), options: options, in: directory) else { return }
        guard case .failure(let error) = result,
              case .retryAfterTooLong(let url, let refusedStatus, let asked, let limit) = error.reason else {
            Issue.record("\(name): expected a refused Retry-After, got \(result)")
            return
        }
        #expect(url == server.url("/f") && refusedStatus == status && limit == .seconds(60), "\(error)")
        #expect(asked > .seconds(60), "\(name): \(asked)")
        let tries = RetryPolicy().triesPerRange
        #expect(error.attempts == tries && server.requests.count == tries, "\(name): \(error.attempts) tries, \(server.requests.count) requests")
        #expect(String(describing: error).contains(server.url("/f")) && String(describing: error).contains("60 s"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
    }

    /// Within the bound, a `429` with an HTTP-date `Retry-After` is waited for and the download finishes.
    @Test func aRetryAfterWithinTheBoundIsWaitedFor() async throws {
        let soon = HTTPDate(secondsSinceEpoch: Int64(time(nil)) + 1).description
        let server = try MisbehavingServer(resource: resource, script: .sequence([.status(429, retryAfter: soon)]))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let result = try await outcome(server.url("/f"), options: options(idle: .seconds(30)), in: directory) else { return }
        guard case .success(let downloaded) = result else {
            Issue.record("expected the download to finish after the wait, got \(result)")
            return
        }
        #expect(downloaded.retries == 1)
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), resource.bytes))
    }

    // MARK: The low-speed limit, in every phase

    /// However a server holds a connection, the low-speed limit closes it and the range (or the whole file)
    /// is tried again, and the tries are counted: a server that holds every try fails the download with
    /// ``HaulError/Reason/belowSpeedLimit(url:limit:)`` after `triesPerRange` tries.
    @Test(arguments: [
        "whole 200 of unknown length (chunked), 1 byte/s",
        "whole 200 of unknown length (close-delimited), 1 byte/s",
        "whole 200 of known length, 1 byte/s",
        "probe head dripped 1 byte per 500 ms",
        "100 Continue forever",
        "whole 200 stalled after 1000 bytes",
        "single connection, ranged body 1 byte/s",
        "whole 200 of unknown length, a byte just inside the idle timeout",
    ])
    func aServerCannotHoldAConnection(name: String) async throws {
        let trickle = Behavior.drip(bytes: 1, everyMilliseconds: 1000)
        var connections = 2
        var idle: Duration?
        let behavior: Behavior
        switch name {
        case "whole 200 of unknown length (chunked), 1 byte/s":
            behavior = trickle.with { $0.rangeHandling = .ignore; $0.framing = .chunked }
        case "whole 200 of unknown length (close-delimited), 1 byte/s":
            behavior = trickle.with { $0.rangeHandling = .ignore; $0.framing = .closeDelimited }
        case "whole 200 of known length, 1 byte/s":
            behavior = trickle.with { $0.rangeHandling = .ignore }
        case "probe head dripped 1 byte per 500 ms":
            behavior = .dripHead(bytes: 1, everyMilliseconds: 500)
        case "100 Continue forever":
            // The parser refuses a sixth interim response too: whichever comes first ends the try.
            behavior = .interimFlood(everyMilliseconds: 1000)
        case "whole 200 stalled after 1000 bytes":
            behavior = Behavior.stallMidBody(afterBytes: 1000, .untilStopped).with { $0.rangeHandling = .ignore; $0.framing = .chunked }
        case "single connection, ranged body 1 byte/s":
            behavior = trickle
            connections = 1
        default:
            // The idle timeout is on (2 s) and never fires: a byte comes every 1.5 s.
            behavior = Behavior.drip(bytes: 1, everyMilliseconds: 1500).with { $0.rangeHandling = .ignore; $0.framing = .chunked }
            idle = .seconds(2)
        }
        let server = try MisbehavingServer(resource: resource, script: .always(behavior))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let options = options(connections: connections, idle: idle)
        guard let result = try await outcome(server.url("/f"), options: options, in: directory) else {
            Issue.record("\(name): held forever")
            return
        }
        guard case .failure(let error) = result else {
            Issue.record("\(name): expected the low-speed limit to end it, got \(result)")
            return
        }
        #expect(error.attempts == options.retry.triesPerRange, "\(name): each try held, each counted: \(error)")
        if case .belowSpeedLimit(let url, let limit) = error.reason {
            #expect(url == server.url("/f") && limit == options.lowSpeedLimit, "\(name): \(error)")
            #expect(String(describing: error).contains("below 100 bytes/s for 2 s"), "\(error)")
        } else if name == "100 Continue forever", case .malformedResponse(let parseError, _) = error.reason,
                  case .tooManyInterimResponses = parseError.kind {
            // The parser's interim limit came first: it ends the try as well.
        } else {
            Issue.record("\(name): expected the low-speed limit to end it, got \(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
    }

    /// haul's own pacing is not a slow server: a rate limit far under the low-speed limit lowers the limit
    /// instead of closing every connection it paces.
    @Test func aRateLimitUnderTheLowSpeedLimitIsNotASlowServer() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(connections: 2, idle: .seconds(30))
        // About 7 s for the file, 16 KiB/s a connection: long enough for the speed watch to look several times.
        options.rateLimit = 32 << 10
        options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1 << 20, seconds: 1)
        guard let result = try await outcome(server.url("/f"), options: options, in: directory) else { return }
        guard case .success(let downloaded) = result else {
            Issue.record("expected the paced download to finish, got \(result)")
            return
        }
        #expect(downloaded.retries == 0, "no connection was closed for going at the pace it was held to")
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), resource.bytes))
    }
}
