import Foundation
import Testing
@testable import HaulTestSupport

/// The faults real hostile or quirky servers commit, checked byte for byte with a raw socket.
@Suite("MisbehavingServer hostile faults")
struct MisbehavingServerHostileTests {
    private static let size = 1 << 20
    private let resource = MisbehavingServer.Resource.pattern(size: MisbehavingServerHostileTests.size, seed: 5)

    // MARK: Body overrun

    @Test("overrun with a Content-Length larger than the range: the range, then the following bytes")
    func overrunContentLength() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.bodyOverrun(extra: 5)))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=10-19", "Connection: close"])
        let response = RawResponse(reply.bytes)
        #expect(response.status == 206)
        #expect(response.field("Content-Range") == "bytes 10-19/\(Self.size)")
        #expect(response.field("Content-Length") == "15")
        #expect(response.rest == Array(resource.bytes[10..<25]))
        #expect(reply.closedByServer)
        #expect(server.exchanges.first?.bodyBytesSent == 15)
    }

    @Test("overrun at the end of the resource is filled with filler bytes")
    func overrunPastTheEnd() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.bodyOverrun(extra: 8)))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=-4", "Connection: close"])
        let response = RawResponse(reply.bytes)
        #expect(response.field("Content-Range") == "bytes \(Self.size - 4)-\(Self.size - 1)/\(Self.size)")
        #expect(response.field("Content-Length") == "12")
        #expect(response.rest.count == 12)
        #expect(Array(response.rest.prefix(4)) == Array(resource.bytes.suffix(4)))
        #expect(String(decoding: response.rest.suffix(8), as: UTF8.self) == "<overrun")
    }

    @Test("overrun in chunked framing: a complete chunked body carrying the range and more")
    func overrunChunked() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.bodyOverrun(extra: 7, framing: .chunked)))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=100-199", "Connection: close"])
        let response = RawResponse(reply.bytes)
        #expect(response.status == 206)
        #expect(response.field("Content-Range") == "bytes 100-199/\(Self.size)")
        #expect(response.field("Transfer-Encoding") == "chunked")
        #expect(response.field("Content-Length") == nil)
        let (body, complete) = response.dechunked
        #expect(complete)
        #expect(body == Array(resource.bytes[100..<207]))
    }

    @Test("overrun in a close-delimited body: no length, the range and more, then close")
    func overrunCloseDelimited() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.bodyOverrun(extra: 1000, framing: .closeDelimited)))
        defer { server.stop() }
        // Keep-alive asked for: the server closes anyway, the close ends the body.
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-99"])
        let response = RawResponse(reply.bytes)
        #expect(reply.closedByServer)
        #expect(response.status == 206)
        #expect(response.field("Content-Range") == "bytes 0-99/\(Self.size)")
        #expect(response.field("Content-Length") == nil)
        #expect(response.field("Transfer-Encoding") == nil)
        #expect(response.field("Connection") == "close")
        #expect(response.rest == Array(resource.bytes[0..<1100]))
    }

    @Test("correct close-delimited framing: exactly the range, then close; curl accepts it")
    func closeDelimited() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.closeDelimited))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=10-19"])
        let response = RawResponse(reply.bytes)
        #expect(reply.closedByServer)
        #expect(response.field("Content-Length") == nil)
        #expect(response.field("Transfer-Encoding") == nil)
        #expect(response.rest == Array(resource.bytes[10..<20]))

        let scratch = try TemporaryDirectory()
        let whole = try Curl.fetch(server.url("/f"), in: scratch)
        #expect(whole.result.exitStatus == 0, "curl: \(whole.result.errorText)")
        #expect(sameBytes(whole.body, resource.bytes))
    }

    // MARK: Interim responses and slow heads

    @Test("interim flood: 100 Continue again and again, never a final head")
    func interimFloodForever() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.interimFlood(everyMilliseconds: 20)))
        defer { server.stop() }
        let interim = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        let reply = try RawHTTP.get(port: server.port, timeout: 10) { $0.bytes.count >= 8 * interim.count }
        #expect(reply.bytes.count >= 8 * interim.count)
        let whole = reply.bytes.count / interim.count * interim.count
        #expect(Array(reply.bytes[0..<whole]) == Array(Array(repeating: interim, count: whole / interim.count).joined()))
        #expect(RawResponse(reply.bytes).head == nil)
        // The server counts a response once it is sent, which can be just after the client has read it.
        #expect(poll(every: .milliseconds(1)) { server.exchanges.first?.interimResponsesSent ?? 0 >= 8 })
        #expect(server.exchanges.first?.status == nil)
        #expect(stopReturns(server), "stop ends the flood")
    }

    @Test("bounded interim flood: N interims, then the real response")
    func interimFloodThenResponse() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.interimFlood(everyMilliseconds: 5, count: 4)))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-9", "Connection: close"])
        let response = RawResponse(reply.bytes)
        #expect(response.interimHeads == Array(repeating: "HTTP/1.1 100 Continue", count: 4))
        #expect(response.status == 206)
        #expect(response.rest == Array(resource.bytes[0..<10]))
        #expect(server.exchanges.first?.interimResponsesSent == 4)
    }

    @Test("head drip: the head one byte at a time, then the body at once")
    func headDrip() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.dripHead(bytes: 1, everyMilliseconds: 5)))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-999", "Connection: close"])
        let response = RawResponse(reply.bytes)
        let head = try #require(response.head)
        #expect(response.status == 206)
        #expect(response.rest == Array(resource.bytes[0..<1000]))
        let headLength = head.utf8.count + 4
        // Every head byte but the first follows a 5 ms pause: the head takes at least (length - 1) × 5 ms.
        var received = 0
        var headDone = 0.0
        for arrival in reply.arrivals where received < headLength {
            received += arrival.count
            headDone = arrival.seconds
        }
        #expect(headDone >= Double(headLength - 1) * 0.005 * 0.9, "head of \(headLength) bytes took \(headDone) s")
        #expect(reply.arrivals.count >= headLength / 4, "the head came in many small pieces: \(reply.arrivals.count) reads")
    }

    // MARK: Empty resources

    @Test("empty resource, ranged GET: caddy-style 416 with bytes */0 and a text body by default")
    func emptyResourceUnsatisfiable() throws {
        let empty = MisbehavingServer.Resource(bytes: [])
        let server = try MisbehavingServer(resource: empty)
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-", "Connection: close"])
        let response = RawResponse(reply.bytes)
        #expect(response.status == 416)
        #expect(response.field("Content-Range") == "bytes */0")
        #expect(String(decoding: response.rest, as: UTF8.self) == "416 Range Not Satisfiable\n")
        #expect(response.field("Content-Length") == "\(response.rest.count)")

        let plain = RawResponse(try RawHTTP.get(port: server.port).bytes)
        #expect(plain.status == 200)
        #expect(plain.field("Content-Length") == "0")
        #expect(plain.rest.isEmpty)
    }

    @Test("empty resource, ranged GET: webfs-style 206 with bytes 0--1/0 and no body")
    func emptyResourceWebfs() throws {
        let empty = MisbehavingServer.Resource(bytes: [])
        let server = try MisbehavingServer(resource: empty, script: .always(.webfsEmptyRange))
        defer { server.stop() }
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-", "Connection: close"])
        let response = RawResponse(reply.bytes)
        #expect(response.status == 206)
        #expect(response.field("Content-Range") == "bytes 0--1/0")
        #expect(response.field("Content-Length") == "0")
        #expect(response.rest.isEmpty)
        #expect(reply.closedByServer)
    }

    // MARK: Content-Disposition

    @Test("Content-Disposition with a 250-byte file name")
    func contentDisposition() throws {
        let name = String(repeating: "n", count: 243) + ".tar.gz"
        #expect(name.utf8.count == 250)
        let server = try MisbehavingServer(resource: resource, script: .always(.attachment(filename: name)))
        defer { server.stop() }
        let response = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-0", "Connection: close"]).bytes)
        #expect(response.field("Content-Disposition") == "attachment; filename=\"\(name)\"")
        #expect(response.rest == [resource.bytes[0]])
    }

    // MARK: Chaos

    private static func request(_ index: Int, range: MisbehavingServer.ByteRangeSpecifier? = .bounded(first: 0, last: 65535)) -> MisbehavingServer.ReceivedRequest {
        let fields = range.map { range -> [MisbehavingServer.HeaderField] in
            guard case .bounded(let first, let last) = range else { return [.init(name: "Range", value: "bytes=0-")] }
            return [.init(name: "Range", value: "bytes=\(first)-\(last)")]
        } ?? []
        return MisbehavingServer.ReceivedRequest(index: index, connectionID: 0, indexOnConnection: 0, method: "GET", target: "/f",
                                                 version: "HTTP/1.1", headerFields: fields)
    }

    @Test("chaos: the choice depends on seed and request index only, at about the fault rate, every fault reachable")
    func chaosIsDeterministic() {
        let seed: UInt64 = 0xC0FFEE
        print("chaos determinism seed \(seed)")
        let script = MisbehavingServer.Script.chaos(seed: seed)
        let again = MisbehavingServer.Script.chaos(seed: seed)
        let other = MisbehavingServer.Script.chaos(seed: seed + 1)
        let count = 4000
        let first = (0..<count).map { script.decide(Self.request($0)) }
        let second = (0..<count).map { again.decide(Self.request($0)) }
        let third = (0..<count).map { other.decide(Self.request($0)) }
        #expect(first == second, "same seed, same behaviors")
        #expect(first != third, "another seed, other behaviors")
        // Calling in another order (as concurrent connections do) changes nothing.
        #expect(Array((0..<count).reversed().map { script.decide(Self.request($0)) }.reversed()) == first)
        let faults = first.compactMap(\.chaosFault)
        let rate = Double(faults.count) / Double(count)
        #expect(abs(rate - 0.3) < 0.05, "fault rate \(rate)")
        #expect(Set(faults) == Set(MisbehavingServer.ChaosFault.allCases))
        #expect(first.filter { $0.chaosFault == nil }.allSatisfy { $0 == .normal })

        let never = MisbehavingServer.Script.chaos(seed: seed, faultRate: 0)
        #expect((0..<200).allSatisfy { never.decide(Self.request($0)) == .normal })
        let onlyDrops = MisbehavingServer.Script.chaos(seed: seed, faultRate: 1, faults: [.dropMidBody])
        #expect((0..<200).allSatisfy { onlyDrops.decide(Self.request($0)).chaosFault == .dropMidBody })
        // A body asked for without Range is the file whatever its length: no overrun is a fault there.
        let onlyOverruns = MisbehavingServer.Script.chaos(seed: seed, faultRate: 1, faults: [.overrunContentLength, .overrunChunked, .overrunCloseDelimited])
        #expect((0..<200).allSatisfy { onlyOverruns.decide(Self.request($0, range: nil)) == .normal })
        #expect((0..<200).allSatisfy { onlyOverruns.decide(Self.request($0)).overrunBytes != nil })
    }

    @Test("chaos: each fault on the wire, recorded in the exchange", arguments: MisbehavingServer.ChaosFault.allCases)
    func chaosFaultOnTheWire(fault: MisbehavingServer.ChaosFault) throws {
        let server = try MisbehavingServer(resource: resource, script: .chaos(seed: 7, faultRate: 1, faults: [fault]))
        defer { server.stop() }
        let (first, last) = (1000, 70999)
        let expected = Array(resource.bytes[first...last])
        let started = Date()
        let reply = try RawHTTP.get(port: server.port, fields: ["Range: bytes=\(first)-\(last)", "Connection: close"])
        let elapsed = Date().timeIntervalSince(started)
        let response = RawResponse(reply.bytes)
        let contentRange = "bytes \(first)-\(last)/\(Self.size)"
        #expect(server.exchanges.first?.chaosFault == fault)
        #expect(reply.closedByServer, "every chaos fault ends by itself")
        switch fault {
        case .dropMidBody:
            #expect(response.status == 206)
            #expect(response.rest.count < expected.count)
            #expect(response.rest.elementsEqual(expected.prefix(response.rest.count)))
        case .stallMidBody:
            #expect(response.rest == expected)
            #expect(elapsed >= 1.9)
        case .serviceUnavailable:
            #expect(response.status == 503)
            #expect(response.field("Retry-After") == "0")
        case .overrunContentLength:
            #expect(response.field("Content-Range") == contentRange)
            let length = try #require(response.field("Content-Length").flatMap { Int($0) })
            #expect(length > expected.count)
            #expect(response.rest == Array(resource.bytes[first..<(first + length)]))
        case .overrunChunked:
            #expect(response.field("Content-Range") == contentRange)
            let (body, complete) = response.dechunked
            #expect(complete)
            #expect(body.count > expected.count)
            #expect(body == Array(resource.bytes[first..<(first + body.count)]))
        case .overrunCloseDelimited:
            #expect(response.field("Content-Range") == contentRange)
            #expect(response.field("Content-Length") == nil)
            #expect(response.rest.count > expected.count)
            #expect(response.rest == Array(resource.bytes[first..<(first + response.rest.count)]))
        case .shiftedContentRange:
            let field = try #require(response.field("Content-Range"))
            #expect(field != contentRange)
            #expect(field.hasSuffix("/\(Self.size)"))
            #expect(response.rest == expected)
        case .missingContentRange:
            #expect(response.status == 206)
            #expect(response.field("Content-Range") == nil)
            #expect(response.rest == expected)
        case .truncatedChunked:
            let (body, complete) = response.dechunked
            #expect(!complete)
            #expect(body.count < expected.count)
        case .garbageHead:
            #expect(String(decoding: reply.bytes.prefix(4), as: UTF8.self) == "SSH-")
        case .closeWithoutResponse:
            #expect(reply.bytes.isEmpty)
        case .headDrip:
            #expect(response.rest == expected)
            #expect(elapsed >= 0.3)
            #expect(reply.arrivals.count > 20)
        case .interimFlood:
            #expect(response.interimHeads.count == 10)
            #expect(response.rest == expected)
        case .multipartByteranges:
            #expect(response.status == 206)
            #expect(response.field("Content-Type")?.hasPrefix("multipart/byteranges") == true)
            #expect(response.rest.count == expected.count)
            #expect(response.rest != expected)
        case .contentEncoded:
            #expect(response.field("Content-Encoding") == "gzip")
            #expect(response.rest.count == expected.count)
            #expect(response.rest != expected)
        case .otherVersion, .otherVersionIgnoringIfRange:
            // No If-Range was sent: both answer 206 with the other version's bytes and validators.
            #expect(response.status == 206)
            #expect(response.field("Content-Range") == contentRange)
            #expect(response.field("ETag") == resource.otherVersion.etag)
            #expect(response.field("ETag") != resource.etag)
            #expect(response.field("Last-Modified") != resource.lastModified)
            #expect(response.rest == Array(resource.otherVersion.bytes[first...last]))
        case .wholeFileForRange:
            #expect(response.status == 200)
            #expect(response.field("ETag") == resource.etag)
            #expect(response.rest == resource.bytes)
        case .longRetryAfter:
            #expect(response.status == 503)
            #expect(response.field("Retry-After") == "999999999")
        case .trickle:
            #expect(response.rest == expected)
            #expect(reply.arrivals.count > 20)
        }
    }
}
