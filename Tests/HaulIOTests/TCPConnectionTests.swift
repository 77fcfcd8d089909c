import Glibc
import Synchronization
import Testing
@testable import HaulIO

@Suite("TCP connections")
struct TCPConnectionTests {
    @Test(arguments: ["127.0.0.1", "::1"])
    func echoesBytesOverLoopback(host: String) async throws {
        let server = try LoopbackServer(host: host, behaviour: .echo)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }

        let connection = try await Connection.connect(to: host, port: server.port, on: loop)
        defer { connection.close() }
        #expect(connection.tlsDetails == nil)

        try await connection.write(Array("hello, haul".utf8))
        var received: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        while received.count < 11 {
            guard case .bytes(let count) = try await connection.read(into: buffer) else {
                Issue.record("stream ended early")
                return
            }
            received.append(contentsOf: buffer[..<count])
        }
        #expect(String(decoding: received, as: UTF8.self) == "hello, haul")
    }

    @Test func hotReadLoopSeesEveryByteInOrderAndStopsWhenAsked() async throws {
        let server = try LoopbackServer(behaviour: .echo)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { connection.close() }

        let payload = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let expected = payload
        // Written concurrently: the echo server only drains its side as we drain ours.
        async let written: Void = connection.write(payload)

        struct Progress { var count = 0; var mismatches = 0; var chunks = 0 }
        let progress = Mutex(Progress())
        let end = try await connection.readLoop { bytes in
            progress.withLock { state in
                for byte in bytes {
                    if byte != expected[state.count] { state.mismatches += 1 }
                    state.count += 1
                }
                state.chunks += 1
                return state.count == expected.count ? .stop : .continueReading
            }
        }
        try await written
        #expect(end == .stopped)
        let final = progress.withLock { $0 }
        #expect(final.count == payload.count)
        #expect(final.mismatches == 0)
        #expect(final.chunks > 1)
    }

    @Test func peerClosingEndsTheReadLoopCleanly() async throws {
        let server = try LoopbackServer(behaviour: .echo)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { connection.close() }
        try await connection.write(Array("bye".utf8))
        let received = Mutex(0)
        // Half-close our side so the echo server finishes and closes its side.
        try await loop.submit { try connection.socket.fileDescriptor.shutdownSending() }
        let end = try await connection.readLoop { bytes in
            received.withLock { $0 += bytes.count }
            return .continueReading
        }
        #expect(end == .endOfStream(.clean))
        #expect(received.withLock { $0 } == 3)
    }

    /// Between requests a connection keeps its epoll registration for reading (no `epoll_ctl` per request);
    /// the peer's close, which level-triggered epoll would report over and over, removes it.
    @Test func anIdleConnectionKeepsItsRegistrationUntilThePeerCloses() async throws {
        let server = try LoopbackServer(behaviour: .echo)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { connection.close() }
        let received = Mutex(0)
        // The read waits in epoll (registered) before the bytes are sent, as a response does.
        let reading = Task {
            try await connection.readLoop { bytes in
                received.withLock { $0 += bytes.count }
                return received.withLock { $0 } >= 2 ? .stop : .continueReading
            }
        }
        #expect(try await eventually { try await loop.submit { connection.registration != nil } })
        try await connection.write(Array("hi".utf8))
        #expect(try await reading.value == .stopped)
        let kept = try await loop.submit { connection.registration != nil && connection.registeredInterest == .readable }
        #expect(kept, "still registered for reading while idle")
        try await loop.submit { try connection.socket.fileDescriptor.shutdownSending() }
        let released = try await eventually { try await loop.submit { connection.registration == nil } }
        #expect(released, "the peer's close while idle removes the registration")
        #expect(!(try await loop.submit { connection.isReusableOnLoop() }))
    }

    @Test func idleConnectionIsNoLongerReusableOnceThePeerCloses() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { connection.close() }
        #expect(try await loop.submit { connection.isReusableOnLoop() })
        server.stop()
        // The FIN reaches us a moment after the server closes: wait for the verdict to change.
        let noLongerReusable = try await eventually { !(try await loop.submit { connection.isReusableOnLoop() }) }
        #expect(noLongerReusable)
    }

    @Test func refusedConnectionNamesHostPortAndErrno() async throws {
        let port = try LoopbackServer.unusedPort()
        let loop = try EventLoop()
        defer { loop.shutdown() }
        do {
            _ = try await Connection.connect(to: "127.0.0.1", port: port, on: loop)
            Issue.record("connected to a port nobody listens on")
        } catch {
            #expect(error.kind == .connectFailed)
            #expect(error.systemError?.errno == ECONNREFUSED)
            #expect(error.description == "connect to 127.0.0.1:\(port): Connection refused")
        }
    }

    @Test func unresolvableHostIsReportedAsResolutionFailure() async throws {
        let loop = try EventLoop()
        defer { loop.shutdown() }
        // `.invalid` is reserved (RFC 2606) and never resolves.
        do {
            _ = try await Connection.connect(to: "no-such-host.invalid", port: 80, on: loop)
            Issue.record("resolved a .invalid name")
        } catch {
            #expect(error.kind == .resolutionFailed)
            #expect(error.description.hasPrefix("resolve no-such-host.invalid: "))
        }
    }

    @Test func connectTimesOutAgainstAFullBacklog() async throws {
        // A listener that never accepts: once its backlog is full, the kernel drops further SYNs.
        let server = try LoopbackServer(behaviour: .neverAccept, backlog: 0)
        defer { server.stop() }
        let fillers = try TCPConnectionTests.fillBacklogForTests(port: server.port)
        defer { fillers.forEach { close($0) } }

        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.connect = .milliseconds(300)
        let started = MonotonicInstant.now()
        do {
            let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options, on: loop)
            connection.close()
            Issue.record("connected although the backlog was full")
        } catch {
            #expect(error.kind == .connectTimedOut)
            #expect(error.description.hasPrefix("connect to 127.0.0.1:\(server.port) timed out after 300ms"))
        }
        #expect(MonotonicInstant.now().nanoseconds(since: started) >= 290_000_000, "not before the timeout")
    }

    @Test func cancellingTheTaskAbandonsAHangingConnect() async throws {
        let server = try LoopbackServer(behaviour: .neverAccept, backlog: 0)
        defer { server.stop() }
        let fillers = try TCPConnectionTests.fillBacklogForTests(port: server.port)
        defer { fillers.forEach { close($0) } }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let port = server.port
        var options = ConnectionOptions()
        options.timeouts.connect = .seconds(600)
        let connecting = Task { [options] in try await Connection.connect(to: "127.0.0.1", port: port, options: options, on: loop) }
        // Cancelled once the connect really hangs: the kernel has a SYN out to the full listener.
        let hanging = try await eventually {
            KernelSockets.entries().contains { $0.remotePort == port && $0.state == KernelSockets.Entry.synSent }
        }
        connecting.cancel()
        #expect(hanging, "no connect to port \(port) was ever pending")
        do {
            _ = try await connecting.value
            Issue.record("connected although the backlog was full")
        } catch let error as ConnectionError {
            #expect(error.kind == .closed)
            #expect(error.description == "connection to 127.0.0.1:\(port) closed: connect cancelled")
        }
        // "connect cancelled" rather than a timeout says the cancel ended it, long before the 600 s timeout.
    }

    @Test func handlerCanReplaceItselfFromInsideTheCallback() async throws {
        let server = try LoopbackServer(behaviour: .echo)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { connection.close() }
        try await connection.write(Array("abcdef".utf8))
        // The first handler takes one byte's worth of attention, then hands over to a second one.
        let seen: String = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                var text = ""
                connection.startReadingOnLoop { event in
                    guard case .bytes(let first) = event else { return .stop }
                    text += String(decoding: first, as: UTF8.self)
                    if text.count >= 6 {
                        continuation.resume(returning: text)
                        return .stop
                    }
                    connection.startReadingOnLoop { event in
                        guard case .bytes(let more) = event else { return .stop }
                        text += String(decoding: more, as: UTF8.self)
                        if text.count >= 6 {
                            continuation.resume(returning: text)
                            return .stop
                        }
                        return .continueReading
                    }
                    return .continueReading
                }
            }
        }
        #expect(seen == "abcdef")
    }

    /// Connections on one loop share its receive buffer: a handler that starts another connection's read must
    /// still see its own bytes afterwards, and the other connection gets its own bytes on the next turn.
    @Test func handlerStartingAnotherConnectionsReadKeepsItsBytes() async throws {
        let server = try LoopbackServer(behaviour: .echo)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let first = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        let second = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        defer { first.close(); second.close() }
        try await first.write(Array("first".utf8))
        try await second.write(Array("second".utf8))
        // Both echoes are waiting in their sockets before any read starts.
        #expect(try await eventually {
            KernelSockets.pendingBytes(first.socket.fileDescriptor) == 5 && KernelSockets.pendingBytes(second.socket.fileDescriptor) == 6
        }, "the echoes never arrived")
        let (own, other): (String, String) = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                var ownAfterStartingTheOther = ""
                first.startReadingOnLoop { event in
                    guard case .bytes(let bytes) = event else { return .stop }
                    second.startReadingOnLoop { event in
                        guard case .bytes(let otherBytes) = event else { return .stop }
                        continuation.resume(returning: (ownAfterStartingTheOther, String(decoding: otherBytes, as: UTF8.self)))
                        return .stop
                    }
                    ownAfterStartingTheOther = String(decoding: bytes, as: UTF8.self)
                    return .stop
                }
            }
        }
        #expect(own == "first")
        #expect(other == "second")
    }

    @Test func idleTimeoutFailsAStalledRead() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        var options = ConnectionOptions()
        options.timeouts.idle = .milliseconds(200)
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options, on: loop)
        let started = MonotonicInstant.now()
        do {
            _ = try await connection.readLoop { _ in .continueReading }
            Issue.record("read loop ended without the idle timeout")
        } catch let error as ConnectionError {
            #expect(error.kind == .idleTimedOut)
            #expect(error.description == "connection to 127.0.0.1:\(server.port) stalled: no data for 200ms")
        }
        #expect(MonotonicInstant.now().nanoseconds(since: started) >= 190_000_000)
    }

    @Test func closingFailsAPendingReadWithClosed() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, on: loop)
        let reading = Task { try await connection.readLoop { _ in .continueReading } }
        // Closed once the read is really pending on the loop.
        #expect(try await eventually { try await loop.submit { connection.hasPendingOperation } }, "the read never started")
        connection.close()
        await #expect(throws: ConnectionError.self) { _ = try await reading.value }
        await #expect(throws: ConnectionError.self) { try await connection.write([1]) }
    }

    /// Opens connections until one no longer completes within 200 ms; returns the completed ones.
    static func fillBacklogForTests(port: UInt16) throws -> [Int32] {
        var fillers: [Int32] = []
        for _ in 0..<8 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            let address = SocketAddress(ipAddress: "127.0.0.1", port: port)!
            _ = try address.withSockAddr { (pointer, length) throws(SystemError) in connect(fd, pointer, length) }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, 200)
            var error: Int32 = 0
            var length = socklen_t(4)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if ready == 1 && error == 0 {
                fillers.append(fd)
            } else {
                close(fd)
                return fillers
            }
        }
        return fillers
    }
}

