import Foundation
import Haul
import HaulSessions
import HaulTestSupport
import Testing
@testable import haul

/// `haul` and `haul queue add` declare a download's options once (`DownloadArguments`), grouped by topic in
/// `--help`, and map them once: the same flags make the same engine options and request from either.
@Suite struct OptionGroupCLITests {
    /// Every shared option, none at its default.
    static let sharedFlags = [
        "-o", "/nonexistent-haul-option-test/x.bin", "--checksum", "sha256=" + String(repeating: "ab", count: 32),
        "--on-change", "restart", "--restart", "--allow-overwrite", "--no-sync", "--checkpoint-bytes", "4M",
        "--checkpoint-interval", "2",
        "-c", "5", "--min-segment", "2M", "--limit-rate", "1M",
        "-H", "X-A: 1", "-u", "alice:secret", "--user-agent", "test/1",
        "--cacert", "/ca.pem", "--capath", "/certs", "-k",
        "--retries", "7", "--connect-timeout", "3", "--stall-timeout", "40", "-Y", "2K", "-y", "20", "--max-time", "600",
    ]

    @Test func theSameFlagsGiveTheSameOptionsAndRequestFromHaulAndQueueAdd() throws {
        let arguments = Self.sharedFlags + ["http://example.invalid/x", "http://mirror.example.invalid/x"]
        let command = try #require(try HaulCommand.parseAsRoot(arguments) as? HaulCommand)
        let plan = try command.plan()
        let (_, download) = try #require(plan.downloads.next())
        let spec = try QueueAdd.parse(arguments).spec()

        let engine = plan.options
        let queued = spec.options.downloadOptions(maximumConnections: engine.maximumConnections)
        #expect(TaskOptions(engine) == spec.options)
        #expect(queued.connections == 5 && queued.connections == engine.connections)
        #expect(queued.minimumSegment == engine.minimumSegment && queued.rateLimit == engine.rateLimit)
        #expect(queued.userAgent == "test/1" && queued.userAgent == engine.userAgent)
        #expect(queued.tls == engine.tls && engine.tls.insecure && engine.tls.caFile == "/ca.pem")
        #expect(queued.timeouts == engine.timeouts && engine.timeouts.connect == .seconds(3))
        #expect(queued.totalTimeout == engine.totalTimeout && queued.lowSpeedLimit == engine.lowSpeedLimit)
        #expect(queued.retry == engine.retry && engine.retry.totalRetries == 7)
        #expect(queued.synchronizesToDisk == engine.synchronizesToDisk && !engine.synchronizesToDisk)
        #expect(queued.checkpointBytes == engine.checkpointBytes && queued.checkpointInterval == engine.checkpointInterval)

        // The request: haul sends -H as the client's headers, a task carries them in its request.
        var expected = download.request
        expected.headers = engine.headers + expected.headers
        // haul follows a Metalink answer (--follow-metalink, its own); a task cannot (TaskSpec.problem()).
        #expect(expected.followsMetalink && !spec.followsMetalink)
        expected.followsMetalink = false
        #expect(spec.request(firstStart: true) == expected)
        #expect(expected.headers.map(\.name) == ["X-A", "Authorization"] && expected.replacesExisting && expected.discardsPartialDownload)
    }

    @Test func queueAddRefusesWhatHaulRefusesWithTheSameMessage() throws {
        for flags in [["-c", "0"], ["--retries=-1"], ["-H", "no colon"], ["--checksum", "sha256=12"]] {
            let arguments = flags + ["http://example.invalid/x"]
            let command = try #require(try HaulCommand.parseAsRoot(arguments) as? HaulCommand)
            var fromHaul = "", fromQueue = ""
            do { _ = try command.plan() } catch { fromHaul = error.message }
            let add = try QueueAdd.parse(arguments)
            do { _ = try add.spec() } catch { fromQueue = error.message }
            #expect(!fromHaul.isEmpty && fromHaul == fromQueue, "\(flags): \(fromHaul) / \(fromQueue)")
        }
    }

