import Foundation
import Glibc
import Testing
import HaulTestSupport

/// A download that fails before its first body byte leaves the directory as it was — no empty `NAME.part`,
/// no journal, no directory haul created for it (as wget and curl leave it) — for every such failure and
/// every way of naming the output; and never removes what an earlier run left.
@Suite(.serialized) struct LeftoverTests {
    static var binary: String { HaulCLITests.binary }

    /// Every path under `directory`, relative to it.
    static func listing(_ directory: String) -> Set<String> {
        Set((FileManager.default.enumerator(atPath: directory)?.allObjects as? [String]) ?? [])
    }

    /// A failure before the first body byte, and the URLs that produce it.
    struct Failure {
        let name: String
        let url: (String) -> String
        var extra: [String] = []
    }

    @Test func everyFailureBeforeTheFirstBodyByteLeavesNothing() throws {
        let ca = try TestCertificateAuthority.shared()
        let resource = MisbehavingServer.Resource.pattern(size: 100_000, seed: 3)
        let notFound = try MisbehavingServer(resource: resource, script: .always(.status(404)))
        let notModified = try MisbehavingServer(resource: resource, script: .always(.status(304)))
        let refusedRedirect = try MisbehavingServer(resource: resource, script: .always(.redirect(to: "ftp://127.0.0.1/file.bin")))
        let redirectLoop = try MisbehavingServer(resource: resource, script: .redirects(["/a": "/b", "/b": "/a"]))
        let garbage = try MisbehavingServer(resource: resource, script: .always(.garbageHead))
        let cutBeforeBody = try MisbehavingServer(resource: resource, script: .always(.closeMidBody(afterBytes: 0)))
        let untrusted = try MisbehavingServer(resource: resource, tlsCertificate: ca.server)
        let servers = [notFound, notModified, refusedRedirect, redirectLoop, garbage, cutBeforeBody, untrusted]
        defer { for server in servers { server.stop() } }
        let closedPort = try LoopbackPorts.freePort()
        let failures = [
            Failure(name: "404", url: { notFound.url("/" + $0) }),
            Failure(name: "304", url: { notModified.url("/" + $0) }),
            Failure(name: "refused redirect", url: { refusedRedirect.url("/" + $0) }),
            Failure(name: "redirect loop", url: { _ in redirectLoop.url("/a") }),
            Failure(name: "faulty probe", url: { garbage.url("/" + $0) }),
            Failure(name: "body cut before its first byte", url: { cutBeforeBody.url("/" + $0) }),
            Failure(name: "TLS", url: { untrusted.url("/" + $0) }),
            Failure(name: "refused connection", url: { "http://127.0.0.1:\(closedPort)/" + $0 }),
            Failure(name: "DNS", url: { "http://no-such-host.invalid/" + $0 }),
        ]
        let scratch = try TemporaryDirectory(prefix: "haul-leftovers")
        for failure in failures {
            for form in ["-o", "-d", "-i", "-Z"] {
                let directory = try scratch.makeSubdirectory("\(failure.name)-\(form)".replacingOccurrences(of: " ", with: "-"))
                // Something that was there before stays.
                _ = FileManager.default.createFile(atPath: directory + "/mine.txt", contents: Data("mine".utf8))
                let before = Self.listing(directory)
                let arguments: [String]
                switch form {
                case "-o": arguments = ["-o", directory + "/new/sub/file.bin", failure.url("file.bin")]
                case "-d": arguments = ["-d", directory + "/new", failure.url("file.bin")]
                case "-i":
                    let list = scratch.file("list-\(UUID().uuidString).txt")
                    try "\(failure.url("one.bin"))\n\(failure.url("two.bin"))\tout=named.bin\n".write(toFile: list, atomically: true, encoding: .utf8)
                    arguments = ["-d", directory + "/new", "-i", list]
                default: arguments = ["-Z", "-d", directory + "/new", failure.url("one.bin"), failure.url("two.bin")]
                }
                let run = try ChildProcess.run(Self.binary, ["--retries", "0", "--connect-timeout", "10"] + failure.extra + arguments, timeout: 60)
                #expect(run.exitStatus != 0 && run.exitStatus != 130, "\(failure.name) \(form): \(run.exitStatus) \(run.errorText)")
                #expect(Self.listing(directory) == before, "\(failure.name) \(form): left \(Self.listing(directory).subtracting(before)): \(run.errorText)")
            }
        }
    }

    /// An interrupted download's `.part` and journal are an earlier run's progress: a rerun that fails before
    /// its first byte keeps them, and so does one that fails on a `.part` it found without a journal.
    @Test func aFailedRerunKeepsWhatAnEarlierRunLeft() throws {
        let (scratch, _, server) = try SignalTests.heldServer(size: 3 << 20, seed: 4, heldAt: 1 << 20)
        defer { server.stop() }
        let output = scratch.file("kept.bin")
        // A journal record every 256 KiB: the `.part` and its journal are on disk once haul has written bytes,
        // which is what the interrupt must find (the server having sent them says nothing of haul's progress).
        let arguments = ["--retries", "0", "--checkpoint-bytes", "256K", "-o", output, server.url("/kept.bin")]
        let first = try SignalTests.Running(arguments, errorsPath: scratch.file("stderr"))
        poll { FileManager.default.fileExists(atPath: output + ".part.haul") || !first.isRunning }
        first.send(SIGINT)
        #expect(first.exitStatus() == 130, "\(first.errorText)")
        let interrupted = Self.listing(scratch.path).filter { $0.hasPrefix("kept.bin") }
        #expect(interrupted == ["kept.bin.part", "kept.bin.part.haul"])

        server.setScript(.always(.status(404)))
        let failed = try ChildProcess.run(Self.binary, arguments, timeout: 60)
        #expect(failed.exitStatus == 5, "\(failed.errorText)")
        #expect(Self.listing(scratch.path).filter { $0.hasPrefix("kept.bin") } == interrupted, "the resume's files stay")

        // A `.part` without a journal that was there before is not this run's either.
        let lone = scratch.file("lone.bin")
        _ = FileManager.default.createFile(atPath: lone + ".part", contents: Data("earlier".utf8))
        let alone = try ChildProcess.run(Self.binary, ["--retries", "0", "-o", lone, server.url("/lone.bin")], timeout: 60)
        #expect(alone.exitStatus == 5, "\(alone.errorText)")
        #expect(FileManager.default.fileExists(atPath: lone + ".part"))
        #expect(!FileManager.default.fileExists(atPath: lone + ".part.haul"))
    }
}
