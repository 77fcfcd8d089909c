import Foundation
import Glibc
import Testing
import HaulTestSupport

/// An exit code for each class of failure, and error lines that say what failed, where, and after how many
/// tries.
extension HaulCLITests {
    @Test func usageErrorsExit2WithAClearMessage() throws {
        let cases: [([String], String)] = [
            (["ftp://example.org/x"], "is not a usable http(s) URL"),
            (["-H", "NoColon", fixture.nginx.url("/f0.bin")], "is not 'Name: value'"),
            (["-H", "X-Bad: a\u{01}b", fixture.nginx.url("/f0.bin")], "cannot be sent"),
            (["--checksum", "sha256=abc", fixture.nginx.url("/f0.bin")], "--checksum"),
            (["--limit-rate", "fast", fixture.nginx.url("/f0.bin")], "limit-rate"),
            (["--no-such-option", fixture.nginx.url("/f0.bin")], "no-such-option"),
            ([], "no URL given"),
        ]
        for (arguments, message) in cases {
            let run = try haul(arguments)
            #expect(run.exitStatus == 2, "\(arguments): \(run.exitStatus) \(run.errorText)")
            #expect(run.errorText.hasPrefix("haul: ") && run.errorText.contains(message), "\(arguments): \(run.errorText)")
        }
    }

    @Test func eachFailureClassHasItsExitCode() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closedPort = try LoopbackPorts.freePort()
        let garbage = try MisbehavingServer(resource: .pattern(size: 1000), script: .always(.garbageHead))
        defer { garbage.stop() }
        let cases: [(String, [String], Int32, String)] = [
            ("network", ["--retries", "0", "http://127.0.0.1:\(closedPort)/x"], 3, "127.0.0.1"),
            ("tls", [fixture.nginx.url("/f0.bin", tls: true)], 4, "certificate"),
            ("http", [fixture.nginx.url("/missing.bin")], 5, "404"),
            ("protocol", ["--retries", "0", garbage.url("/f")], 6, "malformed"),
            ("checksum", ["--checksum", "sha256=" + String(repeating: "0", count: 64), fixture.nginx.url("/f0.bin")], 8, "sha256"),
        ]
        for (name, arguments, status, message) in cases {
            let run = try haul(["-o", directory + "/\(name).bin"] + arguments)
            #expect(run.exitStatus == status, "\(name): \(run.exitStatus) \(run.errorText)")
            #expect(run.errorText.contains(message), "\(name): \(run.errorText)")
            #expect(run.errorText.split(separator: "\n").count == 1, "\(name): one clear line: \(run.errorText)")
        }
        // TLS with the test CA trusted works.
        let trusted = try haul(["--cacert", fixture.ca.caCertificatePath, "-o", directory + "/ok.bin", fixture.nginx.url("/f0.bin", tls: true)])
        #expect(trusted.exitStatus == 0, "\(trusted.errorText)")
    }

    @Test func aFileChangedOnTheServerExits7() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 4 << 20, seed: 1),
                                           script: .changeResource(to: .pattern(size: 4 << 20, seed: 2), fromRequest: 2))
        defer { server.stop() }
        let run = try haul(["-c", "4", "--min-segment", "256K", "-o", directory + "/c.bin", server.url("/f")])
        #expect(run.exitStatus == 7, "\(run.errorText)")
        #expect(run.errorText.contains("changed on the server"), "\(run.errorText)")
    }

    /// One `haul: ` prefix on every error line, whichever part of haul found the error.
    /// The engine's words name the URL and the tries; `--progress json` gives them as fields too.
    @Test func aRetriedFailureNamesTheURLAndTheTries() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closedPort = try LoopbackPorts.freePort()
        let url = "http://127.0.0.1:\(closedPort)/x"
        let run = try haul(["--retries", "2", "-o", directory + "/x.bin", url])
        #expect(run.exitStatus == 3, "\(run.errorText)")
        #expect(run.errorText.hasPrefix("haul: \(url): connect to 127.0.0.1:\(closedPort): "), "\(run.errorText)")
        #expect(run.errorText.hasSuffix(" (after 3 tries)\n"), "--retries 2 is three tries: \(run.errorText)")

        let json = try haul(["-q", "--progress", "json", "--retries", "1", "-o", directory + "/y.bin", url])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.errorText.utf8)) as? [String: Any],
                                  "one JSON object: \(json.errorText)")
        #expect(object["url"] as? String == url)
        #expect((object["attempts"] as? NSNumber)?.intValue == 2)
        #expect((object["message"] as? String)?.hasSuffix(" (after 2 tries)") == true, "\(json.errorText)")
    }

    /// `--retries 7` is seven retries even when every one falls on the same range (the CLI used to stop
    /// after 5 tries a range whatever N was). The server asks for no wait, so the test takes no backoff.
    @Test func retriesAreTheWholeBudgetForOneURL() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 1000), script: .always(.status(503, retryAfter: "0")))
        defer { server.stop() }
        let run = try haul(["--retries", "7", "-o", directory + "/x.bin", server.url("/x")])
        #expect(run.exitStatus == 5, "\(run.errorText)")
        #expect(run.errorText.hasSuffix(" (after 8 tries)\n"), "--retries 7 is eight tries: \(run.errorText)")
    }

    @Test func everyErrorLineHasOnePrefix() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let existing = directory + "/there.bin"
        _ = FileManager.default.createFile(atPath: existing, contents: Data("x".utf8))
        let cases: [[String]] = [
            ["--no-such-option", fixture.nginx.url("/f0.bin")],   // the argument parser
            ["-c", "many", fixture.nginx.url("/f0.bin")],
            ["--progress"],
            ["-o", "a", "-i", directory + "/missing.txt"],        // the plan
            ["--retries", "0", fixture.nginx.url("/missing.bin")],  // the engine
            ["-o", existing, fixture.nginx.url("/f0.bin")],       // the CLI's own wording
        ]
        for arguments in cases {
            let run = try haul(arguments)
            #expect(run.exitStatus != 0)
            let lines = run.errorText.split(separator: "\n")
            #expect(!lines.isEmpty, "\(arguments)")
            for line in lines {
                #expect(line.hasPrefix("haul: ") && !line.hasPrefix("haul: haul:") && !line.contains("Error: "),
                        "\(arguments): \(line)")
            }
            #expect(lines.count == 1, "\(arguments): one line: \(run.errorText)")
        }
    }

    /// With `--progress json`, even with `-q`, every line on stderr is a JSON object: errors too.
    @Test func quietJSONErrorsAreJSONObjects() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cases: [([String], Int32, String)] = [
            (["--retries", "0", "-o", directory + "/x.bin", fixture.nginx.url("/missing.bin")], 5, "http"),
            (["--no-such-option", fixture.nginx.url("/f0.bin")], 2, "usage"),
            (["--checksum", "nope", fixture.nginx.url("/f0.bin")], 2, "usage"),
        ]
        for (arguments, status, className) in cases {
            for quiet in [["-q"], []] {
                let run = try haul(quiet + ["--progress", "json"] + arguments)
                #expect(run.exitStatus == status, "\(arguments): \(run.errorText)")
                let objects = try run.errorText.split(separator: "\n").map { line in
                    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
                }
                let errors = objects.filter { $0["type"] as? String == "error" }
                #expect(errors.count == 1, "\(quiet + arguments): \(run.errorText)")
                #expect((errors.first?["code"] as? NSNumber)?.int32Value == status)
                #expect(errors.first?["class"] as? String == className)
                if quiet == ["-q"] { #expect(objects.count == 1, "-q: the error only: \(run.errorText)") }
            }
        }
    }
}
