import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// A signed redirect target that expires mid-download: the mirror goes back to the URL it was given, follows
/// the redirect to the fresh link, and the download finishes.
@Suite(.serialized) struct ExpiringRedirectTests {
    @Test func anExpiredSignedLinkIsResolvedAgainFromTheGivenURL() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 4 << 20, seed: 14)
        let generation = Mutex(1)
        let served = Mutex(0)
        let server = try MisbehavingServer(resource: resource, script: MisbehavingServer.Script { request in
            if request.target == "/latest" {
                return .redirect(to: "/signed?v=\(generation.withLock { $0 })")
            }
            // The link handed out first stops working after a few ranges; a new one is handed out from then on.
            let count = served.withLock { count -> Int in count += 1; return count }
            if count == 4 { generation.withLock { $0 = 2 } }
            let current = "/signed?v=\(generation.withLock { $0 })"
            return request.target == current ? .normal : .status(403)
        })
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 50, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        let result = try await HaulClient(options: options).download(DownloadRequest(url: server.url("/latest"), destination: .file(directory + "/f")))
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), resource.bytes))
        #expect(result.finalURL.description.hasSuffix("/signed?v=2"))
        let targets = server.requests.map(\.target)
        #expect(targets.filter { $0 == "/latest" }.count >= 2, "went back to the given URL: \(targets)")
        #expect(targets.contains("/signed?v=2"))
    }
}
