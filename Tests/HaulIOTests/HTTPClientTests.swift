import Glibc
import HaulHTTP
import Synchronization
import Testing
@testable import HaulIO

/// Collects a response body; used only on the loop thread.
final class CollectingHandler: ResponseHandler, @unchecked Sendable {
    // @unchecked Sendable: touched only on the loop thread, as ResponseHandler requires.
    private(set) var body: [UInt8] = []

    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision { .receiveBody }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        body.append(contentsOf: bytes)
        return .continue
    }
}

/// An HTTP server script's own pacing (it stands for a slow server, not for test ordering).
func pause(milliseconds: Int) { usleep(UInt32(milliseconds * 1000)) }

@Suite("HTTP client head timeout")
struct HTTPClientHeadTimeoutTests {
    static func request(port: UInt16, scheme: String = "http") throws -> RequestHead {
        RequestHead(url: try HTTPURL("\(scheme)://127.0.0.1:\(port)/file"))
    }

    /// Runs one GET; the client error if it failed.
    static func failure(of request: RequestHead, on client: HTTPClient) async -> HTTPClientError? {
        do {
            _ = try await client.exchange(request, handler: CollectingHandler())
            return nil
        } catch {
            return error
        }
    }

    /// One byte of the head every 100 ms keeps the idle timeout from firing; the head timeout (given, or the
    /// idle value when nil) must end the exchange anyway. The idle limit is ten drips or more, so that a server
    /// thread a loaded machine leaves waiting for a few hundred milliseconds cannot look like a stall.
    @Test(arguments: [(Duration.seconds(2), Duration?.some(.milliseconds(500)), "500ms"), (.seconds(1), nil, "1s")])
    func headDrippingInOneByteAtATimeTimesOut(idle: Duration, head: Duration?, limitText: String) async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard LoopbackServer.readRequestHead(fd) else { return }
            for byte in "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" {
                guard LoopbackServer.sendText(fd, String(byte)) else { return }
                pause(milliseconds: 100)
            }
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = idle
        options.timeouts.head = head
        let client = HTTPClient(loop: loop, connectionOptions: options)
        let started = MonotonicInstant.now()
        let error = await Self.failure(of: try Self.request(port: server.port), on: client)
        let elapsed = MonotonicInstant.now().nanoseconds(since: started)
        await client.shutdown()

        guard case .connection(let connectionError)? = error else {
            Issue.record("expected a head timeout, got \(String(describing: error))")
            return
        }
        #expect(connectionError.kind == .headTimedOut)
        #expect(connectionError.description == "no complete response head from 127.0.0.1:\(server.port) within \(limitText)")
        #expect(error?.isTransient == true)
        let limit = head ?? idle
        #expect(elapsed >= UInt64(limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000) - 10_000_000)
    }

    @Test func interimResponsesEveryFewHundredMillisecondsTimeOut() async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard LoopbackServer.readRequestHead(fd) else { return }
            while LoopbackServer.sendText(fd, "HTTP/1.1 100 Continue\r\n\r\n") { pause(milliseconds: 300) }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.head = .milliseconds(500)
        let client = HTTPClient(loop: loop, connectionOptions: options)
        let error = await Self.failure(of: try Self.request(port: server.port), on: client)
        await client.shutdown()
        guard case .connection(let connectionError)? = error else {
            Issue.record("expected a head timeout, got \(String(describing: error))")
            return
        }
        #expect(connectionError.kind == .headTimedOut)
    }

    @Test func aBurstOfInterimResponsesHitsTheParserLimit() async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard LoopbackServer.readRequestHead(fd) else { return }
            LoopbackServer.sendText(fd, String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 20))
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop)
        let error = await Self.failure(of: try Self.request(port: server.port), on: client)
        await client.shutdown()
        guard case .malformedResponse(let parseError, _, _)? = error else {
            Issue.record("expected the interim limit, got \(String(describing: error))")
            return
        }
        #expect(parseError == HTTPParseError(.tooManyInterimResponses(limit: 5), offset: 125))
    }

    /// The head timer stops at the head: a body slower than the head limit is fine, and the connection is
    /// reused for a second exchange that is no different. (The head limit is a second, not less: the server's
    /// thread must answer within it, and a loaded machine can keep a thread waiting for hundreds of ms.)
    @Test func aPromptHeadWithASlowBodyIsUnaffected() async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            while LoopbackServer.readRequestHead(fd) {
                guard LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe") else { return }
                pause(milliseconds: 1_500)
                guard LoopbackServer.sendText(fd, "llo") else { return }
            }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.head = .seconds(1)
        let client = HTTPClient(loop: loop, connectionOptions: options)
        for _ in 0..<2 {
            let handler = CollectingHandler()
            let summary = try await client.exchange(try Self.request(port: server.port), handler: handler)
            #expect(summary.head.status == 200)
            #expect(summary.complete)
            #expect(summary.connectionReusable)
            #expect(try await loop.submit { handler.body } == Array("hello".utf8))
        }
        #expect(try await loop.submit { client.pool.connectionsOpened } == 1)
        await client.shutdown()
    }

    @Test func headTimeoutDefaultsToNilAndExistingInitializersStillCompile() {
        let timeouts = ConnectionTimeouts(connect: .seconds(1), tlsHandshake: .seconds(2), idle: .seconds(3))
        #expect(timeouts.head == nil)
        #expect(timeouts.effectiveHead == .seconds(3))
        #expect(ConnectionTimeouts(idle: nil).effectiveHead == nil)
        #expect(ConnectionTimeouts(idle: nil, head: .seconds(4)).effectiveHead == .seconds(4))
    }
}

