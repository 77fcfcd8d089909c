import Foundation
import Glibc
import HaulTestSupport

/// A raw TCP client on loopback, to see exactly the bytes the server sends (curl hides interim responses,
/// rejects some framings, and does not say when each byte came).
enum RawHTTP {
    /// What came back: every byte, and when each `recv` returned how many bytes (seconds since the request).
    struct Reply {
        var bytes: [UInt8] = []
        var arrivals: [(seconds: Double, count: Int)] = []
        /// Whether the server closed the connection (as opposed to the read deadline passing).
        var closedByServer = false
    }

    /// Sends `GET target` with `fields` (plus `Host`), then reads until the server closes, `stop` says enough,
    /// or `timeout` seconds pass.
    static func get(port: UInt16, target: String = "/f", fields: [String] = ["Connection: close"], timeout: Double = 10,
                    stop: (Reply) -> Bool = { _ in false }) throws -> Reply {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: \(TestSupportError.describe(errno: errno))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw TestSupportError("connect: \(TestSupportError.describe(errno: errno))") }
        var slice = timeval(tv_sec: 0, tv_usec: 50_000)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, socklen_t(MemoryLayout<timeval>.size))
        let request = Array((["GET \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)"] + fields + ["", ""]).joined(separator: "\r\n").utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw TestSupportError("send: \(TestSupportError.describe(errno: errno))")
        }
        let started = Date()
        var reply = Reply()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while Date().timeIntervalSince(started) < timeout && !stop(reply) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { reply.closedByServer = true; break }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                reply.closedByServer = true  // reset
                break
            }
            reply.bytes += buffer[0..<count]
            reply.arrivals.append((Date().timeIntervalSince(started), count))
        }
        return reply
    }
}

/// A response parsed out of raw bytes: interim heads, the final head, and the bytes after it.
struct RawResponse {
    /// The `1xx` heads before the final one, verbatim.
    var interimHeads: [String] = []
    /// The final head without its blank line, or `nil` if none was complete.
    var head: String?
    /// Everything after the final head (undecoded).
    var rest: [UInt8] = []

    init(_ bytes: [UInt8]) {
        var remaining = bytes[...]
        while let end = Self.headEnd(in: remaining) {
            let text = String(decoding: remaining[remaining.startIndex..<end], as: UTF8.self)
            remaining = remaining[(end + 4)...]
            if text.hasPrefix("HTTP/1.1 1") {
                interimHeads.append(text)
            } else {
                head = text
                rest = Array(remaining)
                return
            }
        }
    }

    var status: Int? { head.flatMap { Int($0.split(separator: " ")[1]) } }

    func field(_ name: String) -> String? { head?.appending("\r\n").headerValue(name) }

    /// The `Transfer-Encoding: chunked` body decoded; `complete` says whether the last chunk arrived.
    var dechunked: (body: [UInt8], complete: Bool) {
        var body: [UInt8] = []
        var index = 0
        while let lineEnd = Self.find([13, 10], in: rest[index...]) {
            guard let size = Int(String(decoding: rest[index..<lineEnd], as: UTF8.self), radix: 16) else { break }
            if size == 0 { return (body, true) }
            let start = lineEnd + 2
            guard start + size <= rest.count else {
                body += rest[start...]
                break
            }
            body += rest[start..<(start + size)]
            index = start + size + 2
            if index > rest.count { break }
        }
        return (body, false)
    }

    private static func headEnd(in bytes: ArraySlice<UInt8>) -> Int? { find([13, 10, 13, 10], in: bytes) }

    private static func find(_ needle: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        var index = bytes.startIndex
        while index + needle.count <= bytes.endIndex {
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
