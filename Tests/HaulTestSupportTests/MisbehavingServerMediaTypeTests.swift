import Foundation
import Testing
@testable import HaulTestSupport

/// The media-type, content-coding and range-refusal faults, checked byte for byte with a raw socket.
@Suite("MisbehavingServer media types and refused ranges")
struct MisbehavingServerMediaTypeTests {
    private static let size = 1 << 20
    private let resource = MisbehavingServer.Resource.pattern(size: MisbehavingServerMediaTypeTests.size, seed: 6)

    @Test("multipart/byteranges: a head that agrees with the range, a MIME part cut to its length")
    func multipartCutToTheRange() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.multipartByteranges(boundary: "B")))
        defer { server.stop() }
        let response = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=1000-1999", "Connection: close"]).bytes)
        #expect(response.status == 206)
        #expect(response.field("Content-Type") == "multipart/byteranges; boundary=B")
        #expect(response.field("Content-Range") == "bytes 1000-1999/\(Self.size)")
        #expect(response.field("Content-Length") == "1000")
        let framing = "\r\n--B\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes 1000-1999/\(Self.size)\r\n\r\n"
        #expect(response.rest.count == 1000)
        #expect(Array(response.rest.prefix(framing.utf8.count)) == Array(framing.utf8))
        #expect(Array(response.rest.dropFirst(framing.utf8.count)) == Array(resource.bytes[1000..<(2000 - framing.utf8.count)]))
    }

    @Test("multipart/byteranges leaves a whole-file 200 alone and sends the Content-Type verbatim")
    func multipartOnlyOnPartialContent() throws {
        let behavior = MisbehavingServer.Behavior.multipartByteranges(contentType: "Multipart/ByteRanges")
        let server = try MisbehavingServer(resource: resource, script: .always(behavior))
        defer { server.stop() }
        let whole = RawResponse(try RawHTTP.get(port: server.port).bytes)
        #expect(whole.status == 200 && whole.field("Content-Type") == "application/octet-stream" && whole.rest == resource.bytes)
        let part = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-9", "Connection: close"]).bytes)
        #expect(part.field("Content-Type") == "Multipart/ByteRanges" && part.rest.count == 10)
    }

    @Test("Content-Encoding: the field, and bytes of the promised length that are not the resource's")
    func contentEncodedBytes() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.contentEncoded("gzip")))
        defer { server.stop() }
        let response = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-99", "Connection: close"]).bytes)
        #expect(response.status == 206 && response.field("Content-Encoding") == "gzip" && response.field("Content-Length") == "100")
        #expect(response.rest == resource.bytes[0..<100].map { $0 ^ 0x5A })
    }

    @Test("webfs: a bounded range past the end is refused with 400, one inside it and an open-ended one are served")
    func boundedPastTheEndRefused() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.refuseBoundedRangePastEnd()))
        defer { server.stop() }
        let refused = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-4194303", "Connection: close"]).bytes)
        #expect(refused.status == 400 && String(decoding: refused.rest, as: UTF8.self) == "400 Bad Request\n")
        let inside = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-9", "Connection: close"]).bytes)
        #expect(inside.status == 206 && inside.rest == Array(resource.bytes[0..<10]))
        let openEnded = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-", "Connection: close"]).bytes)
        #expect(openEnded.status == 206 && openEnded.rest.count == Self.size)
    }

    @Test("every Range refused (a 416 says the length), a plain GET served")
    func everyRangeRefused() throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.refuseEveryRange(status: 416)))
        defer { server.stop() }
        let refused = RawResponse(try RawHTTP.get(port: server.port, fields: ["Range: bytes=0-", "Connection: close"]).bytes)
        #expect(refused.status == 416 && refused.field("Content-Range") == "bytes */\(Self.size)")
        let plain = RawResponse(try RawHTTP.get(port: server.port).bytes)
        #expect(plain.status == 200 && plain.rest == resource.bytes)
    }
}
