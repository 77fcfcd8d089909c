import Glibc
import HaulHTTP
import Synchronization
import Testing
@testable import HaulIO

/// One exchange driven from a test: started and cancelled on the loop, its completion recorded with the time.
///
/// A test that cancels gives the exchange a timeout of minutes, which the cancel must beat: the test's task
/// runs on the shared pool, which a loaded machine can starve for longer than a timeout of seconds.
final class ObservedExchange: Sendable {
    private let outcome = Mutex<(result: Result<ExchangeSummary, HTTPClientError>, at: MonotonicInstant)?>(nil)
    private let cancellation = Mutex<ExchangeCancellation?>(nil)
    let client: HTTPClient

    /// Starts `request` on `client`'s loop; with `cancelAtOnce`, cancels it in the same loop turn.
    init(_ request: RequestHead, on client: HTTPClient, cancelAtOnce: Bool = false) async throws {
        self.client = client
        let started = try await client.loop.submit { [self] in
            let cancellation = client.executeOnLoop(request, handler: CollectingHandler()) { [self] result in
                outcome.withLock { $0 = (result, .now()) }
            }
            if cancelAtOnce { cancellation.cancelOnLoop() }
            return cancellation
        }
        cancellation.withLock { $0 = started }
    }

    /// Cancels the exchange on the loop; returns when the cancel was made.
    func cancel() async throws -> MonotonicInstant {
        let cancellation = self.cancellation.withLock { $0 }
        return try await client.loop.submit {
            cancellation?.cancelOnLoop()
            return MonotonicInstant.now()
        }
    }

    /// The completion, waited for up to `seconds`.
    func completion(within seconds: Int) async throws -> (result: Result<ExchangeSummary, HTTPClientError>, at: MonotonicInstant)? {
        _ = try await eventually(within: seconds) { outcome.withLock { $0 != nil } }
        return outcome.withLock { $0 }
    }
}

@Suite("Exchange cancellation")
struct ExchangeCancellationTests {
    static func expectCancelled(_ result: Result<ExchangeSummary, HTTPClientError>, port: UInt16) {
        guard case .failure(.connection(let error)) = result else {
            Issue.record("expected a cancelled connection, got \(result)")
            return
        }
        #expect(error.kind == .closed)
        #expect(error.description == "connection to 127.0.0.1:\(port) closed: connect cancelled")
    }

    /// A connect that cannot complete (a full backlog) is abandoned on the spot, not left to its timeout.
    @Test func cancellingAbandonsAPendingConnectAtOnce() async throws {
        let server = try LoopbackServer(behaviour: .neverAccept, backlog: 0)
        defer { server.stop() }
        let fillers = try TCPConnectionTests.fillBacklogForTests(port: server.port)
        defer { fillers.forEach { close($0) } }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.connect = .seconds(600)
        let client = HTTPClient(loop: loop, connectionOptions: options)
        let exchange = try await ObservedExchange(try HTTPClientHeadTimeoutTests.request(port: server.port), on: client,
                                                  cancelAtOnce: true)
        let completion = try #require(try await exchange.completion(within: 20))
        // "connect cancelled", not the connect timeout: the cancel ended it.
        Self.expectCancelled(completion.result, port: server.port)
        #expect(try await loop.submit { client.pool.connectionsOpened } == 0)
        await client.shutdown()
    }

