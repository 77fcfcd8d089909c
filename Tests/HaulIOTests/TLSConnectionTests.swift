import Synchronization
import Testing
@testable import HaulIO

@Suite("TLS connections")
struct TLSConnectionTests {
    let fixtures: TLSFixtures

    init() throws {
        fixtures = try TLSFixtures.shared.get()
    }

    /// Sends a request to `s_server -www` and reads the whole response.
    private func fetchStatusPage(over connection: Connection) async throws -> (String, ReadLoopEnd) {
        try await connection.write(Array("GET / HTTP/1.0\r\n\r\n".utf8))
        let response = Mutex<[UInt8]>([])
        let end = try await connection.readLoop { bytes in
            response.withLock { $0.append(contentsOf: bytes) }
            return .continueReading
        }
        return (String(decoding: response.withLock { $0 }, as: UTF8.self), end)
    }

    @Test(arguments: ["127.0.0.1", "localhost"])
    func handshakeVerifiesAgainstTheCAFileAndExchangesData(host: String) async throws {
        let server = try OpenSSLServer(cert: fixtures.server.cert, key: fixtures.server.key)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: fixtures.caFile))

        let connection = try await Connection.connect(to: host, port: server.port, tls: context, on: loop)
        defer { connection.close() }
        #expect(connection.tlsDetails?.applicationProtocol == "http/1.1")
        #expect(connection.tlsDetails?.protocolVersion == "TLSv1.3")
        // Session tickets arrive right after the handshake; they must not make the idle connection look dead.
        // Asked once they are in our socket (TLS 1.3 servers send them after reading our Finished).
        #expect(try await eventually { KernelSockets.pendingBytes(connection.socket.fileDescriptor) > 0 },
                "the server's session tickets never arrived")
        #expect(try await loop.submit { connection.isReusableOnLoop() })
        let (response, _) = try await fetchStatusPage(over: connection)
        #expect(response.hasPrefix("HTTP/1.0 200 ok"))
    }

    @Test func hotReadLoopReceivesALargeBodyIntact() async throws {
        let server = try OpenSSLServer(cert: fixtures.server.cert, key: fixtures.server.key, servingFilesFrom: fixtures.directory)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: fixtures.caFile))
        let connection = try await Connection.connect(to: "localhost", port: server.port, tls: context, on: loop)
        defer { connection.close() }
        try await connection.write(Array("GET /big.bin HTTP/1.0\r\n\r\n".utf8))

        struct Body { var head: [UInt8] = []; var bodyBytes = 0; var mismatches = 0; var largestChunk = 0 }
        let body = Mutex(Body())
        let end = try await connection.readLoop { bytes in
            body.withLock { state in
                state.largestChunk = max(state.largestChunk, bytes.count)
                var rest = bytes[...]
                if state.bodyBytes == 0 {
                    // Until the blank line, bytes belong to the response head.
                    while let byte = rest.first, !state.head.suffix(4).elementsEqual("\r\n\r\n".utf8) {
                        state.head.append(byte)
                        rest = rest.dropFirst()
                    }
                }
                for byte in rest {
                    if byte != TLSFixtures.bigFileByte(at: state.bodyBytes) { state.mismatches += 1 }
                    state.bodyBytes += 1
                }
            }
            return .continueReading
        }
        let received = body.withLock { $0 }
        #expect(String(decoding: received.head, as: UTF8.self).hasPrefix("HTTP/1.0 200 ok"))
        #expect(received.bodyBytes == TLSFixtures.bigFileSize)
        #expect(received.mismatches == 0)
        // Records are 16 KiB at most; the fill loop must hand over several per delivery.
        #expect(received.largestChunk > 16 * 1024)
        if case .endOfStream = end {} else { Issue.record("expected the server to end the stream, got \(end)") }
    }

    @Test func secondConnectionResumesTheSession() async throws {
        let server = try OpenSSLServer(cert: fixtures.server.cert, key: fixtures.server.key)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: fixtures.caFile))

        let first = try await Connection.connect(to: "127.0.0.1", port: server.port, tls: context, on: loop)
        #expect(first.tlsDetails?.sessionReused == false)
        // TLS 1.3 tickets arrive after the handshake, so read something before closing.
        _ = try await fetchStatusPage(over: first)
        // s_server -www closes after the response: the connection must not look reusable.
        #expect(try await loop.submit { first.isReusableOnLoop() } == false)
        first.close()
        #expect(context.hasCachedSession(host: "127.0.0.1", port: server.port))

        let second = try await Connection.connect(to: "127.0.0.1", port: server.port, tls: context, on: loop)
        defer { second.close() }
        #expect(second.tlsDetails?.sessionReused == true)
        let (response, _) = try await fetchStatusPage(over: second)
        #expect(response.hasPrefix("HTTP/1.0 200 ok"))
    }

    @Test func untrustedSelfSignedCertificateIsRejectedWithTheReason() async throws {
        let server = try OpenSSLServer(cert: fixtures.selfSigned.cert, key: fixtures.selfSigned.key)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        // The system store cannot know a certificate generated a moment ago.
        let context = try TLSContext(configuration: TLSSettings())
        do {
            let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, tls: context, on: loop)
            connection.close()
            Issue.record("accepted an untrusted self-signed certificate")
        } catch {
            #expect(error.kind == .tlsHandshakeFailed)
            #expect(error.description ==
                "TLS handshake with 127.0.0.1:\(server.port) failed: certificate verify failed: self-signed certificate")
        }
    }

    @Test func insecureConfigurationAcceptsTheSelfSignedCertificate() async throws {
        let server = try OpenSSLServer(cert: fixtures.selfSigned.cert, key: fixtures.selfSigned.key)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: .insecure)
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, tls: context, on: loop)
        defer { connection.close() }
        let (response, _) = try await fetchStatusPage(over: connection)
        #expect(response.hasPrefix("HTTP/1.0 200 ok"))
    }

    @Test(arguments: [("127.0.0.1", "IP address mismatch"), ("localhost", "hostname mismatch")])
    func certificateForAnotherNameIsRejected(host: String, reason: String) async throws {
        let server = try OpenSSLServer(cert: fixtures.otherName.cert, key: fixtures.otherName.key)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: fixtures.caFile))
        do {
            let connection = try await Connection.connect(to: host, port: server.port, tls: context, on: loop)
            connection.close()
            Issue.record("accepted a certificate issued for other.test when connecting to \(host)")
        } catch {
            #expect(error.kind == .tlsHandshakeFailed)
            #expect(error.description ==
                "TLS handshake with \(host):\(server.port) failed: certificate verify failed: \(reason)")
        }
    }

    @Test func missingCAFileFailsContextCreation() {
        #expect(throws: TLSSetupError.self) {
            _ = try TLSContext(configuration: TLSSettings(caFile: fixtures.directory + "/missing.pem"))
        }
    }

    @Test func peerVanishingWithoutCloseNotifyIsReportedDistinctly() async throws {
        let server = try OpenSSLServer(cert: fixtures.server.cert, key: fixtures.server.key)
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: fixtures.caFile))
        let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, tls: context, on: loop)
        defer { connection.close() }
        // Killing the server makes its kernel close the TCP connection without any TLS alert. It must have read
        // our Finished first: a socket closed with unread data is reset (ECONNRESET) instead of closed with FIN.
        // So wait until the server's end of the connection has nothing left unread.
        let port = server.port
        #expect(try await eventually {
            let ends = KernelSockets.entries().filter { $0.localPort == port && $0.state == KernelSockets.Entry.established }
            return !ends.isEmpty && ends.allSatisfy { $0.receiveQueue == 0 }
        }, "the server never read what we sent")
        server.stop()
        let end = try await connection.readLoop { _ in .continueReading }
        #expect(end == .endOfStream(.withoutCloseNotify))
    }

    /// A session that cannot be set up (SNI longer than the 255 bytes TLS allows) is released exactly once: the
    /// failure used to free the SSL object and then the deinitializer freed it again.
    @Test func sessionSetupFailureFreesTheSessionOnce() throws {
        let context = try TLSContext(configuration: .insecure)
        let socket = try TCPSocket(family: .ipv4, options: SocketOptions())
        defer { socket.close() }
        let host = String(repeating: "a", count: 300) + ".test"
        // Repeated, so that a double free corrupts the heap badly enough to be caught (glibc aborts).
        for _ in 0..<200 {
            do {
                _ = try TLSConnection(context: context, fileDescriptor: socket.fileDescriptor, host: host, port: 443)
                Issue.record("accepted a 305-byte SNI host name")
                return
            } catch {
                #expect(error.kind == .tlsHandshakeFailed)
                #expect(error.description.hasPrefix("TLS handshake with \(host):443 failed: cannot set SNI to \(host)"))
            }
        }
        #expect(context.connectionsMade.load(ordering: .relaxed) == 200)
    }

    @Test func handshakeTimesOutWhenTheServerNeverAnswers() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: fixtures.caFile))
        var options = ConnectionOptions()
        options.timeouts.tlsHandshake = .milliseconds(200)
        do {
            let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, tls: context, options: options, on: loop)
            connection.close()
            Issue.record("handshake completed against a silent server")
        } catch {
            #expect(error.kind == .tlsHandshakeTimedOut)
            #expect(error.description == "TLS handshake with 127.0.0.1:\(server.port) timed out after 200ms")
        }
    }
}