@Suite("Happy Eyeballs")
struct HappyEyeballsTests {
    private func address(_ ip: String) -> SocketAddress { SocketAddress(ipAddress: ip, port: 443)! }

    @Test func ordersIPv6FirstAndInterleavesFamilies() {
        let resolved = ["192.0.2.1", "192.0.2.2", "192.0.2.3", "2001:db8::1", "2001:db8::2"].map(address)
        let ordered = HappyEyeballs.connectionOrder(resolved)
        #expect(ordered.map(\.ipAddress) == ["2001:db8::1", "192.0.2.1", "2001:db8::2", "192.0.2.2", "192.0.2.3"])
    }

    @Test func keepsResolverOrderWithinASingleFamily() {
        let resolved = ["192.0.2.9", "192.0.2.1"].map(address)
        #expect(HappyEyeballs.connectionOrder(resolved) == resolved)
        #expect(HappyEyeballs.connectionOrder([]).isEmpty)
    }

    @Test func addressDescriptionsBracketIPv6() {
        #expect(address("::1").description == "[::1]:443")
        #expect(address("127.0.0.1").description == "127.0.0.1:443")
        #expect(SocketAddress(ipAddress: "localhost", port: 1) == nil)
    }

    @Test func nextAttemptStartsAfterTheDelayWhenTheFirstHangs() async throws {
        // The first address never answers (full backlog), the second accepts: the race must move on after the
        // attempt delay, well before the overall timeout.
        let hanging = try LoopbackServer(behaviour: .neverAccept, backlog: 0)
        defer { hanging.stop() }
        let fillers = try TCPConnectionTests.fillBacklogForTests(port: hanging.port)
        defer { fillers.forEach { close($0) } }
        let working = try LoopbackServer(host: "::1", behaviour: .echo)
        defer { working.stop() }

        let loop = try EventLoop()
        defer { loop.shutdown() }
        let started = MonotonicInstant.now()
        let connectedPort: UInt16 = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                let connector = HappyEyeballsConnector(
                    loop: loop, host: "test", port: 0, options: SocketOptions(), attemptDelay: .milliseconds(100),
                    timeout: .seconds(60)
                ) { result in
                    continuation.resume(with: result.map { socket in
                        defer { socket.close() }
                        return (try? LoopbackServer.peerPort(socket.fileDescriptor)) ?? 0
                    }.mapError { $0 as any Error })
                }
                connector.start(addresses: [
                    SocketAddress(ipAddress: "127.0.0.1", port: hanging.port)!,
                    SocketAddress(ipAddress: "::1", port: working.port)!,
                ])
            }
        }
        #expect(connectedPort == working.port)
        #expect(MonotonicInstant.now().nanoseconds(since: started) >= 95_000_000, "the second attempt waited for the delay")
    }

    @Test func failedAttemptStartsTheNextImmediately() async throws {
        let refused = try LoopbackServer.unusedPort()
        let working = try LoopbackServer(behaviour: .echo)
        defer { working.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let connected: Bool = try await withCheckedThrowingContinuation { continuation in
            loop.execute {
                let connector = HappyEyeballsConnector(
                    loop: loop, host: "test", port: 0, options: SocketOptions(), attemptDelay: .seconds(3600),
                    timeout: .seconds(60)
                ) { result in
                    if case .success(let socket) = result { socket.close() }
                    continuation.resume(returning: (try? result.get()) != nil)
                }
                connector.start(addresses: [
                    SocketAddress(ipAddress: "127.0.0.1", port: refused)!,
                    SocketAddress(ipAddress: "127.0.0.1", port: working.port)!,
                ])
            }
        }
        // Connected at all: the attempt delay (an hour) is far past the timeout (60 s), so only an attempt started
        // at once on the refusal can connect; waiting for the delay would end in the timeout instead.
        #expect(connected)
    }
}