    /// The long options of each titled section of a help text, in order.
    static func sections(_ help: String) -> [(title: String, options: [String])] {
        var sections: [(title: String, options: [String])] = []
        for line in help.split(separator: "\n") {
            if let title = line.firstMatch(of: /^([A-Z][A-Z ]+):$/) {
                sections.append((String(title.output.1), []))
            } else if let option = line.firstMatch(of: /^  (?:-[A-Za-z], )?(--[a-z][a-z-]+)/), !sections.isEmpty {
                sections[sections.count - 1].options.append(String(option.output.1))
            }
        }
        return sections
    }

    @Test func helpGroupsTheOptionsByTopicAndQueueAddSharesThem() throws {
        let haul = try ChildProcess.run(HaulCLITests.binary, ["--help"])
        #expect(haul.exitStatus == 0)
        let add = try ChildProcess.run(HaulCLITests.binary, ["queue", "add", "--help"])
        #expect(add.exitStatus == 0)
        let haulSections = Self.sections(haul.outputText)
        #expect(haulSections.map(\.title) == ["ARGUMENTS", "OUTPUT", "CONNECTIONS", "NETWORK", "TLS", "RETRIES AND TIMEOUTS",
                                              "PROGRESS", "LISTS", "FETCH AND REPORT", "OPTIONS", "SUBCOMMANDS"], "\(haul.outputText)")
        let haulOnly = ["OUTPUT": ["--skip-existing"], "NETWORK": ["--proxy", "--noproxy"]]
        let queueSections = Dictionary(uniqueKeysWithValues: Self.sections(add.outputText).map { ($0.title, $0.options) })
        for title in ["OUTPUT", "CONNECTIONS", "NETWORK", "TLS", "RETRIES AND TIMEOUTS"] {
            let inHaul = try #require(haulSections.first { $0.title == title }).options
            #expect(!inHaul.isEmpty)
            #expect(queueSections[title] == inHaul.filter { !(haulOnly[title] ?? []).contains($0) }, "\(title)")
        }
        #expect(haulSections.first { $0.title == "LISTS" }?.options == ["--input-file", "--parallel", "--jobs", "--metalink", "--follow-metalink"])
        #expect(haulSections.first { $0.title == "FETCH AND REPORT" }?.options == ["--write-out", "--max-filesize", "--range", "--head"])
        #expect(haulSections.first { $0.title == "OPTIONS" }?.options == ["--version", "--help"], "nothing left ungrouped")

        // USAGE reads as a download, the subcommands listed on their own.
        #expect(haul.outputText.contains("USAGE: haul [options] URL [MIRROR-URL...]\n       haul [options] -Z URL...\n"), "\(haul.outputText)")
        #expect(add.outputText.contains("USAGE: haul queue add [options] URL [MIRROR-URL...]"), "\(add.outputText)")
    }

    /// The man page's SYNOPSIS is the usage, and its ENVIRONMENT names what haul reads.
    @Test func theManPageHasTheUsageAsSynopsisAndAnEnvironmentSection() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let manual = try String(contentsOfFile: root + "/docs/haul.1", encoding: .utf8)
        let synopsis = try #require(manual.firstRange(of: ".Sh SYNOPSIS\n").map { manual[$0.upperBound...] })
        #expect(synopsis.hasPrefix(".Nm\n.Op Ar options\n.Ar URL\n"), "\(synopsis.prefix(200))")
        let environment = try #require(manual.firstRange(of: ".Sh ENVIRONMENT\n").map { manual[$0.upperBound...] })
        for variable in ["http_proxy", "https_proxy", "all_proxy", "no_proxy", "HOME", "HAUL_STATE_DIR", "XDG_STATE_HOME", "SSL_CERT_FILE", "HAUL_PATH"] {
            #expect(environment.contains(variable), "ENVIRONMENT names \(variable)")
        }
        #expect(manual.components(separatedBy: ".Sh ENVIRONMENT").count == 2)
    }
}
