import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// A signed link that starts answering 403 mid-download, refreshed through the API's closure
/// (``HaulClient/download(_:logger:refreshingURL:)``): the right file with nothing fetched twice, and a
/// refreshed URL that serves another version never mixed in.
@Suite(.serialized) struct URLRefreshTests {
    static let size = 16 << 20

    /// `/f?sig=old` serves `resource` for its first `goodRequests` requests, then 403; `/f?sig=new` serves `fresh`.
    func server(_ resource: MisbehavingServer.Resource, fresh: MisbehavingServer.Resource? = nil, goodRequests: Int = 2) throws -> MisbehavingServer {
        let served = Mutex(0)
        return try MisbehavingServer(resource: resource, script: MisbehavingServer.Script { request in
            switch request.target {
            case "/f?sig=old":
                let count = served.withLock { count -> Int in count += 1; return count }
                return count > goodRequests ? .status(403) : .normal
            case "/f?sig=new": return fresh.map { .serve($0) } ?? .normal
            default: return .status(404)
            }
        })
    }

    func client() throws -> HaulClient {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 50, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        return try HaulClient(options: options)
    }

    @Test func anExpiredLinkIsRefreshedByTheClosureAndNothingIsFetchedTwice() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 25)
        let server = try server(resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let asked = Mutex<[String]>([])
        let fresh = try HTTPURL(server.url("/f?sig=new"))
        let result = try await client().download(DownloadRequest(url: server.url("/f?sig=old"), destination: .file(directory + "/f"))) { expired, failure in
            asked.withLock { $0.append("\(expired) \(failure.reason)") }
            return fresh
        }
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), resource.bytes))
        let calls = asked.withLock { $0 }
        #expect(calls.count == 1 && calls[0].contains("sig=old") && calls[0].contains("403"), "\(calls)")
        let served = server.exchanges.filter { $0.status == 206 || $0.status == 200 }
        #expect(served.map(\.bodyBytesSent).reduce(0, +) == Self.size,
                "nothing fetched twice: \(served.map { "\($0.request.target) \($0.bodyOffset ?? -1)+\($0.bodyBytesSent)" })")
        #expect(server.requests.contains { $0.target == "/f?sig=new" })
        #expect(result.finalURL == fresh)
    }

    @Test func aRefreshedURLServingAnotherVersionFailsOrStartsOverAndNothingOfItIsMixedIn() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 26)
        let other = resource.otherVersion
        for policy in [ChangePolicy.fail, .restart] {
            let server = try server(resource, fresh: other)
            defer { server.stop() }
            let directory = try scratchDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let fresh = try HTTPURL(server.url("/f?sig=new"))
            let request = DownloadRequest(url: server.url("/f?sig=old"), destination: .file(directory + "/f"), ifChangedOnServer: policy)
            do {
                _ = try await client().download(request) { _, _ in fresh }
                #expect(policy == .restart, "a change with --on-change fail must fail")
                #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), other.bytes), "started over: all of the new version")
            } catch let error as HaulError {
                #expect(policy == .fail, "\(error)")
                guard case .changedOnServer = error.reason else { Issue.record("expected a change, got \(error)"); continue }
                let part = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/f.part")))
                // Unwritten bytes are zeros; every written byte differs between the versions (one is the other XOR 0xA5).
                let mixed = zip(part, other.bytes).filter { $0 == $1 && $1 != 0 }.count
                #expect(part.count == Self.size && mixed == 0, "\(mixed) bytes of the other version written")
            }
        }
    }

    @Test func aRefresherWithoutAURLFailsWithTheExpiry() async throws {
        let server = try server(.pattern(size: Self.size, seed: 27))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            _ = try await client().download(DownloadRequest(url: server.url("/f?sig=old"), destination: .file(directory + "/f"))) { _, _ in nil }
            Issue.record("finished from an expired link")
        } catch let error as HaulError {
            guard case .httpStatus(403, _, _) = error.reason else { Issue.record("expected the 403, got \(error)"); return }
        }
        #expect(!server.requests.contains { $0.target == "/f?sig=new" })
    }
}
