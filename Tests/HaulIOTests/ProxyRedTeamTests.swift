import Glibc
import HaulHTTP
import Synchronization
import Testing
@testable import HaulIO

/// Red-team attacks on the client side of each proxy protocol: scripted proxies on loopback that answer a
/// `CONNECT` or a SOCKS5 handshake in every broken way a hostile or buggy proxy could. The oracle for each: the
/// exchange fails (never a body taken from a broken tunnel), within a bound (the connect timeout at most), with an
/// error that names the proxy, the step and the target, and never shows the proxy's password; a refusal is asked
/// for once, never in a loop. (The well-behaved handshakes: `ProxyHandshakeTests`.)
@Suite("Proxy red team")
struct ProxyRedTeamTests {
    typealias Helpers = ProxyHandshakeTests

    /// The password in every proxy URL here, which no error may show.
    static let password = "s3cret"
    /// The connect timeout, which bounds the whole handshake: attacks that stall must end by it.
    static let connectTimeout: Duration = .milliseconds(500)

    /// One attack: the proxy's scheme and whether it has credentials, what the proxy does with a connection, and
    /// what the error must say (`{proxy}` is replaced by how errors name the proxy).
    struct Attack: Sendable, CustomTestStringConvertible {
        let name: String
        let socks: Bool
        let credentials: Bool
        let script: @Sendable (Int32, Tally) -> Void
        let expected: Expectation
        var testDescription: String { name }
    }

    enum Expectation: Sendable {
        /// The error's description starts with this.
        case prefix(String)
        /// The error's description ends with this (a failure after the tunnel opened, named with the route).
        case suffix(String)
    }

    /// What the proxy saw: requests (CONNECT heads or SOCKS5 CONNECT messages) and connections.
    final class Tally: Sendable {
        let requests = Atomic(0)
        let connections = Atomic(0)
    }

    /// Paced sending for replies that must arrive in several reads; stops once the client has gone.
    static func keepSending(_ fd: Int32, _ text: String, times: Int) {
        for _ in 0..<times {
            guard LoopbackServer.sendText(fd, text) else { return }
            usleep(20_000)  // the proxy's pacing: one piece per read, until the client's timeout ends it
        }
    }

    /// The greeting without credentials (`05 01 00`), answered with `05 00`; false if the client left.
    static func socksGreeting(_ fd: Int32) -> Bool {
        guard Helpers.readExactly(fd, 3) != nil else { return false }
        return send(fd, [5, 0] as [UInt8], 2, Int32(MSG_NOSIGNAL)) == 2
    }

    /// The CONNECT for `origin.test:8080` by name (ATYP 3).
    static func socksConnectRequest(_ fd: Int32, _ tally: Tally) -> Bool {
        guard let head = Helpers.readExactly(fd, 5), Helpers.readExactly(fd, Int(head[4]) + 2) != nil else { return false }
        tally.requests.add(1, ordering: .relaxed)
        return true
    }

    static func sendBytes(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    // MARK: HTTP CONNECT (to https://origin.test/)

    static let connectAttacks: [Attack] = [
        Attack(name: "CONNECT answered 200 with a body", socks: false, credentials: false, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 Connection established\r\nContent-Length: 5\r\n\r\nhello")
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the CONNECT to origin.test:443: 5 unexpected bytes after the 200 reply")),

        Attack(name: "CONNECT 200, then an HTTP response where the origin's TLS should be", socks: false, credentials: true, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\n\r\n")
            // The client speaks first (its ClientHello); the proxy answers it with plain HTTP.
            guard Helpers.readExactly(fd, 5) != nil else { return }
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .suffix("(through proxy {url} to origin.test:443)")),

        Attack(name: "CONNECT 200, then the proxy hangs up", socks: false, credentials: false, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\n\r\n")
        }, expected: .suffix("(through proxy {url} to origin.test:443)")),

        Attack(name: "407 to every CONNECT, credentials sent", socks: false, credentials: true, script: { fd, tally in
            while Helpers.readHead(fd) != nil {
                tally.requests.add(1, ordering: .relaxed)
                guard LoopbackServer.sendText(fd, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\n\r\n") else { return }
            }
        }, expected: .prefix("{proxy} rejected the credentials for user \"alice\" (407) to reach origin.test:443")),

        Attack(name: "407 to every CONNECT, no credentials", socks: false, credentials: false, script: { fd, tally in
            while Helpers.readHead(fd) != nil {
                tally.requests.add(1, ordering: .relaxed)
                guard LoopbackServer.sendText(fd, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\n\r\n") else { return }
            }
        }, expected: .prefix("{proxy} requires authentication (407) to reach origin.test:443")),

        Attack(name: "CONNECT reply head that never ends", socks: false, credentials: true, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\n")
            keepSending(fd, "X-Still-Coming: 1\r\n", times: 500)
        }, expected: .prefix("{proxy} did not complete the CONNECT to origin.test:443 within 500ms")),

        Attack(name: "CONNECT answered with 100 Continue forever", socks: false, credentials: false, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            keepSending(fd, "HTTP/1.1 100 Continue\r\n\r\n", times: 500)
        }, expected: .prefix("{proxy} sent a malformed reply during the CONNECT to origin.test:443")),

        Attack(name: "CONNECT reply head over the limit", socks: false, credentials: true, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "x", count: 512 << 10) + "\r\n\r\n")
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the CONNECT to origin.test:443")),

        Attack(name: "CONNECT reply cut short, then closed", socks: false, credentials: false, script: { fd, tally in
            guard Helpers.readHead(fd) != nil else { return }
            tally.requests.add(1, ordering: .relaxed)
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nVia: 1.1 proxy\r\n")
        }, expected: .prefix("{proxy} closed the connection during the CONNECT to origin.test:443")),
    ]

