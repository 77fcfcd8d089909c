import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// Credentials from URL user info and per-download headers follow the same origin rule end to end.
@Suite(.serialized) struct URLCredentialDownloadTests {
    @Test func userInfoAndPerDownloadHeadersStayWithTheirOrigin() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 2 << 20, seed: 12)
        let target = try MisbehavingServer(resource: resource)
        defer { target.stop() }
        let origin = try MisbehavingServer(resource: resource, script: .always(.redirect(to: target.url("/f"))))
        defer { origin.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: 256 << 10)
        options.retry = .none
        let withUser = origin.url("/f").replacingOccurrences(of: "http://", with: "http://alice:secret@")
        var request = DownloadRequest(url: withUser, destination: .file(directory + "/f"))
        request.headers = [("Cookie", "session=1"), ("X-Trace", "7")]
        let result = try await HaulClient(options: options).download(request)
        #expect(result.bytes == Int64(resource.bytes.count))
        #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: directory + "/f")), resource.bytes))
        #expect(origin.requests.allSatisfy { $0.header("Authorization") == "Basic YWxpY2U6c2VjcmV0" && $0.header("Cookie") == "session=1" })
        #expect(!target.requests.isEmpty)
        #expect(target.requests.allSatisfy { $0.header("Authorization") == nil && $0.header("Cookie") == nil && $0.header("X-Trace") == "7" })
    }
}
