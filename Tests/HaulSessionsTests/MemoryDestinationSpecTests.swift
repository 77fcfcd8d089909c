import Haul
import Testing
@testable import HaulSessions

/// A background task cannot keep its bytes in memory (they would be the daemon's): such a request is
/// refused with that reason, like a stream, and never becomes a spec without a destination.
@Suite struct MemoryDestinationSpecTests {
    @Test func aMemoryDestinationIsAProblemForABackgroundTask() {
        let spec = TaskSpec(DownloadRequest(url: "https://example.org/config.json", destination: .memory(limit: 1 << 20)))
        let problem = spec.problem()
        #expect(problem?.contains("memory") == true, "\(problem ?? "no problem")")
        #expect(TaskSpec(DownloadRequest(url: "https://example.org/a", destination: .file("/data/a"))).problem() == nil)
    }
}

/// A task cannot follow a Metalink answer (the files it lists would be tasks of their own): refused with that
/// reason; a size and a date are carried.
@Suite struct MetalinkAndDateSpecTests {
    @Test func followingAMetalinkIsAProblemForABackgroundTask() {
        var request = DownloadRequest(url: "https://example.org/a.meta4", destination: .file("/data/a"))
        request.followsMetalink = true
        let problem = TaskSpec(request).problem()
        #expect(problem?.contains("Metalink") == true, "\(problem ?? "no problem")")
        request.followsMetalink = false
        request.expectedSize = 10
        request.modifiedSince = HTTPDate(secondsSinceEpoch: 0)
        let spec = TaskSpec(request)
        #expect(spec.problem() == nil)
        #expect(spec.request(firstStart: true) == request)
    }
}