    /// Cancelled in the very turn it started, while TCP is still connecting to a TLS port: the exchange ends at
    /// once and no TLS handshake is ever started (the server would never answer one).
    @Test func cancellingBeforeTheConnectCompletesStartsNoHandshake() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.tlsHandshake = .seconds(600)
        let client = HTTPClient(loop: loop, tls: .insecure, connectionOptions: options)
        let exchange = try await ObservedExchange(try HTTPClientHeadTimeoutTests.request(port: server.port, scheme: "https"),
                                                  on: client, cancelAtOnce: true)
        let completion = try #require(try await exchange.completion(within: 40))
        Self.expectCancelled(completion.result, port: server.port)
        // Anything the loop would still do for the attempt (a late connect, a handshake) is queued by now.
        _ = try await loop.submit { () }
        let handshakes = try await loop.submit { client.tls.context?.connectionsMade.load(ordering: .relaxed) }
        #expect(handshakes == 0)
        await client.shutdown()
    }

    /// Cancelled mid-handshake (the server read the ClientHello and went quiet): the socket closes and the
    /// exchange ends at once, long before the handshake timeout.
    @Test func cancellingAbandonsATLSHandshakeInProgress() async throws {
        struct Seen { var helloBytes = 0; var closed = false }
        let seen = Mutex(Seen())
        let server = try LoopbackServer(behaviour: .scripted { fd in
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            seen.withLock { $0.helloBytes = max(count, 0) }
            _ = LoopbackServer.drainUntilClosed(fd)
            seen.withLock { $0.closed = true }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.tlsHandshake = .seconds(600)
        let client = HTTPClient(loop: loop, tls: .insecure, connectionOptions: options)
        let exchange = try await ObservedExchange(try HTTPClientHeadTimeoutTests.request(port: server.port, scheme: "https"),
                                                  on: client)
        #expect(try await eventually { seen.withLock { $0.helloBytes > 0 } }, "the server never got a ClientHello")
        _ = try await exchange.cancel()
        let completion = try #require(try await exchange.completion(within: 40))
        // Cancelled, not failed by the handshake timeout.
        Self.expectCancelled(completion.result, port: server.port)
        #expect(try await eventually { seen.withLock { $0.closed } }, "the server never saw the connection close")
        #expect(try await loop.submit { client.tls.context?.connectionsMade.load(ordering: .relaxed) } == 1)
        await client.shutdown()
    }

    /// A cancelled exchange on a reused connection closes that connection itself; that must not pass for a
    /// stale keep-alive connection and send the request again on a new one.
    @Test func cancellingOnAReusedConnectionDoesNotReconnect() async throws {
        let requests = Mutex(0)
        let server = try LoopbackServer(behaviour: .scripted { fd in
            while LoopbackServer.readRequestHead(fd) {
                let number = requests.withLock { count in
                    count += 1
                    return count
                }
                if number == 1 { LoopbackServer.sendText(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n") }
            }
        })
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop)
        let request = try HTTPClientHeadTimeoutTests.request(port: server.port)
        let first = try await client.exchange(request, handler: CollectingHandler())
        #expect(first.connectionReusable)

        let exchange = try await ObservedExchange(request, on: client, cancelAtOnce: true)
        let completion = try #require(try await exchange.completion(within: 40))
        guard case .failure(.connection(let error)) = completion.result else {
            Issue.record("expected a closed connection, got \(completion.result)")
            return
        }
        #expect(error.kind == .closed)
        #expect(try await loop.submit { client.pool.connectionsOpened } == 1)
        await client.shutdown()
    }
}

@Suite("Event loop shutdown joins")
struct EventLoopShutdownJoinTests {
    /// Every caller of `shutdown`, not only the first, returns after the loop thread has finished.
    @Test func concurrentShutdownsAllWaitForTheLoopThread() async throws {
        let loop = try EventLoop()
        var gate: [Int32] = [0, 0]
        try #require(pipe(&gate) == 0)
        defer { close(gate[0]); close(gate[1]) }
        let readEnd = gate[0]
        let lastTaskDone = Atomic<Bool>(false)
        // The loop's last task blocks until the test lets it go.
        loop.execute {
            var byte: UInt8 = 0
            _ = read(readEnd, &byte, 1)
            lastTaskDone.store(true, ordering: .releasing)
        }
        let calling = Atomic<Int>(0)
        let returnedEarly = Atomic<Int>(0)
        let returned = Atomic<Int>(0)
        for index in 0..<2 {
            try PosixThread.spawnDetached(name: "test-shutdown-\(index)") {
                calling.wrappingAdd(1, ordering: .relaxed)
                loop.shutdown()
                if !lastTaskDone.load(ordering: .acquiring) { returnedEarly.wrappingAdd(1, ordering: .relaxed) }
                returned.wrappingAdd(1, ordering: .releasing)
            }
        }
        #expect(try await eventually { calling.load(ordering: .relaxed) == 2 })
        #expect(returned.load(ordering: .acquiring) == 0)
        var byte: UInt8 = 1
        #expect(write(gate[1], &byte, 1) == 1)
        #expect(try await eventually { returned.load(ordering: .acquiring) == 2 })
        #expect(returnedEarly.load(ordering: .relaxed) == 0)
    }
}
