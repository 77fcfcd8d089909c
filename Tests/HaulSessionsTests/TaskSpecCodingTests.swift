import Foundation
import Haul
import Testing
@testable import HaulSessions

/// A task spec through `Codable` (the request in `DownloadRequest`'s own encoding), the first shape still
/// read, and every field of the spec and its options surviving the trip.
@Suite struct TaskSpecCodingTests {
    /// A spec in which every leaf (every stored property, down through TaskOptions' timeouts, TLS and retry
    /// settings) differs from a default spec's.
    static let everyFieldSet: TaskSpec = {
        var spec = TaskSpec(url: "https://example.org/a.iso", mirrors: ["https://mirror.example.net/a.iso"],
                            destination: .directory("/data"))
        spec.createsDirectories = false
        spec.replacesExisting = true
        spec.checksum = try! Checksum("sha512=" + String(repeating: "cd", count: 64))
        spec.ifChangedOnServer = .restart
        spec.discardsPartialDownload = true
        spec.onlyIfChanged = true
        spec.setsRemoteTime = true
        spec.pieceHashes = try! PieceHashes(length: 1 << 20, algorithm: .sha256, digests: [String(repeating: "ab", count: 32)])
        spec.modifiedSince = HTTPDate(secondsSinceEpoch: 1_630_497_600)
        spec.expectedSize = 12345
        spec.followsMetalink = true
        spec.headers = [TaskHeader(name: "X-Token", value: "t\u{e9}st"), TaskHeader(name: "Authorization", value: "Basic YTpi")]
        var options = TaskOptions()
        options.connections = 4
        options.minimumSegment = 2 << 20
        options.userAgent = "test/1"
        options.timeouts = ConnectionTimeouts(connect: .seconds(3), tlsHandshake: .seconds(4), idle: .seconds(50), head: .seconds(20))
        options.totalTimeout = .seconds(3600)
        options.tls.minimumVersion = .tls13
        options.tls.caFile = "/ca.pem"
        options.tls.caDirectory = "/certs"
        options.tls.insecure = true
        options.tls.applicationProtocols = ["http/1.1", "x-test"]
        options.tls.resumesSessions = false
        options.tls.clientCertificate = TLSSettings.ClientCertificate(certificateFile: "/client.pem", keyFile: "/client.key")
        options.network = NetworkSettings(
            resolve: [try! ResolveRule(parsing: "example.org:443:127.0.0.1")], connectTo: [try! ConnectToRule(parsing: "::mirror.example.net:8443")],
            addressFamily: .ipv4, interface: .device("lo"))
        options.rateLimit = 1 << 20
        options.retry = RetryPolicy(triesPerRange: 7, totalRetries: 9, baseDelay: .milliseconds(100), maxDelay: .seconds(2),
                                    maxRetryAfter: .seconds(30))
        options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1000, seconds: 10)
        options.synchronizesToDisk = false
        options.checkpointBytes = 1 << 20
        options.checkpointInterval = .seconds(2)
        spec.options = options
        spec.hook = "echo done"
        spec.urlCommand = URLCommand("sign-url \"$HAUL_URL\"", timeout: .milliseconds(2500))
        return spec
    }()

    /// The paths of the leaves of `value` equal to those of `reference`. Collections, enums, optionals and
    /// `Duration`s are leaves; structs are walked.
    static func unchangedLeaves(_ value: Any, _ reference: Any, path: String) -> [String] {
        let mirror = Mirror(reflecting: value)
        let isLeaf = mirror.children.isEmpty || value is Duration
            || [.enum, .optional, .collection, .dictionary, .set, .tuple].contains(mirror.displayStyle)
        if isLeaf { return String(reflecting: value) == String(reflecting: reference) ? [path] : [] }
        let referenceChildren = Array(Mirror(reflecting: reference).children)
        return zip(mirror.children, referenceChildren).flatMap { child, referenceChild in
            unchangedLeaves(child.value, referenceChild.value, path: path + "." + (child.label ?? "?"))
        }
    }

    /// `--url-command`: a record written before it existed has none; the default timeout is not written; a
    /// timeout without a command is refused.
    @Test func aURLCommandIsKeptWithItsTimeoutAndOldRecordsHaveNone() throws {
        var spec = TaskSpec(url: "https://example.org/a.iso", destination: .file("/data/a.iso"))
        let old = try TaskSpec(json: try JSONParser.parse(Array(spec.json.serialized.utf8)))
        #expect(old.urlCommand == nil)
        spec.urlCommand = URLCommand("echo https://example.org/b.iso")
        let text = spec.json.serialized
        #expect(text.contains("urlCommand") && !text.contains("urlCommandTimeoutMs"), "\(text)")
        #expect(try TaskSpec(json: try JSONParser.parse(Array(text.utf8))).urlCommand == URLCommand("echo https://example.org/b.iso"))
        spec.urlCommand = nil
        let orphan = String(spec.json.serialized.dropLast()) + #","urlCommandTimeoutMs":5000}"#
        #expect(throws: (any Error).self) { try TaskSpec(json: try JSONParser.parse(Array(orphan.utf8))) }
        spec.urlCommand = URLCommand("echo https://example.org/b.iso", timeout: .seconds(5))
        #expect(try TaskSpec(json: try JSONParser.parse(Array(orphan.replacingOccurrences(of: #""urlCommandTimeoutMs""#, with: #""urlCommand":"echo https://example.org/b.iso","urlCommandTimeoutMs""#).utf8))) == spec,
                "the same record with its command reads back")
    }

    /// A field left out of both the encoder and the decoder comes back as its default: the sample sets every
    /// field (checked, so that a new field must be set here too), and the trip must give it back whole.
    @Test func everyFieldOfASpecAndItsOptionsSurvivesTheTrip() throws {
        let sample = Self.everyFieldSet
        let unchanged = Self.unchangedLeaves(sample, TaskSpec(url: "http://h/x", destination: .file("/x")), path: "spec")
        #expect(unchanged.isEmpty, "set these in the sample (and encode them): \(unchanged)")
        let text = sample.json.serialized
        let read = try TaskSpec(json: try JSONParser.parse(Array(text.utf8)))
        #expect(read == sample, "\(text)")
        #expect(read.json.serialized == text, "the same spec, the same bytes")
    }

    /// Every field of a request reaches the task (a field `DownloadRequest` gains must be carried by
    /// `TaskSpec` too): set them all, and the task's request is the same, its credentials as the
    /// `Authorization` header they are sent as.
    @Test func everyFieldOfARequestReachesTheTask() throws {
        var request = DownloadRequest(url: "https://example.org/a.iso", mirrors: ["https://m.example.net/a.iso"],
                                      destination: .directory("/data"), createsDirectories: true, replacesExisting: true,
                                      checksum: try Checksum("md5=" + String(repeating: "0f", count: 16)), ifChangedOnServer: .restart,
                                      discardsPartialDownload: true, headers: [("X-A", "1")],
                                      credentials: DownloadRequest.Credentials(user: "alice", password: "secret"))
        request.onlyIfChanged = true
        request.setsRemoteTime = true
        request.pieceHashes = try PieceHashes(length: 4, algorithm: .md5, digests: [String(repeating: "0f", count: 16)])
        request.modifiedSince = HTTPDate(secondsSinceEpoch: 1_630_497_600)
        request.expectedSize = 4096
        request.followsMetalink = true
        // `parsedURLCache` is the request's `url` parsed once (a cache), `listedAbsentPath` a hint from its caller's
        // listing of the directory: neither is part of the value (not compared, not encoded).
        let unchanged = Self.unchangedLeaves(request, DownloadRequest(url: "http://h/x", destination: .file("/x")), path: "request")
            .filter { $0 != "request.parsedURLCache" && $0 != "request.listedAbsentPath" }
        #expect(unchanged.isEmpty, "set these in the sample: \(unchanged)")
        let spec = TaskSpec(request, options: TaskOptions())
        request.headers = request.headersWithCredentials
        request.credentials = nil
        #expect(spec.request(firstStart: true) == request)
        #expect(try TaskSpec(json: spec.json).request(firstStart: true) == request)
        #expect(spec.request(firstStart: false).discardsPartialDownload == false, "only the first start discards")
    }

    /// Queues written before the spec was encoded through `Codable` hold the first shape: still read, to the
    /// same spec.
    @Test func aSpecWrittenInTheFirstShapeStillDecodes() throws {
        let first = #"""
            {"url":"https://example.org/a.iso","mirrors":["https://mirror.example.net/a.iso"],"path":"/data/a.iso",\#
            "createDirectories":false,"replaceExisting":true,"checksum":"sha256=\#(String(repeating: "ab", count: 32))",\#
            "onChange":"restart","restart":true,"headers":[["X-Token","t\u00e9st"],["Authorization","Basic YTpi"]],\#
            "options":{"connections":4,"minSegment":2097152,"userAgent":"test/1","connectTimeoutMs":3000,\#
            "stallTimeoutMs":50000,"maxTimeMs":3600000,"caFile":"/ca.pem","caPath":"/certs","insecure":true,\#
            "rateLimit":1048576,"triesPerRange":7,"retries":9,"speedLimit":1000,"speedTime":10,"sync":false,\#
            "checkpointBytes":1048576,"checkpointIntervalMs":2000},"hook":"echo done"}
            """#
        let spec = try TaskSpec(json: try JSONParser.parse(Array(first.utf8)))
        var expected = TaskSpec(url: "https://example.org/a.iso", mirrors: ["https://mirror.example.net/a.iso"],
                                destination: .file("/data/a.iso"))
        expected.createsDirectories = false
        expected.replacesExisting = true
        expected.checksum = try Checksum("sha256=" + String(repeating: "ab", count: 32))
        expected.ifChangedOnServer = .restart
        expected.discardsPartialDownload = true
        expected.headers = [TaskHeader(name: "X-Token", value: "t\u{e9}st"), TaskHeader(name: "Authorization", value: "Basic YTpi")]
        expected.options.connections = 4
        expected.options.minimumSegment = 2 << 20
        expected.options.userAgent = "test/1"
        expected.options.timeouts = ConnectionTimeouts(connect: .seconds(3), tlsHandshake: .seconds(3), idle: .seconds(50))
        expected.options.totalTimeout = .seconds(3600)
        expected.options.tls.caFile = "/ca.pem"
        expected.options.tls.caDirectory = "/certs"
        expected.options.tls.insecure = true
        expected.options.rateLimit = 1 << 20
        expected.options.retry = RetryPolicy(triesPerRange: 7, totalRetries: 9)
        expected.options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1000, seconds: 10)
        expected.options.synchronizesToDisk = false
        expected.options.checkpointBytes = 1 << 20
        expected.options.checkpointInterval = .seconds(2)
        expected.hook = "echo done"
        #expect(spec == expected)
        #expect(try TaskSpec(json: spec.json) == spec, "and written again in today's shape")

        // A whole log record of the first shape, as an old queue's log holds it.
        var record = try #require(LogRecord.event(SampleLog.event(1, 1, .added(url: spec.url, path: "/data/a.iso", directory: nil)),
                                                  spec: spec, part: nil).json.object)
        record["spec"] = try JSONParser.parse(Array(first.utf8))
        let payload = Array(JSONValue.object(record).serialized.utf8)
        guard case .event(_, let read?, _) = try LogRecord(payload: payload) else {
            Issue.record("the record lost its spec")
            return
        }
        #expect(read == expected)
    }

    @Test func unknownFieldsAnywhereInASpecAreRefusedByName() throws {
        let spec = TaskSpec(url: "http://h/x", destination: .file("/x"))
        func refused(_ change: (inout JSONObject) -> Void) -> String? {
            var object = spec.json.object!
            change(&object)
            do {
                _ = try TaskSpec(json: .object(object))
                return nil
            } catch {
                return error.field
            }
        }
        #expect(refused { $0["colour"] = .string("blue") } == "spec.colour")
        #expect(refused {
            var request = $0["request"]!.object!
            request["colour"] = .string("blue")
            $0["request"] = .object(request)
        } == "spec.request.colour")
        #expect(refused {
            var request = $0["request"]!.object!
            request["destination"] = .object(JSONObject(["file": .string("/x"), "colour": .string("blue")]))
            $0["request"] = .object(request)
        } != nil, "a destination is exactly one of its cases")
        #expect(refused { $0["options"] = .object(JSONObject(["colour": .bool(true)])) } == "spec.options.colour")
        #expect(refused { $0["options"] = .object(JSONObject(["connections": .int(65)])) } == "spec.options.connections")
        #expect(refused { $0["hook"] = .string("a\u{0}b") } == "spec.hook", "no NUL in a string")
        #expect(refused { $0["request"] = .object(JSONObject(["url": .string("http://h/x")])) } == "spec.request.destination")
    }

    @Test func theOptionsOfATaskAreTheEnginesOwnShapes() {
        var engine = DownloadOptions()
        engine.connections = 3
        engine.tls.caFile = "/ca.pem"
        engine.retry = RetryPolicy(triesPerRange: 5000, totalRetries: 20_000)
        engine.timeouts.idle = .seconds(45)
        engine.headers = [("X-A", "1")]
        let options = TaskOptions(engine)
        #expect(options.tls == engine.tls && options.timeouts == engine.timeouts && options.connections == 3)
        #expect(options.retry.triesPerRange == 1000 && options.retry.totalRetries == 20_000, "a journal counts 1000 tries a range")
        let back = options.downloadOptions(maximumConnections: 12)
        #expect(back.tls == engine.tls && back.timeouts == engine.timeouts && back.maximumConnections == 12)
        #expect(back.headers.isEmpty, "a task's headers travel in its request")
    }

    /// `session.add` takes a relative destination as `DownloadRequest` does: from the caller's directory.
    @Test func relativePathsAreTakenFromTheWorkingDirectory() throws {
        let directory = FileManager.default.currentDirectoryPath
        var spec = TaskSpec(url: "http://h/x", destination: .file("out/x.bin"))
        spec.options.tls.caFile = "ca.pem"
        let resolved = spec.resolvingRelativePaths()
        #expect(resolved.destination == .file(directory + "/out/x.bin"))
        #expect(resolved.options.tls.caFile == directory + "/ca.pem")
        #expect(TaskSpec(url: "http://h/x", destination: .directory(".")).resolvingRelativePaths().destination == .directory(directory))
        #expect(resolved.problem() == nil && spec.problem() != nil)
        let absolute = TaskSpec(url: "http://h/x", destination: .file("/x"))
        #expect(absolute.resolvingRelativePaths() == absolute)
    }
}
