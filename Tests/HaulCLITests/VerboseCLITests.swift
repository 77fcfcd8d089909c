import Foundation
import Testing
import HaulTestSupport

extension HaulCLITests {
    /// `-v` logs the engine's records to stderr: each request with its range, each response's status.
    @Test func verboseLogsRequestsAndResponsesToStandardError() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/f4.bin")
        let run = try haul(["-v", "-c", "1", "-o", directory + "/f4.bin", url])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/f4.bin") == fixture.sha256("f4.bin"))
        let lines = run.errorText.split(separator: "\n").map(String.init)
        let request = try #require(lines.first { $0.hasPrefix("haul: debug: sending request ") }, "\(run.errorText)")
        #expect(request.contains(" haul.range=bytes=0- ") && request.contains(" haul.url=\(url)"), "\(request)")
        let response = try #require(lines.first { $0.hasPrefix("haul: debug: received response head ") }, "\(run.errorText)")
        #expect(response.contains(" haul.status=206"), "\(response)")
        #expect(lines.contains { $0.hasPrefix("haul: debug: download finished ") })

        // Without -v: not one record.
        let quiet = try haul(["-o", directory + "/again.bin", url])
        #expect(quiet.exitStatus == 0, "\(quiet.errorText)")
        #expect(!quiet.errorText.contains("haul: debug:"), "\(quiet.errorText)")
    }
}
