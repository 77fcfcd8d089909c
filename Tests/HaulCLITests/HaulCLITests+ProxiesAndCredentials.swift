import Foundation
import Glibc
import Testing
import HaulTestSupport

/// Proxies (`-x`, the environment, `NO_PROXY`) and credentials (`-u`, the URL, `.netrc`).
extension HaulCLITests {
    @Test func dashXEnvironmentAndNoproxyDecideTheRouteAsInCurl() throws {
        let squid = try SquidProxy(credentials: ("alice", "pw"))
        defer { squid.stop() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Each run fetches a file of its own, so that Squid's log tells the runs apart however late it writes a
        // run's lines: counting lines took a late line of the first run for one of the second.
        let url = fixture.nginx.url("/f6.bin")

        let viaFlag = try haul(["-c", "8", "--min-segment", "4K", "-x", squid.url(user: "alice", password: "pw"), "-o", directory + "/a.bin", url])
        #expect(viaFlag.exitStatus == 0, "\(viaFlag.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/a.bin") == fixture.sha256("f6.bin"))
        let proxied = squid.accessLog(waitingUntil: { $0.count >= 1 })
        #expect(!proxied.isEmpty && proxied.allSatisfy { $0.user == "alice" && $0.url.hasSuffix("/f6.bin") }, "\(proxied)")

        // The environment, read as curl reads it (http_proxy in lower case), unless --noproxy names the host.
        let viaEnvironment = try ChildProcess.run("/usr/bin/env", ["http_proxy=" + squid.url(user: "alice", password: "pw"), Self.binary,
                                                                   "--no-sync", "-o", directory + "/b.bin", fixture.nginx.url("/f7.bin")])
        #expect(viaEnvironment.exitStatus == 0, "\(viaEnvironment.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/b.bin") == fixture.sha256("f7.bin"))
        let afterEnvironment = squid.accessLog(waitingUntil: { $0.contains { $0.url.hasSuffix("/f7.bin") } })
        #expect(afterEnvironment.contains { $0.url.hasSuffix("/f7.bin") && $0.user == "alice" }, "http_proxy was used: \(afterEnvironment)")
        let bypassed = try ChildProcess.run("/usr/bin/env", ["http_proxy=" + squid.url(user: "alice", password: "pw"), Self.binary,
                                                             "--no-sync", "--noproxy", "127.0.0.1", "-o", directory + "/c.bin", fixture.nginx.url("/f8.bin")])
        #expect(bypassed.exitStatus == 0, "\(bypassed.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/c.bin") == fixture.sha256("f8.bin"))
        #expect(!squid.accessLog().contains { $0.url.hasSuffix("/f8.bin") }, "--noproxy went direct")

        let wrong = try haul(["-x", squid.url(user: "alice", password: "nope"), "-o", directory + "/d.bin", url])
        #expect(wrong.exitStatus == 3, "\(wrong.errorText)")
        #expect(wrong.errorText.contains("407"), "\(wrong.errorText)")
        #expect(squid.accessLog().filter { $0.status == 407 }.count <= 2, "a refused password is not retried")

        let unknown = try haul(["-x", "ftp://127.0.0.1:1", "-o", directory + "/e.bin", url])
        #expect(unknown.exitStatus == 2 && unknown.errorText.contains("unsupported proxy scheme"), "\(unknown.errorText)")
    }

    @Test func userPasswordFromDashUTheURLOrNetrcReachesTheServer() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = fixture.nginx.url("/private/f5.bin")
        let refused = try haul(["-c", "2", "-o", directory + "/no.bin", url])
        #expect(refused.exitStatus == 5 && refused.errorText.contains("401"), "\(refused.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/no.bin"))

        let withUser = try haul(["-c", "4", "-u", "alice:s3cret", "-o", directory + "/u.bin", url])
        #expect(withUser.exitStatus == 0, "\(withUser.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/u.bin") == fixture.sha256("f5.bin"))

        let inURL = try haul(["-c", "4", "-o", directory + "/i.bin", url.replacingOccurrences(of: "http://", with: "http://alice:s3cret@")])
        #expect(inURL.exitStatus == 0, "\(inURL.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/i.bin") == fixture.sha256("f5.bin"))

        let netrc = directory + "/netrc"
        try "machine 127.0.0.1\n  login alice\n  password s3cret\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o600)
        let fromNetrc = try haul(["-c", "4", "--netrc-file", netrc, "-o", directory + "/n.bin", url])
        #expect(fromNetrc.exitStatus == 0, "\(fromNetrc.errorText)")
        #expect(!fromNetrc.errorText.contains("can be read by other users"))
        #expect(try TestFiles.sha256(ofFile: directory + "/n.bin") == fixture.sha256("f5.bin"))

        chmod(netrc, 0o644)
        let readable = try haul(["--netrc-file", netrc, "-o", directory + "/r.bin", url])
        #expect(readable.exitStatus == 0, "\(readable.errorText)")
        #expect(readable.errorText.contains("haul: warning: \(netrc) can be read by other users"), "\(readable.errorText)")

        let wrong = try haul(["-u", "alice:nope", "-o", directory + "/w.bin", url])
        #expect(wrong.exitStatus == 5 && wrong.errorText.contains("401"), "\(wrong.errorText)")
    }
}
