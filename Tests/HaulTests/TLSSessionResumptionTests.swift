import Foundation
@testable import Haul
import HaulHTTP
@testable import HaulIO
import HaulTestSupport
import Testing

/// TLS session resumption and keep-alive reuse against nginx over HTTPS (the test CA): a new connection to an
/// origin resumes the session of an earlier one, never one made under another name, on another port or over
/// another route; and a list of small downloads runs over at most as many TLS connections as it runs at once.
@Suite("TLS session resumption with nginx", .serialized)
struct TLSSessionResumptionTests {
    static let fileSize = 4096

    /// nginx serving `/f.bin` (4 KiB) over HTTP and HTTPS.
    static func server() throws -> NginxServer {
        var configuration = NginxConfiguration()
        configuration.rateLimitedLocation = nil
        let nginx = try NginxServer(configuration: configuration)
        try TestFiles.create(at: nginx.dataDirectory + "/f.bin", size: fileSize, seed: 5)
        return nginx
    }

    static func caFile() throws -> String { try TestCertificateAuthority.shared().caCertificatePath }

    /// Handshakes completed by the client's TLS context, and how many of them resumed a session.
    static func handshakes(of client: HTTPClient) async throws -> (completed: Int, resumed: Int) {
        try await client.loop.submit {
            guard let context = client.tls.context else { return (0, 0) }
            return (context.handshakesCompleted.load(ordering: .relaxed), context.handshakesResumed.load(ordering: .relaxed))
        }
    }

    /// One GET through `client`, run on its loop as the engine runs them.
    static func get(_ url: String, on client: HTTPClient, into handler: CountingHandler) async throws -> ExchangeSummary {
        let request = RequestHead(url: try HTTPURL(url))
        let result: Result<ExchangeSummary, HTTPClientError> = await withCheckedContinuation { continuation in
            client.loop.execute { client.executeOnLoop(request, handler: handler) { continuation.resume(returning: $0) } }
        }
        return try result.get()
    }

