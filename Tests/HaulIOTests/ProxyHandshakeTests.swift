import Glibc
import HaulHTTP
import Synchronization
import Testing
@testable import HaulIO

/// The client side of each proxy protocol against scripted proxies on loopback: the exact bytes sent, replies
/// split and misbehaving, timeouts and cancellation. (Real proxies: `ProxyTests` in HaulTests.)
@Suite("Proxy handshakes")
struct ProxyHandshakeTests {
    /// What a scripted proxy saw, for the test to check.
    final class Transcript: Sendable {
        let received = Mutex<[[UInt8]]>([])
        let closed = Mutex(false)
        func record(_ bytes: [UInt8]) { received.withLock { $0.append(bytes) } }
        var messages: [[UInt8]] { received.withLock { $0 } }
        var texts: [String] { messages.map { String(decoding: $0, as: UTF8.self) } }
    }

    static func readHead(_ fd: Int32) -> [UInt8]? {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while !received.suffix(4).elementsEqual("\r\n\r\n".utf8) {
            guard read(fd, &byte, 1) == 1 else { return nil }
            received.append(byte)
        }
        return received
    }

    static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, count - offset) }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }

    /// Sends `bytes` one byte at a time (the client must reassemble replies split anywhere).
    static func dribble(_ fd: Int32, _ bytes: [UInt8]) {
        for byte in bytes {
            var value = byte
            _ = send(fd, &value, 1, Int32(MSG_NOSIGNAL))
            usleep(1_000)  // the proxy's pacing (so each byte arrives in its own read), not an ordering sleep
        }
    }

    static func client(proxy: String, timeout: Duration = .seconds(10), idle: Duration? = ConnectionTimeouts().idle) throws -> (HTTPClient, EventLoop) {
        let loop = try EventLoop()
        var options = ConnectionOptions()
        options.timeouts.connect = timeout
        options.timeouts.idle = idle
        let client = HTTPClient(loop: loop, tls: .insecure, connectionOptions: options,
                                proxy: ProxySettings(all: try ProxyURL(proxy)))
        return (client, loop)
    }

    static func get(_ url: String, on client: HTTPClient) async -> Result<(ExchangeSummary, [UInt8]), HTTPClientError> {
        let handler = CollectingHandler()
        do {
            let summary = try await client.exchange(RequestHead(url: try HTTPURL(url)), handler: handler)
            return .success((summary, handler.body))
        } catch let error as HTTPClientError {
            return .failure(error)
        } catch {
            return .failure(.handlerFailed(error))
        }
    }

    static func proxyFailure(_ result: Result<(ExchangeSummary, [UInt8]), HTTPClientError>) -> ConnectionError? {
        guard case .failure(.connection(let error)) = result else { return nil }
        return error
    }

    // MARK: SOCKS5

    /// socks5h with credentials: the greeting offers both methods, RFC 1929 carries the user and password, the
    /// CONNECT names the host (ATYP 3); a reply with an IPv6 bound address, dribbled byte by byte, opens the
    /// tunnel, and HTTP then runs through it in origin form.
    @Test func socks5hWithCredentialsCarriesHTTP() async throws {
        let transcript = Transcript()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard let greeting = Self.readExactly(fd, 4) else { return }
            transcript.record(greeting)
            _ = LoopbackServer.sendText(fd, "\u{5}\u{2}")
            guard let authHead = Self.readExactly(fd, 2), let user = Self.readExactly(fd, Int(authHead[1])),
                  let passwordLength = Self.readExactly(fd, 1), let password = Self.readExactly(fd, Int(passwordLength[0]))
            else { return }
            transcript.record(authHead + user + passwordLength + password)
            _ = send(fd, [1, 0] as [UInt8], 2, Int32(MSG_NOSIGNAL))
            guard let connectHead = Self.readExactly(fd, 5), let rest = Self.readExactly(fd, Int(connectHead[4]) + 2) else { return }
            transcript.record(connectHead + rest)
            Self.dribble(fd, [5, 0, 0, 4] + [UInt8](repeating: 0, count: 15) + [1, 0x1F, 0x90])
            guard let request = Self.readHead(fd) else { return }
            transcript.record(request)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "socks5h://alice:s3cret@127.0.0.1:\(server.port)")
        defer { loop.shutdown() }
        let result = await Self.get("http://origin.test:8080/file", on: client)
        let (summary, body) = try result.get()
        #expect(summary.head.status == 200)
        #expect(body == Array("hello".utf8))
        let messages = transcript.messages
        #expect(messages.count == 4)
        #expect(messages.first == [5, 2, 0, 2])
        #expect(messages.dropFirst().first == [1, 5] + Array("alice".utf8) + [6] + Array("s3cret".utf8))
        #expect(messages.dropFirst(2).first == [5, 1, 0, 3, 11] + Array("origin.test".utf8) + [0x1F, 0x90])
        #expect(transcript.texts.last?.hasPrefix("GET /file HTTP/1.1\r\nHost: origin.test:8080\r\n") == true,
                "origin form through a SOCKS tunnel, and no Proxy-Authorization: \(transcript.texts.last ?? "")")
        #expect(transcript.texts.last?.contains("Proxy-Authorization") == false)
        await client.shutdown()
    }

    /// socks5 (local resolution) without credentials: one method offered, the address sent (ATYP 1); a refusal
    /// is reported with its reply code and never retried as a stale connection.
    @Test func socks5RefusalIsReportedWithItsCode() async throws {
        let transcript = Transcript()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard let greeting = Self.readExactly(fd, 3) else { return }
            transcript.record(greeting)
            _ = send(fd, [5, 0] as [UInt8], 2, Int32(MSG_NOSIGNAL))
            guard let connect = Self.readExactly(fd, 10) else { return }
            transcript.record(connect)
            _ = send(fd, [5, 2, 0, 1, 0, 0, 0, 0, 0, 0] as [UInt8], 10, Int32(MSG_NOSIGNAL))
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "socks5://127.0.0.1:\(server.port)")
        defer { loop.shutdown() }
        let result = await Self.get("http://127.0.0.1:8080/file", on: client)
        let error = try #require(Self.proxyFailure(result), "\(result)")
        #expect(error.kind == .proxyFailed)
        #expect(error.proxyFailure?.step == .socksConnect)
        #expect(error.description == "SOCKS5 proxy 127.0.0.1:\(server.port) refused the connection to 127.0.0.1:8080: connection not allowed by ruleset (reply 2)")
        #expect(transcript.messages == [[5, 1, 0], [5, 1, 0, 1, 127, 0, 0, 1, 0x1F, 0x90]])
        #expect(!HTTPClientError.connection(error).isTransient)
        await client.shutdown()
    }

    /// A server that is no SOCKS5 proxy at all (here: an HTTP server's error) is a malformed reply.
    @Test func notASOCKSProxy() async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            _ = Self.readExactly(fd, 3)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 400 Bad Request\r\n\r\n")
        })
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "socks5h://127.0.0.1:\(server.port)")
        defer { loop.shutdown() }
        let error = try #require(Self.proxyFailure(await Self.get("http://origin.test/", on: client)))
        #expect(error.description == "SOCKS5 proxy 127.0.0.1:\(server.port) sent a malformed reply during the SOCKS5 greeting to origin.test:80: the proxy answered with version 72, not SOCKS5")
        await client.shutdown()
    }

    // MARK: HTTP CONNECT

    /// The CONNECT names the origin (authority form, Host repeated) with the proxy's credentials; after a 200
    /// dribbled byte by byte, TLS starts inside the tunnel with the origin's name (here the fake proxy then
    /// hangs up, so the handshake fails, naming the origin and the proxy).
    @Test func connectTunnelThenTLSWithTheOrigin() async throws {
        let transcript = Transcript()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard let head = Self.readHead(fd) else { return }
            transcript.record(head)
            Self.dribble(fd, Array("HTTP/1.1 200 Connection established\r\nVia: test\r\n\r\n".utf8))
            var hello = [UInt8](repeating: 0, count: 5)
            if let first = Self.readExactly(fd, 5) { hello = first }
            transcript.record(hello)
        })
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "http://alice:s3cret@127.0.0.1:\(server.port)")
        defer { loop.shutdown() }
        let error = try #require(Self.proxyFailure(await Self.get("https://origin.test/file", on: client)))
        #expect(transcript.texts.first == """
            CONNECT origin.test:443 HTTP/1.1\r
            Host: origin.test:443\r
            User-Agent: haul\r
            Proxy-Authorization: Basic YWxpY2U6czNjcmV0\r
            \r

            """)
        #expect(transcript.messages.dropFirst().first?.first == 0x16, "a TLS handshake record followed the CONNECT")
        #expect(error.kind == .tlsHandshakeFailed)
        #expect(error.host == "origin.test" && error.port == 443)
        #expect(error.description.hasPrefix("TLS handshake with origin.test:443 failed"))
        #expect(error.description.hasSuffix("(through proxy http://127.0.0.1:\(server.port) to origin.test:443)"), "\(error)")
        await client.shutdown()
    }

    /// A refused CONNECT names the status; bytes after a 200 (before the client spoke) are a malformed reply.
    @Test(arguments: [
        ("HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nforbidden", "refused to open a tunnel to origin.test:443: 403 Forbidden"),
        ("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n", "requires authentication (407) to reach origin.test:443"),
        ("HTTP/1.1 200 OK\r\n\r\nunexpected", "sent a malformed reply during the CONNECT to origin.test:443: 10 unexpected bytes after the 200 reply"),
        ("HTTP/1.1 200", "closed the connection during the CONNECT to origin.test:443"),
        ("SSH-2.0-OpenSSH_9.2\r\n", "sent a malformed reply during the CONNECT to origin.test:443"),
    ])
    func connectRefusals(reply: String, expected: String) async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard Self.readHead(fd) != nil else { return }
            _ = LoopbackServer.sendText(fd, reply)
        })
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "http://127.0.0.1:\(server.port)")
        defer { loop.shutdown() }
        let error = try #require(Self.proxyFailure(await Self.get("https://origin.test/", on: client)))
        #expect(error.kind == .proxyFailed)
        #expect(error.description.hasPrefix("proxy http://127.0.0.1:\(server.port) \(expected)"), "\(error)")
        await client.shutdown()
    }

    /// A proxy that never answers the CONNECT: the setup ends at the connect timeout, naming the step.
    @Test func silentProxyTimesOut() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "http://127.0.0.1:\(server.port)", timeout: .milliseconds(300))
        defer { loop.shutdown() }
        let error = try #require(Self.proxyFailure(await Self.get("https://origin.test/", on: client)))
        #expect(error.description == "proxy http://127.0.0.1:\(server.port) did not complete the CONNECT to origin.test:443 within 300ms")
        #expect(HTTPClientError.connection(error).isTransient)
        await client.shutdown()
    }

    /// Cancelling an exchange while its CONNECT is unanswered closes the connection at once.
    @Test func cancellingDuringTheProxyHandshake() async throws {
        let transcript = Transcript()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard let head = Self.readHead(fd) else { return }
            transcript.record(head)
            _ = LoopbackServer.drainUntilClosed(fd)
            transcript.closed.withLock { $0 = true }
        })
        defer { server.stop() }
        // Timeouts the cancel must beat by far: the test's task runs on the shared pool, which a loaded machine
        // (suites in parallel on two cores) starved for 110 s once, and the 30 s connect timeout (another time
        // the 30 s idle one, the CONNECT being unanswered) then fired first.
        let (client, loop) = try Self.client(proxy: "http://127.0.0.1:\(server.port)", timeout: .seconds(600), idle: .seconds(600))
        defer { loop.shutdown() }
        let exchange = try await ObservedExchange(try RequestHead(url: HTTPURL("https://origin.test/")), on: client)
        #expect(try await eventually { !transcript.messages.isEmpty }, "the proxy never got the CONNECT")
        _ = try await exchange.cancel()
        let completion = try #require(try await exchange.completion(within: 20))
        guard case .failure(.connection(let error)) = completion.result else {
            Issue.record("expected a cancelled connection, got \(completion.result)")
            return
        }
        // Ended by the cancel (`.closed`), not by the connect timeout (a proxy failure) or the idle one.
        #expect(error.kind == .closed)
        #expect(try await eventually { transcript.closed.withLock { $0 } }, "the proxy never saw the connection close")
        await client.shutdown()
    }

    // MARK: Forwarding (absolute form)

    /// Plain HTTP through an HTTP proxy: absolute form with Proxy-Authorization, kept alive for the next request
    /// to the same origin; a 407 from the proxy is the proxy's failure, not the origin's status.
    @Test func forwardedRequestsKeepAliveAndA407IsTheProxys() async throws {
        let transcript = Transcript()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            for reply in ["HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK",
                          "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"] {
                guard let head = Self.readHead(fd) else { return }
                transcript.record(head)
                _ = LoopbackServer.sendText(fd, reply)
            }
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { server.stop() }
        let (client, loop) = try Self.client(proxy: "http://alice:s3cret@127.0.0.1:\(server.port)")
        defer { loop.shutdown() }
        let first = try await Self.get("http://origin.test:8080/a?b=1", on: client).get()
        #expect(first.1 == Array("ok".utf8))
        #expect(first.0.connectionReusable)
        let second = try await Self.get("http://origin.test:8080/c", on: client).get()
        #expect(second.1 == Array("OK".utf8))
        let third = await Self.get("http://origin.test:8080/d", on: client)
        let error = try #require(Self.proxyFailure(third))
        #expect(error.proxyFailure?.step == .forwardedRequest)
        #expect(error.description == "proxy http://127.0.0.1:\(server.port) rejected the credentials for user \"alice\" (407) to reach origin.test:8080")
        #expect(try await loop.submit { client.pool.connectionsOpened } == 1)
        let texts = transcript.texts
        #expect(texts.first?.hasPrefix("GET http://origin.test:8080/a?b=1 HTTP/1.1\r\nHost: origin.test:8080\r\n") == true)
        #expect(texts.allSatisfy { $0.contains("\r\nProxy-Authorization: Basic YWxpY2U6czNjcmV0\r\n") })
        #expect(texts.dropFirst().first?.hasPrefix("GET http://origin.test:8080/c HTTP/1.1\r\n") == true)
        await client.shutdown()
    }

    /// NO_PROXY decides per origin: a bypassed origin is connected to directly.
    @Test func noProxyOriginsGoDirect() async throws {
        let origin = try LoopbackServer(behaviour: .scripted { fd in
            guard Self.readHead(fd) != nil else { return }
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\ndirect")
        })
        defer { origin.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let unusedProxyPort = try LoopbackServer.unusedPort()
        let client = HTTPClient(loop: loop, proxy: ProxySettings(all: try ProxyURL("http://127.0.0.1:\(unusedProxyPort)"),
                                                                 noProxy: NoProxyList("127.0.0.0/8")))
        let (summary, body) = try await Self.get("http://127.0.0.1:\(origin.port)/", on: client).get()
        #expect(summary.head.status == 200)
        #expect(body == Array("direct".utf8))
        // Anything else still goes to the (absent) proxy, and says so.
        let failed = try #require(Self.proxyFailure(await Self.get("http://origin.test/", on: client)))
        #expect(failed.kind == .connectFailed)
        #expect(failed.description == "connect to 127.0.0.1:\(unusedProxyPort): Connection refused (through proxy http://127.0.0.1:\(unusedProxyPort) to origin.test:80)")
        await client.shutdown()
    }
}
