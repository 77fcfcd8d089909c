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