    // MARK: SOCKS5 (to http://origin.test:8080/ by name)

    static let socksAttacks: [Attack] = [
        Attack(name: "SOCKS5 method selection with version 4", socks: true, credentials: false, script: { fd, _ in
            guard Helpers.readExactly(fd, 3) != nil else { return }
            sendBytes(fd, [4, 0])
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the SOCKS5 greeting to origin.test:8080: the proxy answered with version 4, not SOCKS5")),

        Attack(name: "SOCKS5 proxy picks username/password that was not offered", socks: true, credentials: false, script: { fd, _ in
            guard Helpers.readExactly(fd, 3) != nil else { return }
            sendBytes(fd, [5, 2])
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the SOCKS5 greeting to origin.test:8080: the proxy chose authentication method 2, which was not offered")),

        Attack(name: "SOCKS5 username/password reply with version 5", socks: true, credentials: true, script: { fd, _ in
            guard Helpers.readExactly(fd, 4) != nil else { return }
            sendBytes(fd, [5, 2])
            guard let head = Helpers.readExactly(fd, 2), let rest = Helpers.readExactly(fd, Int(head[1]) + 1),
                  Helpers.readExactly(fd, Int(rest.last!)) != nil else { return }
            sendBytes(fd, [5, 0])
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the SOCKS5 authentication to origin.test:8080: the username/password reply has version 5, not 1")),

        Attack(name: "SOCKS5 CONNECT reply with version 4", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [4, 0, 0, 1, 127, 0, 0, 1, 0, 80])
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the SOCKS5 CONNECT to origin.test:8080: the proxy answered with version 4, not SOCKS5")),

        Attack(name: "SOCKS5 CONNECT reply whose name is shorter than its length byte, then silence", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0, 3, 200] + Array("abc".utf8))
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} did not complete the SOCKS5 CONNECT to origin.test:8080 within 500ms")),

        Attack(name: "SOCKS5 CONNECT reply whose name is shorter than its length byte, then closed", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0, 3, 200] + Array("abc".utf8))
        }, expected: .prefix("{proxy} closed the connection during the SOCKS5 CONNECT to origin.test:8080")),

        Attack(name: "SOCKS5 CONNECT reply cut short, then closed", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0])
        }, expected: .prefix("{proxy} closed the connection during the SOCKS5 CONNECT to origin.test:8080")),

        Attack(name: "SOCKS5 success with an unknown address type", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0, 7, 1, 2, 3, 4, 0, 80])
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the SOCKS5 CONNECT to origin.test:8080: the CONNECT reply has unknown address type 7")),

        Attack(name: "SOCKS5 success followed by a response before the request", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0, 1, 127, 0, 0, 1, 0, 80] + Array("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil".utf8))
            _ = LoopbackServer.drainUntilClosed(fd)
        }, expected: .prefix("{proxy} sent a malformed reply during the SOCKS5 CONNECT to origin.test:8080: 42 unexpected bytes after the reply")),

        Attack(name: "SOCKS5 tunnel opens, then the proxy hangs up", socks: true, credentials: true, script: { fd, tally in
            guard Helpers.readExactly(fd, 4) != nil else { return }
            sendBytes(fd, [5, 2])
            guard let head = Helpers.readExactly(fd, 2), let rest = Helpers.readExactly(fd, Int(head[1]) + 1),
                  Helpers.readExactly(fd, Int(rest.last!)) != nil else { return }
            sendBytes(fd, [1, 0])
            guard socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0, 1, 127, 0, 0, 1, 0, 80])
            _ = Helpers.readHead(fd)
        }, expected: .prefix("malformed response from origin.test:8080 (through proxy {url}): connection closed before any response byte")),

        Attack(name: "SOCKS5 tunnel opens, the origin's body is cut short", socks: true, credentials: false, script: { fd, tally in
            guard socksGreeting(fd), socksConnectRequest(fd, tally) else { return }
            sendBytes(fd, [5, 0, 0, 1, 127, 0, 0, 1, 0, 80])
            guard Helpers.readHead(fd) != nil else { return }
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
        }, expected: .prefix("malformed response from origin.test:8080 (through proxy {url}): incomplete message: body ended after 5 of 10 bytes")),
    ]

    @Test(arguments: connectAttacks + socksAttacks)
    func attack(_ attack: Attack) async throws {
        let tally = Tally()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            tally.connections.add(1, ordering: .relaxed)
            attack.script(fd, tally)
        })
        defer { server.stop() }
        let scheme = attack.socks ? "socks5h" : "http"
        let userInfo = attack.credentials ? "alice:\(Self.password)@" : ""
        let (client, loop) = try Helpers.client(proxy: "\(scheme)://\(userInfo)127.0.0.1:\(server.port)", timeout: Self.connectTimeout)
        defer { loop.shutdown() }
        let target = attack.socks ? "http://origin.test:8080/file" : "https://origin.test/file"
        let started = ContinuousClock.now
        let result = await Helpers.get(target, on: client)
        let elapsed = ContinuousClock.now - started
        await client.shutdown()

        guard case .failure(let failure) = result else {
            Issue.record("\(attack.name): the exchange succeeded through a broken proxy: \(result)")
            return
        }
        let description = "\(failure)"
        let proxyURL = "\(scheme)://127.0.0.1:\(server.port)"
        let proxyName = attack.socks ? "SOCKS5 proxy 127.0.0.1:\(server.port)" : "proxy \(proxyURL)"
        switch attack.expected {
        case .prefix(let text):
            let expected = text.replacing("{proxy}", with: proxyName).replacing("{url}", with: proxyURL)
            #expect(description.hasPrefix(expected), "\(attack.name): \(description)")
        case .suffix(let text):
            let expected = text.replacing("{url}", with: proxyURL)
            #expect(description.hasSuffix(expected), "\(attack.name): \(description)")
        }
        #expect(!description.contains(Self.password), "the proxy's password shows in \(description)")
        // Stalls end at the connect timeout, not at the 30 s idle one or never (generous for a loaded machine).
        #expect(elapsed < .seconds(15), "\(attack.name) took \(elapsed)")
        // A refusal or a broken reply is not asked for again: one connection, at most one CONNECT.
        #expect(tally.connections.load(ordering: .relaxed) == 1, "\(attack.name): \(tally.connections.load(ordering: .relaxed)) connections")
        #expect(tally.requests.load(ordering: .relaxed) <= 1, "\(attack.name): \(tally.requests.load(ordering: .relaxed)) CONNECTs")
    }

    // MARK: A proxy credential given as a header

    /// A `Proxy-Authorization` among the request's own headers (`-H`): through a SOCKS5 tunnel the request goes
    /// to the origin, which must not get the proxy's credential; forwarded in absolute form it goes to the
    /// proxy, which does get it (the user's field wins over the proxy URL's, as before).
    @Test func aProxyAuthorizationHeaderNeverCrossesATunnel() async throws {
        let seen = Mutex<[String]>([])
        let tunnel = try LoopbackServer(behaviour: .scripted { fd in
            guard Self.socksGreeting(fd), Self.socksConnectRequest(fd, Tally()) else { return }
            Self.sendBytes(fd, [5, 0, 0, 1, 127, 0, 0, 1, 0, 80])
            guard let head = Helpers.readHead(fd) else { return }
            seen.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { tunnel.stop() }
        let forward = try LoopbackServer(behaviour: .scripted { fd in
            guard let head = Helpers.readHead(fd) else { return }
            seen.withLock { $0.append(String(decoding: head, as: UTF8.self)) }
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { forward.stop() }
        for proxy in ["socks5h://127.0.0.1:\(tunnel.port)", "http://127.0.0.1:\(forward.port)"] {
            let (client, loop) = try Helpers.client(proxy: proxy)
            defer { loop.shutdown() }
            var request = RequestHead(url: try HTTPURL("http://origin.test:8080/file"))
            request.headers = HTTPFields([("X-Kept", "1"), ("proxy-authorization", "Basic c2VjcmV0"), ("Accept", "*/*")])
            let handler = CollectingHandler()
            let summary = try await client.exchange(request, handler: handler)
            #expect(summary.head.status == 200 && handler.body == Array("ok".utf8), "\(proxy)")
            await client.shutdown()
        }
        let heads = seen.withLock { $0 }
        #expect(heads.count == 2)
        let origin = try #require(heads.first { $0.hasPrefix("GET /file ") }, "\(heads)")
        #expect(!origin.lowercased().contains("proxy-authorization"), "the origin got the proxy's credential: \(origin)")
        #expect(origin.contains("\r\nX-Kept: 1\r\n") && origin.contains("\r\nAccept: */*\r\n"), "other fields stay: \(origin)")
        let forwarded = try #require(heads.first { $0.hasPrefix("GET http://origin.test:8080/file ") }, "\(heads)")
        #expect(forwarded.contains("\r\nproxy-authorization: Basic c2VjcmV0\r\n"), "the proxy gets it: \(forwarded)")
    }
}
