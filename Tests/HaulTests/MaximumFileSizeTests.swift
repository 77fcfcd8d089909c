import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// ``DownloadOptions/maximumFileSize`` (curl's `--max-filesize`): a larger file is refused before a byte of
/// it is written, one without a length is stopped as it grows past the limit, and nothing is left on disk.
@Suite(.serialized) struct MaximumFileSizeTests {
    typealias Behavior = MisbehavingServer.Behavior

    let resource = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 41)

    func options(maximum: Int64?) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 128 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(5), maxDelay: .milliseconds(50))
        options.maximumFileSize = maximum
        return options
    }

    func refusal(_ result: Result<DownloadResult, HaulError>, sourceLocation: SourceLocation = #_sourceLocation) -> (limit: Int, length: Int64?)? {
        guard case .failure(let error) = result, case .responseTooLarge(_, let limit, let length) = error.reason else {
            Issue.record("expected responseTooLarge, got \(result)", sourceLocation: sourceLocation)
            return nil
        }
        return (limit, length)
    }

    @Test func anAnnouncedLengthOverTheLimitIsRefusedBeforeAnyBodyByte() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let (result, _) = try await runToEnd(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f.bin")),
                                             options: options(maximum: 500_000), within: .seconds(120))
        let refused = refusal(result)
        #expect(refused?.limit == 500_000 && refused?.length == Int64(resource.bytes.count))
        #expect(server.requests.count == 1, "the probe only")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test(arguments: [MisbehavingServer.Framing.closeDelimited, .chunked])
    func aBodyWithoutALengthIsStoppedPastTheLimitAndRemoved(framing: MisbehavingServer.Framing) async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: resource, script: .always(Behavior.ignoreRange.with { $0.framing = framing }))
        defer { server.stop() }
        let (result, task) = try await runToEnd(DownloadRequest(url: server.url("/f"), destination: .directory(directory)),
                                                options: options(maximum: 300_000), within: .seconds(120))
        let refused = refusal(result)
        #expect(refused?.limit == 300_000 && refused?.length == nil)
        #expect(task.currentProgress.bytesDone <= 300_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "no .part, no journal")
    }

    @Test func underTheLimitTheFileIsTheResource() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let exact = Int64(resource.bytes.count)
        let (result, _) = try await runToEnd(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f.bin")),
                                             options: options(maximum: exact), within: .seconds(120))
        #expect(try result.get().bytes == exact)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/f.bin"))) == resource.bytes)
    }

    @Test func aMemoryDestinationIsHeldToTheSmallerLimit() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let (result, _) = try await runToEnd(DownloadRequest(url: server.url("/f"), destination: .memory(limit: 4 << 20)),
                                             options: options(maximum: 200_000), within: .seconds(120))
        #expect(refusal(result)?.limit == 200_000)
    }
}