    @Test func aNewConnectionToTheSameOriginResumesButNotUnderAnotherNameOrPort() async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let other = try Self.server()
        defer { other.stop() }
        let loop = try EventLoop(name: "tls-resumption-test")
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, tls: TLSSettings(caFile: try Self.caFile()))
        let port = try #require(nginx.httpsPort)
        let otherPort = try #require(other.httpsPort)
        // The certificate names both localhost and 127.0.0.1: either name verifies, each is its own key.
        let steps: [(url: String, resumes: Bool, why: String)] = [
            ("https://localhost:\(port)/f.bin", false, "the first connection makes a full handshake"),
            ("https://localhost:\(port)/f.bin", true, "a new connection to the same origin resumes its session"),
            ("https://127.0.0.1:\(port)/f.bin", false, "another name for the same server does not"),
            ("https://localhost:\(otherPort)/f.bin", false, "another port does not"),
            ("https://127.0.0.1:\(port)/f.bin", true, "the other name now has a session of its own"),
            ("https://localhost:\(otherPort)/f.bin", true, "so has the other port"),
            ("https://localhost:\(port)/f.bin", true, "and the first origin's session is still there"),
        ]
        var resumed = 0
        for (index, step) in steps.enumerated() {
            // No idle connection to reuse: every step makes a new one, with a handshake.
            try await loop.submit { client.pool.closeAllOnLoop() }
            let handler = CountingHandler()
            let summary = try await Self.get(step.url, on: client, into: handler)
            #expect(summary.head.status == 200, "\(step.url)")
            #expect(handler.count == Self.fileSize, "\(step.url)")
            if step.resumes { resumed += 1 }
            let counts = try await Self.handshakes(of: client)
            #expect(counts.completed == index + 1, "step \(index + 1): \(step.why)")
            #expect(counts.resumed == resumed, "step \(index + 1): \(step.why)")
        }
        #expect(try await loop.submit { client.pool.connectionsOpened } == steps.count)
        await client.shutdown()
    }

    @Test func keptAliveConnectionsCarryManyRequestsWithoutHandshakes() async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let loop = try EventLoop(name: "tls-keepalive-test")
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, tls: TLSSettings(caFile: try Self.caFile()))
        let url = nginx.url("/f.bin", tls: true)
        for _ in 0..<20 {
            let handler = CountingHandler()
            let summary = try await Self.get(url, on: client, into: handler)
            #expect(summary.connectionReusable)
            #expect(handler.count == Self.fileSize)
        }
        let counts = try await Self.handshakes(of: client)
        #expect(counts.completed == 1, "twenty requests, one connection, one handshake")
        let entries = nginx.accessLog(waitingForCount: 20).filter { $0.scheme == "https" }
        #expect(entries.count == 20)
        #expect(Set(entries.map(\.connection)).count == 1)
        await client.shutdown()
    }

    /// A TLS 1.3 ticket is offered to one connection only (RFC 8446 §C.4: reuse would let an observer link
    /// the connections), and the context keeps every ticket the server sends (nginx sends two per full
    /// handshake), so connections that open together each get one of their own. Before, the newest ticket alone
    /// was kept: connections reconnecting together after a server closed its connections offered the same one
    /// or, once OpenSSL had marked it used, none (a full handshake).
    @Test func aTLS13TicketIsOfferedOnceAndEachTicketTheServerSentIsKept() async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let loop = try EventLoop(name: "tls-ticket-test")
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, tls: TLSSettings(caFile: try Self.caFile()))
        let port = try #require(nginx.httpsPort)
        let handler = CountingHandler()
        let summary = try await Self.get(nginx.url("/f.bin", tls: true), on: client, into: handler)
        #expect(summary.head.status == 200)
        let context = try #require(try await loop.submit { client.tls.context })
        let key = TLSSessionKey(serverName: "localhost", port: port)
        // Both tickets came in before the response, and reading it processed them.
        #expect(context.cachedSessionCount(for: key) == 2)
        let socket = try TCPSocket(family: .ipv4, options: SocketOptions())
        defer { socket.close() }
        var sessions: [TLSConnection] = []
        for expectedLeft in [1, 0, 0] {
            sessions.append(try TLSConnection(context: context, fileDescriptor: socket.fileDescriptor, host: "localhost", port: port))
            #expect(context.cachedSessionCount(for: key) == expectedLeft, "after \(sessions.count) sessions offered")
        }
        sessions.removeAll()
        // A connection that goes on to resume gets tickets of its own, so the cache fills again.
        try await loop.submit { client.pool.closeAllOnLoop() }
        _ = try await Self.get(nginx.url("/f.bin", tls: true), on: client, into: CountingHandler())
        let counts = try await Self.handshakes(of: client)
        #expect(counts.completed == 2)
        #expect(counts.resumed == 0, "the two tickets went to the sessions above, never handshaken")
        #expect(context.cachedSessionCount(for: key) == 2)
        await client.shutdown()
    }

    /// The per-file cost of HTTPS for small files: a short response is read in one go, without a second read
    /// that finds the socket empty (one wasted `read` per file, the TLS read path's cost that plain HTTP does
    /// not have). The session tickets nginx sends after the handshake may arrive alone, before the first
    /// response, and cost one such read; after that, none.
    @Test func smallResponsesOverHTTPSCostNoReadThatFindsTheSocketEmpty() async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let loop = try EventLoop(name: "tls-empty-reads-test")
        defer { loop.shutdown() }
        let client = HTTPClient(loop: loop, tls: TLSSettings(caFile: try Self.caFile()))
        let url = nginx.url("/f.bin", tls: true)
        let requests = 50
        for _ in 0..<requests {
            let handler = CountingHandler()
            let summary = try await Self.get(url, on: client, into: handler)
            #expect(summary.head.status == 200)
            #expect(handler.count == Self.fileSize)
        }
        let (emptyReads, handshakes) = try await loop.submit {
            (client.tls.context?.emptyReads.load(ordering: .relaxed) ?? -1,
             client.tls.context?.handshakesCompleted.load(ordering: .relaxed) ?? -1)
        }
        #expect(handshakes == 1, "\(requests) requests on one kept-alive connection")
        // Two at most for the tickets (nginx sends them in one write or two), never one per response.
        #expect((0...2).contains(emptyReads), "\(emptyReads) reads found the socket empty in \(requests) responses")
        await client.shutdown()
    }

    /// Connects to `host`:`port` with TLS from `context`, directly or through `proxy`'s tunnel, sends one
    /// `Connection: close` request and reads the response to its end (so that the server's session tickets
    /// are processed); returns whether the handshake resumed a session.
    static func fetchOnce(host: String, port: UInt16, context: TLSContext, through proxy: ProxyURL?, on loop: EventLoop) async throws -> Bool {
        let plan = try proxy.map { proxy in
            ProxyPlan(route: ProxyRoute(proxy: proxy, targetHost: try HTTPURL("https://\(host):\(port)/").origin.host, targetPort: port),
                      proxyTLS: nil, tunnel: true, userAgent: nil)
        }
        let result: Result<Connection, ConnectionError> = await withCheckedContinuation { continuation in
            loop.execute {
                _ = Connection.connectOnLoop(to: host, port: port, tls: context, proxy: plan, options: ConnectionOptions(), on: loop) {
                    continuation.resume(returning: $0)
                }
            }
        }
        let connection = try result.get()
        defer { connection.close() }
        try await connection.write(Array("GET /f.bin HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8))
        let end = try await connection.readLoop { _ in .continueReading }
        #expect(end == .endOfStream(.clean))
        return try #require(connection.tlsDetails).sessionReused
    }

    @Test func sessionsAreNotResumedOverAnotherRoute() async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let squid = try SquidProxy()
        defer { squid.stop() }
        let loop = try EventLoop(name: "tls-route-test")
        defer { loop.shutdown() }
        let context = try TLSContext(configuration: TLSSettings(caFile: try Self.caFile()))
        let proxy = try ProxyURL(squid.url())
        let port = try #require(nginx.httpsPort)
        let steps: [(proxy: ProxyURL?, resumes: Bool, why: String)] = [
            (nil, false, "the first, direct connection makes a full handshake"),
            (proxy, false, "the same origin through a proxy's tunnel does not resume the direct session"),
            (proxy, true, "through the same proxy again it resumes the tunnel's session"),
            (nil, true, "and directly again the direct one"),
        ]
        for (index, step) in steps.enumerated() {
            let reused = try await Self.fetchOnce(host: "localhost", port: port, context: context, through: step.proxy, on: loop)
            #expect(reused == step.resumes, "step \(index + 1): \(step.why)")
        }
        #expect(context.handshakesCompleted.load(ordering: .relaxed) == 4)
        #expect(context.handshakesResumed.load(ordering: .relaxed) == 2)
        #expect(context.hasCachedSession(for: TLSSessionKey(serverName: "localhost", port: port)))
        #expect(context.hasCachedSession(for: TLSSessionKey(serverName: "localhost", port: port, through: proxy)))
        let log = squid.accessLog(waitingUntil: { $0.filter { $0.method == "CONNECT" }.count >= 2 })
        #expect(log.filter { $0.method == "CONNECT" }.count == 2, "\(log)")
    }

    @Test func aContextWithOtherTrustSettingsNeverResumesAnothersSession() async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let loop = try EventLoop(name: "tls-trust-test")
        defer { loop.shutdown() }
        let port = try #require(nginx.httpsPort)
        // A session made without verification must not let a verifying context skip its check, nor the reverse.
        let insecure = try TLSContext(configuration: .insecure)
        let verifying = try TLSContext(configuration: TLSSettings(caFile: try Self.caFile()))
        #expect(try await Self.fetchOnce(host: "localhost", port: port, context: insecure, through: nil, on: loop) == false)
        #expect(try await Self.fetchOnce(host: "localhost", port: port, context: verifying, through: nil, on: loop) == false)
        #expect(try await Self.fetchOnce(host: "localhost", port: port, context: verifying, through: nil, on: loop) == true)
        #expect(try await Self.fetchOnce(host: "localhost", port: port, context: insecure, through: nil, on: loop) == true)
    }

    @Test func theClientKeepsAsManyIdleConnectionsPerOriginAsItMayOpen() throws {
        var options = DownloadOptions()
        options.maximumConnections = 40
        #expect(try HaulClient(options: options).lanes[0].httpClient.pool.maxIdlePerOrigin == 40)
        options.maximumConnections = 4
        #expect(try HaulClient(options: options).lanes[0].httpClient.pool.maxIdlePerOrigin == 16)
    }

    /// 24 at a time is more than the pool's former 16 idle connections per origin, which closed the rest
    /// whenever more than 16 files ended together and made the next ones handshake again.
    @Test(arguments: [4, 24])
    func aListOfSmallDownloadsUsesNoMoreTLSConnectionsThanRunAtOnce(atOnce: Int) async throws {
        let nginx = try Self.server()
        defer { nginx.stop() }
        let count = atOnce * 12
        for index in 0..<count {
            try TestFiles.create(at: nginx.dataDirectory + "/s\(index).bin", size: Self.fileSize + index, seed: UInt64(100 + index))
        }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(connections: 8)
        options.maximumConnections = 8 * atOnce
        options.tls.caFile = try Self.caFile()
        options.synchronizesToDisk = false
        let downloader = try HaulClient(options: options)
        try await withThrowingTaskGroup(of: Int64.self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask {
                    try await downloader.download(nginx.url("/s\(index).bin", tls: true), to: directory + "/s\(index).bin").bytes
                }
            }
            while next < atOnce { add() }
            var finished = 0
            while let bytes = try await group.next() {
                #expect(bytes >= Int64(Self.fileSize))
                finished += 1
                if next < count { add() }
            }
            #expect(finished == count)
        }
        for index in 0..<count {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/s\(index).bin")
            #expect((attributes[.size] as? Int) == Self.fileSize + index)
        }
        let entries = nginx.accessLog(waitingForCount: count).filter { $0.scheme == "https" }
        #expect(entries.count == count, "one request per file")
        let connections = Set(entries.map(\.connection)).count
        #expect(connections <= atOnce, "\(count) files over \(connections) connections")
        let counts = try await TLSSessionResumptionTests.handshakes(of: downloader.lanes[0].httpClient)
        #expect(counts.completed == connections, "one handshake per connection, none per file")
        await downloader.lanes[0].httpClient.shutdown()
    }
}
