import Foundation
import Logging
import Testing
import HaulTestSupport
@testable import Haul

@Suite(.serialized) struct LoggingTests {
    let fixture = NginxFixture.shared

    @Test func aDownloadLogsItsRequestsWithTheirRangeAndTheResponses() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CapturingLogHandler.Store()
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1)
        options.tls.caFile = fixture.ca.caCertificatePath
        let client = try HaulClient(options: options, logger: CapturingLogHandler.logger(store))
        let url = fixture.nginx.url("/small-0.bin")
        _ = try await client.download(DownloadRequest(url: url, destination: .file(directory + "/s.bin")))

        let started = try #require(store.with("download starting").first)
        #expect(started.metadata["haul.url"] == url)
        #expect(started.metadata["haul.connections"] == "1")
        // One connection: the probe asks for everything from byte 0 and gets all 100,000 bytes as a 206.
        let sent = try #require(store.with("sending request").first)
        #expect(sent.level == .debug)
        #expect(sent.metadata["haul.method"] == "GET")
        #expect(sent.metadata["haul.url"] == url)
        #expect(sent.metadata["haul.range"] == "bytes=0-")
        #expect(sent.metadata["haul.connection"] == "0")
        #expect(sent.metadata["haul.attempt"] == "1")
        let head = try #require(store.with("received response head").first)
        #expect(head.metadata["haul.status"] == "206")
        #expect(head.metadata["haul.content_range"] == "bytes 0-99999/100000")
        #expect(head.metadata["haul.content_length"] == "100000")
        let finished = try #require(store.with("download finished").first)
        #expect(finished.metadata["haul.bytes"] == "100000")
        // Every record of the download carries its id, the same one.
        let ids = Set(store.all.map { $0.metadata["haul.download.id"] })
        #expect(ids.count == 1 && ids.first! != nil, "one download id on every record: \(ids)")
        // Request-level records only: nothing an operator sees at the default level.
        #expect(store.all.allSatisfy { $0.level <= .debug })
    }

    @Test func aDownloadOverSeveralConnectionsLogsEachRange() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CapturingLogHandler.Store()
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 1 << 20)
        options.tls.caFile = fixture.ca.caCertificatePath
        let client = try HaulClient(options: options)
        // The download's own logger wins over the client's (which drops everything).
        let result = try await client.download(DownloadRequest(url: fixture.nginx.url(fixture.bigFile), destination: .file(directory + "/b.bin")),
                                               logger: CapturingLogHandler.logger(store))
        let ranges = store.with("sending request").compactMap { $0.metadata["haul.range"] }
        // The probe's bounded range, then 4 MiB requests that together cover the file exactly once.
        #expect(ranges.first == "bytes=0-\((4 << 20) - 1)")
        var covered: Int64 = 0
        for range in ranges {
            let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int64($0) }
            try #require(bounds.count == 2, "a bounded range: \(range)")
            covered += bounds[1] - bounds[0] + 1
        }
        #expect(covered == Int64(fixture.bigSize), "no byte asked for twice, none left out")
        let statuses = Set(store.with("received response head").compactMap { $0.metadata["haul.status"] })
        #expect(statuses == ["206"])
        let connections = Set(store.with("sending request").compactMap { $0.metadata["haul.connection"] })
        #expect(connections.count == result.connections)
    }

    @Test func aRetryIsLoggedWithItsReasonAndDelay() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 200_000, seed: 5)
        let server = try MisbehavingServer(resource: resource, script: .sequence([.status(503)]))
        defer { server.stop() }
        let store = CapturingLogHandler.Store()
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 5, baseDelay: .milliseconds(20), maxDelay: .milliseconds(50))
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options, logger: CapturingLogHandler.logger(store))
        let result = try await client.download(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f")))
        #expect(result.retries == 1)

        let statuses = store.with("received response head").compactMap { $0.metadata["haul.status"] }
        #expect(statuses == ["503", "206"])
        let retry = try #require(store.with("retrying").first)
        #expect(retry.metadata["haul.reason"]?.contains("503") == true, "the reason names the status: \(retry.metadata)")
        #expect(retry.metadata["haul.attempt"] == "2")
        #expect(retry.metadata["haul.delay"] != nil)
        let attempts = store.with("sending request").compactMap { $0.metadata["haul.attempt"] }
        #expect(attempts == ["1", "2"])
    }

    @Test func theDefaultClientLogsNothing() throws {
        let client = try HaulClient(options: DownloadOptions())
        // Not the process-wide logging system (which an embedder may have bootstrapped): a handler that
        // drops everything, at a level that turns every debug call away before its message is built.
        #expect(client.logger.handler is SwiftLogNoOpLogHandler)
        #expect(client.logger.logLevel == .critical)
    }
}
