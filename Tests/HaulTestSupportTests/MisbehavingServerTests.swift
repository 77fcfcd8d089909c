import Foundation
import Synchronization
import HaulTestSupport
import Testing

@Suite("MisbehavingServer")
struct MisbehavingServerTests {
    private let resource = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 3)

    @Test("a correct ranged GET returns 206 with the right bytes and Content-Range")
    func rangedGet() throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let response = try Curl.fetch(server.url("/file"), in: scratch, extraArguments: ["-r", "10-19"])
        #expect(response.result.exitStatus == 0, "curl: \(response.result.errorText)")
        #expect(response.head.statusCode == 206)
        #expect(response.head.headerValue("Content-Range") == "bytes 10-19/\(1 << 20)")
        #expect(Array(response.body) == Array(resource.bytes[10..<20]))
        let exchange = try #require(server.exchanges.first)
        #expect(exchange.request.range == .bounded(first: 10, last: 19))
        #expect(exchange.status == 206)
        #expect(exchange.deliveredRange == 10..<20)
    }

    @Test("whole GET, HEAD, suffix range, 416, and keep-alive reuse of one connection")
    func correctBehaviour() throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let whole = try Curl.fetch(server.url("/a"), in: scratch)
        #expect(whole.head.statusCode == 200)
        #expect(try TestFiles.sha256(of: whole.body) == TestFiles.sha256(of: resource.bytes))

        let head = try Curl.fetch(server.url("/a"), in: scratch, extraArguments: ["--head"])
        #expect(head.head.headerValue("Content-Length") == "\(1 << 20)")
        #expect(head.head.headerValue("ETag") == resource.etag)
        #expect(server.exchanges.last?.request.method == "HEAD")
        #expect(server.exchanges.last?.bodyBytesSent == 0)

        let suffix = try Curl.fetch(server.url("/a"), in: scratch, extraArguments: ["-r", "-5"])
        #expect(Array(suffix.body) == Array(resource.bytes.suffix(5)))

        let unsatisfiable = try Curl.fetch(server.url("/a"), in: scratch, extraArguments: ["-r", "\(2 << 20)-"])
        #expect(unsatisfiable.head.statusCode == 416)
        #expect(unsatisfiable.head.headerValue("Content-Range") == "bytes */\(1 << 20)")

        let accepted = server.connectionsAccepted
        let twoOnOne = try Curl.run(["-o", "/dev/null", "-o", "/dev/null", "-r", "0-9", server.url("/x"), server.url("/y")])
        #expect(twoOnOne.exitStatus == 0)
        #expect(server.connectionsAccepted == accepted + 1)
        #expect(server.requests.suffix(2).map(\.indexOnConnection) == [0, 1])
    }

    @Test("closing mid-body makes curl report a partial transfer; the byte count is recorded")
    func closeMidBody() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.closeMidBody(afterBytes: 1000)))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let response = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(response.result.exitStatus == 18)  // CURLE_PARTIAL_FILE
        #expect(response.body.count == 1000)
        #expect(server.bodyBytesSent == 1000)
    }

    @Test("ignoring Range answers 200 with the whole body")
    func ignoreRange() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.ignoreRange))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let response = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: ["-r", "100-199"])
        #expect(response.head.statusCode == 200)
        #expect(response.head.headerValue("Content-Range") == nil)
        #expect(response.body.count == 1 << 20)
    }

    @Test("wrong and missing Content-Range")
    func wrongContentRange() throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.wrongContentRange(shiftedBy: 5), .omitContentRange]))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let shifted = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: ["-r", "10-19"])
        #expect(shifted.head.headerValue("Content-Range") == "bytes 15-24/\(1 << 20)")
        #expect(Array(shifted.body) == Array(resource.bytes[10..<20]))
        let missing = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: ["-r", "10-19"])
        #expect(missing.head.statusCode == 206)
        #expect(missing.head.headerValue("Content-Range") == nil)
    }

    @Test("503 and 429 carry Retry-After")
    func retryAfter() throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.status(503, retryAfter: "2"), .status(429, retryAfter: "7")]))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let first = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(first.head.statusCode == 503, "curl \(first.result.exitStatus): \(first.result.errorText) head: \(first.head)")
        #expect(first.head.headerValue("Retry-After") == "2")
        let second = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(second.head.statusCode == 429)
        #expect(second.head.headerValue("Retry-After") == "7")
        let third = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(third.head.statusCode == 200)
    }

    @Test("the ETag and content change from the second request on; a stale If-Range gets 200")
    func changedETag() throws {
        let changed = MisbehavingServer.Resource.pattern(size: 1 << 20, seed: 4)
        let server = try MisbehavingServer(resource: resource, script: .changeResource(to: changed, fromRequest: 1))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let first = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: ["-r", "0-99"])
        let second = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: ["-r", "0-99"])
        #expect(first.head.headerValue("ETag") == resource.etag)
        #expect(second.head.headerValue("ETag") == changed.etag)
        #expect(first.body != second.body)
        let resumed = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: ["-r", "100-199", "-H", "If-Range: \(resource.etag!)"])
        #expect(resumed.head.statusCode == 200)
        #expect(sameBytes(resumed.body, changed.bytes))
    }

    @Test("truncated chunked body, garbage head, oversized head, close without response")
    func brokenFraming() throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([
            .chunked, .truncatedChunked(afterBytes: 5000), .garbageHead, .oversizedHead(fieldBytes: 200 * 1024), .closeWithoutResponse,
        ]))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let chunked = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(chunked.result.exitStatus == 0)
        #expect(chunked.head.headerValue("Transfer-Encoding") == "chunked")
        #expect(sameBytes(chunked.body, resource.bytes))
        let truncated = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(truncated.result.exitStatus == 18)
        #expect(truncated.body.count == 5000)
        #expect(try Curl.run(["-o", "/dev/null", server.url("/f")]).exitStatus != 0)  // garbage
        let oversized = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(oversized.head.utf8.count > 200 * 1024 - 2000)
        #expect(try Curl.run(["-o", "/dev/null", server.url("/f")]).exitStatus == 52)  // CURLE_GOT_NOTHING
    }

    @Test("redirects, including a loop")
    func redirects() throws {
        let server = try MisbehavingServer(resource: resource, script: .redirects(["/a": "/b", "/b": "/a", "/start": "/file"]))
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let followed = try Curl.fetch(server.url("/start"), in: scratch, extraArguments: ["--location"])
        #expect(followed.result.exitStatus == 0)
        #expect(followed.body.count == 1 << 20)
        #expect(try Curl.run(["--location", "--max-redirs", "5", "-o", "/dev/null", server.url("/a")]).exitStatus == 47)
    }

    @Test("drip slows the body down; a stall until stopped ends promptly on stop")
    func dripAndStall() throws {
        let small = MisbehavingServer.Resource.pattern(size: 1000)
        let server = try MisbehavingServer(resource: small, script: .sequence([.drip(bytes: 100, everyMilliseconds: 50), .stallBeforeHead(.untilStopped)]))
        let scratch = try TemporaryDirectory()
        let start = Date()
        let dripped = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(Date().timeIntervalSince(start) > 0.4)
        #expect(sameBytes(dripped.body, small.bytes))
        let stalled = try Curl.run(["--max-time", "1", "-o", "/dev/null", server.url("/f")])
        #expect(stalled.exitStatus == 28)  // CURLE_OPERATION_TIMEDOUT
        #expect(stopReturns(server), "stop ends the stall")
    }

    @Test("a hold sends its budget of body bytes and no more until released, then the rest; release ends drips too")
    func holdAndRelease() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.drip(bytes: 1000, everyMilliseconds: 1000)))
        defer { server.stop() }
        server.hold(afterBodyBytes: 3000)
        final class Outcome: Sendable { let body = Mutex<Data?>(nil) }
        let outcome = Outcome()
        let scratch = try TemporaryDirectory()
        Thread {
            let body = try? Curl.fetch(server.url("/f"), in: scratch).body
            outcome.body.withLock { $0 = body ?? Data() }
        }.start()
        // Dripped 1000 bytes a second, the budget is reached in about three seconds; sent in pieces of at most
        // 1000 bytes, a hold that let more through would show here as more than 3000.
        let held = poll(reading: { server.bodyBytesSent }, until: { $0 >= 3000 })
        #expect(held == 3000, "the hold let through \(held) bytes")
        #expect(outcome.body.withLock { $0 } == nil, "the download is not over while held")
        server.release()
        // Released, neither the hold nor the drip (a thousand seconds for the whole megabyte) keeps it back.
        let body = poll(reading: { outcome.body.withLock { $0 } }, until: { $0 != nil })
        #expect(body.map { sameBytes($0, resource.bytes) } == true)
    }

    @Test("TLS with the test CA; closing without close_notify after and in the middle of the body")
    func tls() throws {
        let ca = try TestCertificateAuthority.shared()
        let server = try MisbehavingServer(resource: resource, script: .sequence([
            .normal, .closeWithoutCloseNotify, .closeMidBody(afterBytes: 4000),
        ]), tlsCertificate: ca.server)
        defer { server.stop() }
        let scratch = try TemporaryDirectory()
        let arguments = ["--cacert", ca.caCertificatePath]
        let normal = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: arguments)
        #expect(normal.result.exitStatus == 0, "curl: \(normal.result.errorText)")
        #expect(sameBytes(normal.body, resource.bytes))
        // A complete Content-Length body followed by a bare close is a success for curl.
        let complete = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: arguments + ["-H", "Connection: close"])
        #expect(complete.body.count == 1 << 20)
        let cut = try Curl.fetch(server.url("/f"), in: scratch, extraArguments: arguments)
        #expect(cut.result.exitStatus != 0)
        #expect(cut.body.count == 4000)
        #expect(try Curl.run(["-o", "/dev/null", server.url("/f")]).exitStatus == 60)  // untrusted without --cacert
    }

    @Test("IPv6 loopback, and a mid-body stall that then completes", .enabled(if: LoopbackPorts.isIPv6Available))
    func ipv6MidBodyStall() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.stallMidBody(afterBytes: 500, .seconds(0.3))), host: "::1")
        defer { server.stop() }
        #expect(server.url("/f").hasPrefix("http://[::1]:"))
        let scratch = try TemporaryDirectory()
        let start = Date()
        let response = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(Date().timeIntervalSince(start) >= 0.3)
        #expect(response.result.exitStatus == 0)
        #expect(sameBytes(response.body, resource.bytes))
        #expect(server.exchanges.first?.deliveredRange == 0..<(1 << 20))
    }
}

/// Whether `server.stop()` returns (within a generous deadline) although a response is still stalling or
/// flooding: it runs on a thread of its own, so that a stop that hangs fails the test instead of hanging the run.
/// How quickly it returns is not asserted (no clock in tests; speed belongs in Benchmarks/).
func stopReturns(_ server: MisbehavingServer) -> Bool {
    final class Flag: Sendable { let value = Mutex(false) }
    let stopped = Flag()
    Thread {
        server.stop()
        stopped.value.withLock { $0 = true }
    }.start()
    return poll { stopped.value.withLock { $0 } }
}
