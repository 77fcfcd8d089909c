import HaulHTTP
import Testing
@testable import HaulIO

/// The handshake's reply decoding, without sockets: each reply fed whole and cut at every point must give
/// the same decision (the one ProxyHandshake used to reach inline).
@Suite struct ProxyReplyDecoderTests {
    typealias Decision = ProxyReplyDecoder.Decision

    /// The decision for `bytes` fed in one piece, checked against every two-piece cut; `nil` if undecided.
    private func decide(_ reply: ProxyReplyDecoder.Reply, _ bytes: [UInt8], limits: ParserLimits = ParserLimits()) -> Decision {
        var whole = ProxyReplyDecoder(expecting: reply, limits: limits)
        let decision = whole.feed(bytes)
        for cut in 0...bytes.count {
            var decoder = ProxyReplyDecoder(expecting: reply, limits: limits)
            var split = decoder.feed(bytes[..<cut])
            if split == .needMoreInput { split = decoder.feed(bytes[cut...]) }
            // Cut before the end of the reply, the first piece cannot decide more than the whole does.
            #expect(split == decision || cut < bytes.count && split != .needMoreInput, "cut at \(cut)")
        }
        return decision
    }

    private func http(_ text: String, credentialsSent: Bool = false) -> Decision {
        decide(.httpConnect(credentialsSent: credentialsSent), Array(text.utf8))
    }

    @Test func httpConnectOpensOnA2xxAlone() {
        #expect(http("HTTP/1.1 200 Connection established\r\n\r\n") == .tunnelOpen)
        #expect(http("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 204 OK\r\nVia: x\r\n\r\n") == .tunnelOpen)
        #expect(http("HTTP/1.1 200 OK\r\n") == .needMoreInput)
        #expect(http("HTTP/1.1 200 OK\r\n\r\nXY") == .failed(.malformedReply("2 unexpected bytes after the 200 reply")))
    }

    @Test func httpConnectRefusals() {
        let auth = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 3\r\n\r\nabc"
        #expect(http(auth) == .failed(.authenticationRequired(status: 407)))
        #expect(http(auth, credentialsSent: true) == .failed(.credentialsRejected(status: 407)))
        #expect(http("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n") == .failed(.tunnelRefused(status: 403, reason: "Forbidden")))
        for garbage in ["SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 \u{10}\u{5})\r\n"] {
            guard case .failed(.malformedReply) = http(garbage) else {
                Issue.record("\(garbage.debugDescription) is not an HTTP reply, yet no protocol error")
                continue
            }
        }
    }

    @Test func socksMethodSelection() {
        let none = ProxyReplyDecoder.Reply.socksMethodSelection(credentialsOffered: false)
        let offered = ProxyReplyDecoder.Reply.socksMethodSelection(credentialsOffered: true)
        #expect(decide(none, [5]) == .needMoreInput)
        #expect(decide(none, [5, 0]) == .connect)
        #expect(decide(offered, [5, 0]) == .connect)
        #expect(decide(offered, [5, 2]) == .authenticate)
        #expect(decide(none, [5, 2]) == .failed(.malformedReply("the proxy chose authentication method 2, which was not offered")))
        #expect(decide(offered, [5, 0xFF]) == .failed(.socksNoAcceptableMethod(credentialsOffered: true)))
        #expect(decide(none, [5, 0xFF]) == .failed(.socksNoAcceptableMethod(credentialsOffered: false)))
        #expect(decide(none, [4, 0]) == .failed(.malformedReply("the proxy answered with version 4, not SOCKS5")))
        #expect(decide(none, [5, 0, 1]) == .failed(.malformedReply("1 unexpected bytes after the reply")))
    }

    @Test func socksAuthentication() {
        #expect(decide(.socksAuthentication, [1]) == .needMoreInput)
        #expect(decide(.socksAuthentication, [1, 0]) == .connect)
        #expect(decide(.socksAuthentication, [1, 1]) == .failed(.socksCredentialsRejected(status: 1)))
        #expect(decide(.socksAuthentication, [5, 0]) == .failed(.malformedReply("the username/password reply has version 5, not 1")))
    }

    @Test func socksConnect() {
        let v4: [UInt8] = [5, 0, 0, 1, 127, 0, 0, 1, 0x1F, 0x90]
        #expect(decide(.socksConnect, v4) == .tunnelOpen)
        #expect(decide(.socksConnect, Array(v4.dropLast())) == .needMoreInput)
        #expect(decide(.socksConnect, v4 + [0x16]) == .failed(.malformedReply("1 unexpected bytes after the reply")))
        let name: [UInt8] = [5, 5, 0, 3, 4] + Array("a.tt".utf8) + [0, 80]
        #expect(decide(.socksConnect, name) == .failed(.socksConnectFailed(.connectionRefused)))
        // A failure with a careless address type is still that failure.
        #expect(decide(.socksConnect, [5, 4, 0, 9, 0]) == .failed(.socksConnectFailed(.hostUnreachable)))
        #expect(decide(.socksConnect, [5, 0, 0, 9, 0]) == .failed(.malformedReply("the CONNECT reply has unknown address type 9")))
        // The longest reply (a 255-byte name) is decided at its last byte, not before.
        let longest: [UInt8] = [5, 0, 0, 3, 255] + [UInt8](repeating: 0x61, count: 255) + [1, 187]
        #expect(longest.count == ProxyReplyDecoder.maximumSOCKSReplyBytes)
        #expect(decide(.socksConnect, longest) == .tunnelOpen)
        #expect(decide(.socksConnect, Array(longest.dropLast())) == .needMoreInput)
    }

    @Test func aDecisionStandsAndReleasesTheBytes() {
        var decoder = ProxyReplyDecoder(expecting: .socksConnect)
        #expect(decoder.feed([5, 0, 0, 1, 10]) == .needMoreInput)
        #expect(decoder.bufferedByteCount == 5)
        #expect(decoder.feed([0, 0, 1, 0, 80]) == .tunnelOpen)
        #expect(decoder.bufferedByteCount == 0)
        #expect(decoder.feed([9, 9, 9]) == .tunnelOpen)
        #expect(decoder.bufferedByteCount == 0)
    }
}