@Suite("HTTP client silent server")
struct HTTPClientSilentServerTests {
    /// A server that reads the request and never answers.
    static func silentServer() throws -> LoopbackServer {
        try LoopbackServer(behaviour: .scripted { fd in
            guard LoopbackServer.readRequestHead(fd) else { return }
            _ = LoopbackServer.drainUntilClosed(fd)
        })
    }

    /// With the head limit taken from the idle one, a server that sends nothing at all is a stall, reported as
    /// the transport always reported it, not as a slow head.
    @Test func silenceIsAStallWhenTheHeadLimitIsTheIdleOne() async throws {
        let server = try Self.silentServer()
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = .milliseconds(300)
        let client = HTTPClient(loop: loop, connectionOptions: options)
        let error = await HTTPClientHeadTimeoutTests.failure(of: try HTTPClientHeadTimeoutTests.request(port: server.port), on: client)
        await client.shutdown()
        guard case .connection(let connectionError)? = error else {
            Issue.record("expected a stall, got \(String(describing: error))")
            return
        }
        #expect(connectionError.kind == .idleTimedOut)
        #expect(connectionError.description == "connection to 127.0.0.1:\(server.port) stalled: no data for 300ms")
    }

    /// A head limit shorter than the idle one applies to silence too.
    /// The head timer is re-armed lazily, not set and cancelled per exchange: the second request on a kept-alive
    /// connection finds the first's timer still pending, due before its own limit. That timer must not end the
    /// second exchange early: its limit counts from its own request.
    @Test func aReusedConnectionsHeadLimitCountsFromItsOwnRequest() async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard LoopbackServer.readRequestHead(fd),
                  LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
                  LoopbackServer.readRequestHead(fd) else { return }
            _ = LoopbackServer.drainUntilClosed(fd)
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = .seconds(20)
        options.timeouts.head = .milliseconds(300)
        let client = HTTPClient(loop: loop, connectionOptions: options)
        let request = try HTTPClientHeadTimeoutTests.request(port: server.port)
        #expect(await HTTPClientHeadTimeoutTests.failure(of: request, on: client) == nil)
        let started = MonotonicInstant.now()
        let error = await HTTPClientHeadTimeoutTests.failure(of: request, on: client)
        let elapsed = MonotonicInstant.now().nanoseconds(since: started)
        #expect(try await loop.submit { client.pool.connectionsOpened } == 1)
        await client.shutdown()
        guard case .connection(let connectionError)? = error else {
            Issue.record("expected a head timeout, got \(String(describing: error))")
            return
        }
        #expect(connectionError.kind == .headTimedOut)
        #expect(elapsed >= 300_000_000, "timed out after \(elapsed) ns, before its 300 ms")
    }

    @Test func silenceHitsAShorterHeadLimit() async throws {
        let server = try Self.silentServer()
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = .seconds(20)
        options.timeouts.head = .milliseconds(300)
        let client = HTTPClient(loop: loop, connectionOptions: options)
        let error = await HTTPClientHeadTimeoutTests.failure(of: try HTTPClientHeadTimeoutTests.request(port: server.port), on: client)
        await client.shutdown()
        guard case .connection(let connectionError)? = error else {
            Issue.record("expected a head timeout, got \(String(describing: error))")
            return
        }
        // The head limit, not the 20 s idle one, ended it: the kind and the 300ms in the message say so.
        #expect(connectionError.kind == .headTimedOut)
        #expect(connectionError.description == "no complete response head from 127.0.0.1:\(server.port) within 300ms")
    }
}

/// What the server of `aResponseSentTwiceIsNeverTheNextRequestsAnswer` has done, shared with the test.
private final class DuplicatingServerState: Sendable {
    let value = Mutex((answered: 0, duplicateSent: false))
}

