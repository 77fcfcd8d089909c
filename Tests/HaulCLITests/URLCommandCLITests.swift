import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport

/// `--url-command`: a signed link that starts answering 403 after a few requests, refreshed by a tiny shell
/// script in the test's directory; a refreshed URL with another file; a command that hangs, fails or prints
/// nothing.
@Suite(.serialized) struct URLCommandCLITests {
    static let size = 16 << 20

    /// `/f?sig=old` serves `resource` for its first two requests, then 403; `/f?sig=new` serves `fresh`.
    func server(_ resource: MisbehavingServer.Resource, fresh: MisbehavingServer.Resource? = nil) throws -> MisbehavingServer {
        let served = Mutex(0)
        return try MisbehavingServer(resource: resource, script: MisbehavingServer.Script { request in
            switch request.target {
            case "/f?sig=old":
                let count = served.withLock { count -> Int in count += 1; return count }
                return count > 2 ? .status(403) : .normal
            case "/f?sig=new": return fresh.map { .serve($0) } ?? .normal
            default: return .status(404)
            }
        })
    }

    func haul(_ arguments: [String]) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync", "-c", "4", "--min-segment", "256K", "--progress", "none"] + arguments, timeout: 60)
    }

    /// A script that records how it was called in `calls` and prints `url`.
    func script(in directory: TemporaryDirectory, printing url: String) throws -> String {
        let path = directory.file("refresh.sh")
        try "echo \"$HAUL_STATUS $HAUL_URL\" >> '\(directory.file("calls"))'\necho '\(url)'\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func anExpiredLinkIsRefreshedByTheCommandWithNothingFetchedTwice() throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 251)
        let server = try server(resource)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let refresh = try script(in: directory, printing: server.url("/f?sig=new"))
        let run = try haul(["--url-command", "sh '\(refresh)'", "-o", directory.file("f"), server.url("/f?sig=old")])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory.file("f")) == TestFiles.sha256(of: resource.bytes))
        let calls = try String(contentsOfFile: directory.file("calls"), encoding: .utf8)
        #expect(calls == "403 \(server.url("/f?sig=old"))\n", "asked once, with the status and the expired URL")
        let served = server.exchanges.filter { $0.status == 206 || $0.status == 200 }.map(\.bodyBytesSent).reduce(0, +)
        #expect(served == Self.size, "nothing fetched twice")
    }

    @Test func aRefreshedURLWithAnotherFileIsAChangeAndNothingOfItIsWritten() throws {
        let resource = MisbehavingServer.Resource.pattern(size: Self.size, seed: 252)
        let server = try server(resource, fresh: resource.otherVersion)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let refresh = try script(in: directory, printing: server.url("/f?sig=new"))
        let run = try haul(["--url-command", "sh '\(refresh)'", "-o", directory.file("f"), server.url("/f?sig=old")])
        #expect(run.exitStatus == 7 && run.errorText.contains("changed"), "\(run.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("f")))
        let part = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.file("f.part"))))
        let other = resource.otherVersion.bytes
        // Unwritten bytes are zeros; every byte differs between the versions.
        #expect(zip(part, other).filter { $0 == $1 && $1 != 0 }.count == 0, "bytes of the other file written")
    }

    @Test func aCommandThatHangsIsKilledWithWhatItStartedAndOneThatFailsGivesUp() throws {
        let server = try server(.pattern(size: Self.size, seed: 253))
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let started = ContinuousClock.now
        let hung = try haul(["--url-command", "sleep 60 & echo $! > '\(directory.file("pid"))'; wait", "--url-command-timeout", "1",
                             "-o", directory.file("f"), server.url("/f?sig=old")])
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(hung.exitStatus == 5 && hung.errorText.contains("did not finish within 1 s") && hung.errorText.contains("403"), "\(hung.errorText)")
        let pid = try #require(Int32(try String(contentsOfFile: directory.file("pid"), encoding: .utf8).filter(\.isNumber)))
        #expect(poll(every: .milliseconds(10), within: 30) { !ProcessLiveness.isAlive(pid) }, "the command's child was killed too")

        for (command, said) in [("exit 3", "exited with status 3"), ("true", "printed no URL"), ("echo ftp://x/y", "not a usable http(s) URL")] {
            // A fresh link each time: the expiry comes after the download has begun.
            let server = try self.server(.pattern(size: Self.size, seed: 253))
            defer { server.stop() }
            let run = try haul(["--url-command", command, "--restart", "-o", directory.file("g"), server.url("/f?sig=old")])
            #expect(run.exitStatus == 5 && run.errorText.contains(said) && run.errorText.contains("403"), "\(command): \(run.errorText)")
        }
    }

    @Test func theOptionIsCheckedBeforeAnythingIsFetched() throws {
        for (arguments, said) in [(["--url-command-timeout", "5"], "needs --url-command"), (["--url-command", " "], "must not be empty"),
                                  (["--url-command", "true", "--url-command-timeout", "0"], "between")] {
            let run = try haul(arguments + ["-o", "/nonexistent/f", "http://127.0.0.1:9/f"])
            #expect(run.exitStatus == 2 && run.errorText.contains(said), "\(arguments): \(run.errorText)")
        }
    }
}
