import Foundation
import Testing
import HaulTestSupport

extension QueueCLITests {
    /// `haul queue add --url-command`: the daemon runs the task's command when its signed link expires, and the
    /// task completes with the right file.
    @Test func aQueuedTaskRefreshesItsExpiredLinkWithItsURLCommand() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let resource = MisbehavingServer.Resource.pattern(size: URLCommandCLITests.size, seed: 254)
        let server = try URLCommandCLITests().server(resource)
        defer { server.stop() }
        let script = sandbox.root.file("refresh.sh")
        try "echo \"$HAUL_STATUS\" >> '\(sandbox.root.file("calls"))'\necho '\(server.url("/f?sig=new"))'\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        let add = try sandbox.haul(["queue", "add", "-c", "4", "--min-segment", "256K", "--no-sync", "--url-command", "sh '\(script)'",
                                    "-o", sandbox.output + "/f.bin", server.url("/f?sig=old")])
        #expect(add.exitStatus == 0 && add.outputText == "1\n", "\(add.errorText)")
        let wait = try sandbox.haul(["queue", "wait", "1"])
        #expect(wait.exitStatus == 0, "\(wait.errorText)")
        #expect(try TestFiles.sha256(ofFile: sandbox.output + "/f.bin") == TestFiles.sha256(of: resource.bytes))
        #expect(try String(contentsOfFile: sandbox.root.file("calls"), encoding: .utf8) == "403\n")
    }
}