/// What the server of `aCopyThatArrivesInTheTurnOfTheReadIsSeenByTheNextCheckout` was told and has done.
private final class SameTurnServerState: Sendable {
    let value = Mutex((answered: 0, sendCopy: false, copySent: false))
}

/// What the server of `aConnectionTheServerClosedOrWroteToWhileIdleIsNeverUsedAgain` has done, shared with the test.
private final class IdleServerState: Sendable {
    let value = Mutex((connections: 0, clientIdle: false, sentWhileIdle: false, firstDone: false, laterRequests: 0))
}

/// Reuse of a pooled connection: each is checked before reuse (by the loop's readiness reports or a peek), so a
/// connection the server closed is not used again and bytes a server sent after its response unasked never
/// become the answer to the next request.
@Suite("Connection pool reuse")
struct ConnectionPoolReuseTests {
    /// A keep-alive connection the server closes (FIN), or sends an unasked copy of its response on, while it
    /// sits idle in the pool (well after the response, so the last read found nothing more): the next request
    /// goes on a new connection, and none is ever sent on the first one (the server goes on reading it).
    @Test(arguments: [false, true])
    func aConnectionTheServerClosedOrWroteToWhileIdleIsNeverUsedAgain(sendsACopyInstead: Bool) async throws {
        let state = IdleServerState()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            let first = state.value.withLock { state in
                defer { state.connections += 1 }
                return state.connections == 0
            }
            guard first else {
                while LoopbackServer.readRequestHead(fd) {
                    guard LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nworld") else { return }
                }
                return
            }
            defer { state.value.withLock { $0.firstDone = true } }
            guard LoopbackServer.readRequestHead(fd),
                  LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") else { return }
            // Only once the client holds the connection idle (a condition, with a deadline).
            let deadline = ContinuousClock.now + .seconds(10)
            while !state.value.withLock({ $0.clientIdle }), ContinuousClock.now < deadline { usleep(1000) }
            if sendsACopyInstead {
                guard LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") else { return }
            } else {
                shutdown(fd, Int32(SHUT_WR))
            }
            state.value.withLock { $0.sentWhileIdle = true }
            // Ends when the client closes its side; a request sent on this connection from now on is counted.
            if LoopbackServer.readRequestHead(fd) { state.value.withLock { $0.laterRequests += 1 } }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, connectionOptions: ConnectionOptions())
        let request = try HTTPClientHeadTimeoutTests.request(port: server.port)
        let first = CollectingHandler()
        _ = try await client.exchange(request, handler: first)
        #expect(try await loop.submit { first.body } == Array("hello".utf8))
        state.value.withLock { $0.clientIdle = true }
        #expect(try await eventually { state.value.withLock { $0.sentWhileIdle } })
        let second = CollectingHandler()
        _ = try await client.exchange(request, handler: second)
        #expect(try await loop.submit { second.body } == Array("world".utf8))
        #expect(try await loop.submit { client.pool.connectionsOpened } == 2)
        #expect(try await eventually { state.value.withLock { $0.firstDone } }, "the client closed the first connection")
        #expect(state.value.withLock { $0.laterRequests } == 0, "no request went out on the first connection")
        await client.shutdown()
    }

    /// Back-to-back requests reuse one connection, and the pool hands it out without a `recv(MSG_PEEK)`: its
    /// latest read drained the socket and it stayed registered with the loop, which reported nothing.
    @Test func aQuietPooledConnectionIsReusedWithoutAPeek() async throws {
        let server = try LoopbackServer(behaviour: .scripted { fd in
            while LoopbackServer.readRequestHead(fd) {
                guard LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello") else { return }
            }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, connectionOptions: ConnectionOptions())
        let request = try HTTPClientHeadTimeoutTests.request(port: server.port)
        for round in 0..<3 {
            let handler = CollectingHandler()
            _ = try await client.exchange(request, handler: handler)
            #expect(try await loop.submit { handler.body } == Array("hello".utf8), "round \(round)")
        }
        #expect(try await loop.submit { client.pool.connectionsOpened } == 1)
        let peeks = try await loop.submit { () -> Int? in
            guard let connection = client.pool.takeIdleOnLoop(request.url.origin, identity: client.identity) else { return nil }
            defer { client.pool.returnOnLoop(connection) }
            return connection.transport.reusePeeks
        }
        #expect(peeks == 0, "three checkouts (two reuses, one here), no peek")
        await client.shutdown()
    }
    @Test func aConnectionTheServerClosedRightAfterItsResponseCostsOnlyANewConnection() async throws {
        // Each connection answers one request, allowing keep-alive, and is then closed by the server.
        let server = try LoopbackServer(behaviour: .scripted { fd in
            guard LoopbackServer.readRequestHead(fd) else { return }
            _ = LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, connectionOptions: ConnectionOptions())
        for round in 0..<3 {
            let handler = CollectingHandler()
            let summary = try await client.exchange(try HTTPClientHeadTimeoutTests.request(port: server.port), handler: handler)
            #expect(summary.head.status == 200, "round \(round)")
            #expect(try await loop.submit { handler.body } == Array("hello".utf8), "round \(round)")
        }
        #expect(try await loop.submit { client.pool.connectionsOpened } == 3)
        await client.shutdown()
    }

    /// A server's copy of its response that arrives after the client read the response but in the same turn
    /// of the loop, before the next request takes the connection (a list starts its next file from the
    /// completion, in that turn): no `epoll_wait` has looked at the socket since the read, so the checkout must
    /// peek. It did not (the no-peek checkout trusted the latest read alone), and the copy became the next
    /// answer. The loop is held inside the completion until the copy is in the socket, so the order is exact.
    @Test func aCopyThatArrivesInTheTurnOfTheReadIsSeenByTheNextCheckout() async throws {
        let response = { @Sendable (body: String) in "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n\(body)" }
        let state = SameTurnServerState()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            while LoopbackServer.readRequestHead(fd) {
                let first = state.value.withLock { state in
                    defer { state.answered += 1 }
                    return state.answered == 0
                }
                guard LoopbackServer.sendText(fd, response(first ? "hello" : "world")) else { return }
                guard first else { continue }
                let deadline = ContinuousClock.now + .seconds(10)
                while !state.value.withLock({ $0.sendCopy }), ContinuousClock.now < deadline { usleep(500) }
                guard LoopbackServer.sendText(fd, response("hello")) else { return }
                state.value.withLock { $0.copySent = true }
            }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, connectionOptions: ConnectionOptions())
        let request = try HTTPClientHeadTimeoutTests.request(port: server.port)
        let first = CollectingHandler()
        let second = CollectingHandler()
        let ended: Bool = await withCheckedContinuation { continuation in
            loop.execute {
                client.executeOnLoop(request, handler: first) { result in
                    guard case .success = result else { continuation.resume(returning: false); return }
                    // Still the turn that read the response: the copy goes out now, and the loop waits for it.
                    state.value.withLock { $0.sendCopy = true }
                    let deadline = ContinuousClock.now + .seconds(10)
                    while !state.value.withLock({ $0.copySent }), ContinuousClock.now < deadline { usleep(200) }
                    client.executeOnLoop(request, handler: second) { result in
                        guard case .success = result else { continuation.resume(returning: false); return }
                        continuation.resume(returning: true)
                    }
                }
            }
        }
        #expect(ended)
        #expect(state.value.withLock { $0.copySent })
        #expect(try await loop.submit { first.body } == Array("hello".utf8))
        #expect(try await loop.submit { second.body } == Array("world".utf8), "the copy was read as the next answer")
        #expect(try await loop.submit { client.pool.connectionsOpened } == 2)
        await client.shutdown()
    }

    /// A server that sends its response twice (a framing lie): the copy must not be read as the answer to
    /// the next request on that connection, however soon the connection is reused — with a list of files of
    /// one size, the copy would pass every check and the next file would be the first file's bytes.
    @Test func aResponseSentTwiceIsNeverTheNextRequestsAnswer() async throws {
        let response = { @Sendable (body: String) in "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n\(body)" }
        let state = DuplicatingServerState()
        let server = try LoopbackServer(behaviour: .scripted { fd in
            while LoopbackServer.readRequestHead(fd) {
                let first = state.value.withLock { state in
                    defer { state.answered += 1 }
                    return state.answered == 0
                }
                guard LoopbackServer.sendText(fd, response(first ? "hello" : "world")) else { return }
                guard first else { continue }
                guard LoopbackServer.sendText(fd, response("hello")) else { return }
                state.value.withLock { $0.duplicateSent = true }
            }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, connectionOptions: ConnectionOptions())
        let request = try HTTPClientHeadTimeoutTests.request(port: server.port)
        let first = CollectingHandler()
        _ = try await client.exchange(request, handler: first)
        #expect(try await loop.submit { first.body } == Array("hello".utf8))
        // The copy is in the connection's socket before the next request is made (a condition, not a delay).
        let deadline = ContinuousClock.now + .seconds(10)
        while !state.value.withLock({ $0.duplicateSent }), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(state.value.withLock { $0.duplicateSent })
        let second = CollectingHandler()
        _ = try await client.exchange(request, handler: second)
        #expect(try await loop.submit { second.body } == Array("world".utf8))
        #expect(try await loop.submit { client.pool.connectionsOpened } == 2)
        await client.shutdown()
    }
}
