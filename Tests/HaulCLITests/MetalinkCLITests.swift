import Foundation
import HaulTestSupport
import Testing

/// `haul -M FILE.meta4` against nginx: a Metalink naming two nginx mirrors with the right sha-256 gives the
/// right file; a wrong hash fails with a clear message and a non-zero exit; a hostile name is refused before
/// anything is fetched; a Metalink served by nginx is fetched and followed (`-M URL`).
@Suite(.serialized) struct MetalinkCLITests {
    let fixture = CLIFixture.shared

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-metalink-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func haul(_ arguments: [String], in directory: String) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync"] + arguments, in: directory, timeout: 60)
    }

    /// A one-file Metalink: `name`, its size and sha-256, two nginx URLs of `source` (the second preferred),
    /// with `query` (nginx ignores it) when given, so that a test can tell its requests from others'.
    func document(name: String, source: String, sha256: String, query: String? = nil) throws -> String {
        let suffix = query.map { "?" + $0 } ?? ""
        let size = try FileManager.default.attributesOfItem(atPath: fixture.data + "/" + source)[.size] as! Int
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="\(name)">
                <size>\(size)</size>
                <hash type="sha-256">\(sha256)</hash>
                <url priority="2" location="de">\(fixture.nginx.url("/" + source + suffix))</url>
                <url priority="1">\(fixture.nginx.url("/noranges/" + source + suffix))</url>
              </file>
            </metalink>
            """
    }

    @Test func theRightHashGivesTheFileUnderItsMetalinkName() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let meta4 = directory + "/files.meta4"
        try document(name: "sub/renamed.bin", source: "f9.bin", sha256: fixture.sha256("f9.bin"))
            .write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try haul(["-M", meta4, "-d", directory + "/out"], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/out/sub/renamed.bin") == fixture.sha256("f9.bin"))
        // nginx logs a request when it finalizes it, a moment after haul has the last byte.
        let requested = fixture.nginx.accessLog(waitingUntil: { $0.contains { $0.request.contains("/noranges/f9.bin") } }).map(\.request)
        #expect(requested.contains { $0.contains("/noranges/f9.bin") }, "the preferred mirror (priority 1) was asked: \(requested)")
    }

    @Test func aWrongHashFailsClearlyAndLeavesNoFile() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let meta4 = directory + "/wrong.meta4"
        try document(name: "wrong.bin", source: "f10.bin", sha256: String(repeating: "0", count: 64))
            .write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try haul(["-M", meta4], in: directory)
        #expect(run.exitStatus == 8, "the checksum-mismatch exit status: \(run.errorText)")
        #expect(run.errorText.contains("wrong.bin.part: sha256 is ") && run.errorText.contains("expected " + String(repeating: "0", count: 64)),
                "\(run.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/wrong.bin"), "no file under the final name")
    }

    @Test func aHostileNameIsRefusedBeforeAnythingIsFetched() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let meta4 = directory + "/hostile.meta4"
        // Its URLs carry a query of their own: the shared server's log holds other tests' requests too.
        let marker = "hostile=\(UUID().uuidString)"
        try document(name: "../x", source: "f11.bin", sha256: fixture.sha256("f11.bin"), query: marker)
            .write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try haul(["-M", meta4, "-d", directory + "/out"], in: directory)
        #expect(run.exitStatus == 2, "a usage error: \(run.errorText)")
        #expect(run.errorText.contains("../x") && run.errorText.contains("refused"), "\(run.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/x"))
        #expect(!fixture.nginx.accessLog().contains { $0.target.hasSuffix(marker) }, "nothing was fetched")
    }

    @Test func aMetalinkServedByNginxIsFetchedAndFollowed() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = "served-\(UUID().uuidString).meta4"
        try document(name: "served.bin", source: "f12.bin", sha256: fixture.sha256("f12.bin"))
            .write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: fixture.data + "/" + name) }
        let run = try haul(["--metalink", fixture.nginx.url("/" + name)], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/served.bin") == fixture.sha256("f12.bin"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + name), "the document is kept in memory only")
    }

    @Test func aBrokenDocumentIsAUsageErrorWithTheOffset() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let meta4 = directory + "/broken.meta4"
        try "<!DOCTYPE x><metalink/>".write(toFile: meta4, atomically: true, encoding: .utf8)
        let run = try haul(["-M", meta4], in: directory)
        #expect(run.exitStatus == 2)
        #expect(run.errorText.contains("byte 0") && run.errorText.contains("DOCTYPE"), "\(run.errorText)")
    }

    @Test func aMissingDocumentURLFailsAsADownloadAndURLsWithMIsAUsageError() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = try haul(["-M", fixture.nginx.url("/no-such.meta4")], in: directory)
        #expect(missing.exitStatus == 5, "an HTTP error status: \(missing.errorText)")
        #expect(missing.errorText.contains("--metalink") && missing.errorText.contains("404"), "\(missing.errorText)")
        let unreadable = try haul(["-M", directory + "/none.meta4"], in: directory)
        #expect(unreadable.exitStatus == 2 && unreadable.errorText.contains("cannot read --metalink"), "\(unreadable.errorText)")
        try document(name: "x.bin", source: "f1.bin", sha256: fixture.sha256("f1.bin"))
            .write(toFile: directory + "/x.meta4", atomically: true, encoding: .utf8)
        let both = try haul(["-M", directory + "/x.meta4", fixture.nginx.url("/f1.bin")], in: directory)
        #expect(both.exitStatus == 2 && both.errorText.contains("give no URLs"), "\(both.errorText)")
        let marker = "refused=\(UUID().uuidString)"
        let fetchNot = try haul(["-M", fixture.nginx.url("/x.meta4?" + marker), "-Z"], in: directory)
        #expect(fetchNot.exitStatus == 2 && fetchNot.errorText.contains("give no URLs"), "\(fetchNot.errorText)")
        #expect(!fixture.nginx.accessLog().contains { $0.target.hasSuffix(marker) }, "refused before the document is fetched")
        #expect(!FileManager.default.fileExists(atPath: directory + "/x.bin") && !FileManager.default.fileExists(atPath: directory + "/f1.bin"))
    }

    // MARK: Metalink answers followed (--follow-metalink, the default)

    /// A `.meta4` served by nginx as `application/metalink4+xml` (its `/meta4/` location), named by a plain
    /// URL: followed, its file downloaded from the nginx mirrors it lists and checked against its sha-256;
    /// the document itself is not saved.
    @Test func aURLAnsweredWithAMetalinkDocumentIsFollowed() throws {
        let directory = try scratch()
        let name = "followed-\(UUID().uuidString).meta4"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.data + "/" + name)
        }
        try document(name: "followed.bin", source: "f13.bin", sha256: fixture.sha256("f13.bin"))
            .write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)
        let before = fixture.nginx.accessLog().count
        let run = try haul(["-d", directory + "/out", fixture.nginx.url("/meta4/" + name)], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/out/followed.bin") == fixture.sha256("f13.bin"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/out/" + name), "the document is followed, not saved")
        #expect(!FileManager.default.fileExists(atPath: directory + "/out/" + name + ".part"))
        #expect(run.errorText.contains("Metalink"), "\(run.errorText)")
        let requested = fixture.nginx.accessLog(waitingUntil: { $0.dropFirst(before).contains { $0.request.contains("/noranges/f13.bin") } })
            .dropFirst(before).map(\.request)
        #expect(requested.contains { $0.contains("/noranges/f13.bin") }, "the file came from the mirrors the document lists: \(requested)")

        // A wrong hash in a followed document fails as -M's would: exit 8, nothing under the final name.
        try document(name: "followed-wrong.bin", source: "f13.bin", sha256: String(repeating: "1", count: 64))
            .write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)
        let wrong = try haul(["-d", directory + "/out", fixture.nginx.url("/meta4/" + name)], in: directory)
        #expect(wrong.exitStatus == 8, "\(wrong.errorText)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/out/followed-wrong.bin"))
    }

    /// A followed document is the server's word: the run's `-u` goes with the document's request, never to
    /// another origin the document names (its netrc host would still apply), and a credential header, which
    /// is run-wide, refuses such a file before anything is sent to it.
    @Test func aFollowedDocumentSendsNoCredentialsToAnotherOrigin() throws {
        let elsewhere = MisbehavingServer.Resource.pattern(size: 300_000, seed: 29)
        let server = try MisbehavingServer(resource: elsewhere)
        defer { server.stop() }
        let directory = try scratch()
        let name = "elsewhere-\(UUID().uuidString).meta4"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.data + "/" + name)
        }
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="elsewhere.bin">
                <size>\(elsewhere.bytes.count)</size>
                <hash type="sha-256">\(try TestFiles.sha256(of: elsewhere.bytes))</hash>
                <url>\(server.url("/elsewhere.bin"))</url>
              </file>
            </metalink>
            """.write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)

        let withUser = try haul(["-u", "alice:secret", "-d", directory + "/out", fixture.nginx.url("/meta4/" + name)], in: directory)
        #expect(withUser.exitStatus == 0, "\(withUser.errorText)")
        #expect(try TestFiles.sha256(ofFile: directory + "/out/elsewhere.bin") == TestFiles.sha256(of: elsewhere.bytes))
        #expect(!server.requests.isEmpty && server.requests.allSatisfy { $0.header("Authorization") == nil },
                "-u went to an origin the document chose: \(server.requests.map(\.headerFields))")

        let asked = server.requests.count
        let withHeader = try haul(["-H", "Authorization: Bearer token", "-d", directory + "/again", fixture.nginx.url("/meta4/" + name)],
                                  in: directory)
        #expect(withHeader.exitStatus == 2, "\(withHeader.errorText)")
        #expect(withHeader.errorText.contains("not sent to an origin a server chose"), "\(withHeader.errorText)")
        #expect(server.requests.count == asked, "nothing was sent to the other origin")
        #expect(!FileManager.default.fileExists(atPath: directory + "/again/elsewhere.bin"))
    }

    @Test func noFollowMetalinkSavesTheDocument() throws {
        let directory = try scratch()
        let name = "saved-\(UUID().uuidString).meta4"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.data + "/" + name)
        }
        let text = try document(name: "never.bin", source: "f14.bin", sha256: fixture.sha256("f14.bin"))
        try text.write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)
        let run = try haul(["--no-follow-metalink", "-d", directory, fixture.nginx.url("/meta4/" + name)], in: directory)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(try String(contentsOfFile: directory + "/" + name, encoding: .utf8) == text)
        #expect(!FileManager.default.fileExists(atPath: directory + "/never.bin"))
    }

    /// A Metalink's `<size>` is enforced without a hash: a server serving another length fails the download
    /// clearly (the URL with its host, both lengths), and nothing is left under the final name.
    @Test func aServerThatServesAnotherSizeThanTheMetalinkSaysFails() throws {
        let directory = try scratch()
        let name = "size-\(UUID().uuidString).meta4"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.data + "/" + name)
        }
        let size = try FileManager.default.attributesOfItem(atPath: fixture.data + "/f15.bin")[.size] as! Int
        let text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <metalink xmlns="urn:ietf:params:xml:ns:metalink">
              <file name="sized.bin">
                <size>\(size + 1)</size>
                <url>\(fixture.nginx.url("/f15.bin"))</url>
              </file>
            </metalink>
            """
        try text.write(toFile: fixture.data + "/" + name, atomically: true, encoding: .utf8)
        for arguments in [[fixture.nginx.url("/meta4/" + name)], ["-M", fixture.data + "/" + name]] {
            let result = try haul(["-d", directory + "/out"] + arguments, in: directory)
            #expect(result.exitStatus == 6, "\(result.errorText)")
            #expect(result.errorText.contains("127.0.0.1") && result.errorText.contains("\(size) bytes") && result.errorText.contains("\(size + 1)"),
                    "\(result.errorText)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/out/sized.bin"), "nothing under the final name")
        }
    }
}
