import Foundation
@testable import Haul
import HaulHTTP
import HaulIO
import HaulTestSupport
import Synchronization
import Testing

/// Red-team attacks through redirects, end to end on loopback: credentials (the user's `Authorization` and
/// `Cookie`, a proxy's `Proxy-Authorization`) must reach only the origin they were given for — never a redirect
/// target on another scheme, host name or port, nor a host that bypasses the proxy; hostile `Location` values
/// must fail with the URL that sent them or be followed as RFC 3986 says; a segment's request redirected to
/// another file must never put that file's bytes into the download. The oracle: never exit 0 with a wrong file,
/// never a leaked secret, every download ends within a bound.
@Suite(.serialized) struct RedirectRedTeamTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Script = MisbehavingServer.Script

    static let size = 2 << 20
    let resource = MisbehavingServer.Resource.pattern(size: RedirectRedTeamTests.size, seed: 23)
    static let deadline: Duration = .seconds(30)
    static let secrets = ["Bearer secret", "a=b", "Basic YWxpY2U6czNjcmV0"]

    func options(connections: Int = 4) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        options.headers = [("Authorization", "Bearer secret"), ("Cookie", "a=b"), ("X-Custom", "1")]
        return options
    }

    func run(_ url: String, options: DownloadOptions, to path: String) async throws -> Result<DownloadResult, HaulError> {
        let client = try HaulClient(options: options)
        let task = client.start(DownloadRequest(url: url, destination: .file(path)))
        guard let result = await outcomeWithin(Self.deadline, of: task) else {
            Issue.record("the download of \(url) did not end within \(Self.deadline)")
            return .failure(.unexpected("test deadline"))
        }
        return result
    }

    func holds(_ path: String, _ bytes: [UInt8]) -> Bool {
        FileManager.default.contents(atPath: path).map { sameBytes(Array($0), bytes) } ?? false
    }

    /// The requests that carried any of the user's or the proxy's secrets, described. (A redirect to a URL with
    /// its own user info may bring its own `Authorization`: that secret is the server's, not the user's.)
    func leaks(_ requests: [MisbehavingServer.ReceivedRequest]) -> [String] {
        requests.compactMap { request in
            let carried = request.headerFields.filter { field in
                Self.secrets.contains { field.value.contains($0) }
                    || ["cookie", "proxy-authorization"].contains(field.name.lowercased())
            }
            return carried.isEmpty ? nil : "request \(request.index) to \(request.header("Host") ?? "?")\(request.target) carried \(carried.map(\.name))"
        }
    }

    // MARK: Credentials across origins

    /// The first request goes through a forward proxy with credentials (`Proxy-Authorization`) and carries the
    /// user's `Authorization` and `Cookie` for its origin; the "origin" (here the proxy answers for it) redirects
    /// to a host that NO_PROXY sends direct. That host sees none of the three.
    @Test func noSecretFollowsARedirectToAProxyBypassedHost() async throws {
        let bypassed = try MisbehavingServer(resource: resource)
        defer { bypassed.stop() }
        let proxy = try MisbehavingServer(resource: resource, script: .always(.redirect(to: bypassed.url("/f"))))
        defer { proxy.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options()
        options.proxy = ProxySettings(all: try ProxyURL("http://alice:s3cret@127.0.0.1:\(proxy.port)"),
                                      noProxy: NoProxyList("127.0.0.0/8"))
        let result = try await run("http://origin.test:8080/f", options: options, to: directory + "/f")
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        #expect(holds(directory + "/f", resource.bytes))
        let first = try #require(proxy.requests.first)
        #expect(first.target == "http://origin.test:8080/f", "absolute form to the proxy")
        #expect(first.header("Proxy-Authorization") == "Basic YWxpY2U6czNjcmV0")
        #expect(first.header("Authorization") == "Bearer secret", "the user's credentials go to their origin")
        #expect(!bypassed.requests.isEmpty)
        #expect(leaks(bypassed.requests).isEmpty, "\(leaks(bypassed.requests))")
        #expect(bypassed.requests.allSatisfy { $0.header("X-Custom") == "1" })
    }

    /// Redirect targets on another origin than the one the credentials were given for: the same address under
    /// another name, another port, a URL with its own user info, a scheme-relative reference. None gets them.
    @Test(arguments: ["http://localhost:{A}/f", "http://127.0.0.1:{B}/f", "http://mallory:pw@localhost:{A}/f",
                      "//localhost:{A}/f", "HTTP://LOCALHOST:{A}/f"])
    func credentialsStayWithTheOriginTheyWereGivenFor(location: String) async throws {
        let other = try MisbehavingServer(resource: resource)
        defer { other.stop() }
        let portA = Mutex<UInt16>(0)
        // Only requests to 127.0.0.1:A (the given origin) are redirected; the others are served.
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            let port = portA.withLock { $0 }
            guard request.header("Host") == "127.0.0.1:\(port)" else { return .normal }
            return .redirect(to: location.replacing("{A}", with: "\(port)").replacing("{B}", with: "\(other.port)"))
        })
        defer { server.stop() }
        portA.withLock { $0 = server.port }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await run(server.url("/f"), options: options(), to: directory + "/f")
        if case .failure(let error) = result { Issue.record("expected the file, got \(error)") }
        #expect(holds(directory + "/f", resource.bytes))
        let given = server.requests.filter { $0.header("Host") == "127.0.0.1:\(server.port)" }
        #expect(given.first?.header("Authorization") == "Bearer secret", "the given origin gets them")
        let elsewhere = server.requests.filter { $0.header("Host") != "127.0.0.1:\(server.port)" } + other.requests
        #expect(!elsewhere.isEmpty, "the redirect was followed")
        #expect(leaks(elsewhere).isEmpty, "\(location): \(leaks(elsewhere))")
    }

    // MARK: Hostile Location values

    /// What a `Location` must lead to: the request target the server sees next, or a failure whose
    /// description contains the text.
    enum Outcome: Sendable {
        case follows(target: String)
        case fails(containing: String)
    }

    static let locations: [(String, Outcome)] = [
        ("file:///etc/passwd", .fails(containing: "unsupported scheme")),
        ("ftp://127.0.0.1/f", .fails(containing: "unsupported scheme")),
        ("javascript:alert(1)", .fails(containing: "unsupported scheme")),
        ("/g#fragment", .follows(target: "/g")),
        ("/with space/x y", .follows(target: "/with%20space/x%20y")),
        ("/dir/../../../g", .follows(target: "/g")),
        ("http:g", .follows(target: "/g")),
        ("https:g", .fails(containing: "invalid Location")),
        ("http://", .fails(containing: "invalid Location")),
        ("/f", .fails(containing: "redirect loop")),
        ("", .fails(containing: "redirect loop")),
    ]

    @Test(arguments: 0..<locations.count)
    func hostileLocation(_ index: Int) async throws {
        let (location, expected) = Self.locations[index]
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            request.target == "/f" ? .redirect(to: location) : .normal
        })
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await run(server.url("/f"), options: options(), to: directory + "/f")
        switch (expected, result) {
        case (.follows(let target), .success):
            #expect(holds(directory + "/f", resource.bytes))
            let targets = server.requests.map(\.target)
            #expect(targets.contains(target) && targets.allSatisfy { $0 == target || $0 == "/f" }, "Location \(location.debugDescription): \(targets)")
        case (.fails(let text), .failure(let error)):
            #expect("\(error)".contains(text), "Location \(location.debugDescription): \(error)")
            #expect("\(error)".contains(server.url("/f")), "the error names the URL that redirected: \(error)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
        case (_, .success):
            Issue.record("Location \(location.debugDescription) was followed, expected \(expected)")
        case (_, .failure(let error)):
            Issue.record("Location \(location.debugDescription) failed: \(error), expected \(expected)")
        }
    }

    /// Control bytes in a Location and a redirect without one: failures that name the status or the field,
    /// never a file.
    @Test(arguments: [Behavior.redirect(to: "/g\u{1}h"), Behavior.status(302), Behavior.redirect(to: "/g\u{7F}")])
    func brokenRedirects(_ behavior: Behavior) async throws {
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            request.target == "/f" ? behavior : .normal
        })
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await run(server.url("/f"), options: options(), to: directory + "/f")
        guard case .failure(let error) = result else {
            Issue.record("a broken redirect was followed to \(server.requests.map(\.target))")
            return
        }
        #expect("\(error)".contains("127.0.0.1:\(server.port)"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
        #expect(server.requests.allSatisfy { $0.target == "/f" }, "\(server.requests.map(\.target))")
    }

    /// More hops than the limit, each to a new URL: fails naming the limit.
    @Test func theHopLimitEndsAnEndlessChain() async throws {
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            let hop = Int(request.target.dropFirst(2)) ?? 0
            return .redirect(to: "/h\(hop + 1)")
        })
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(connections: 1)
        options.redirects.maxRedirects = 5
        let result = try await run(server.url("/h0"), options: options, to: directory + "/f")
        guard case .failure(let error) = result else {
            Issue.record("an endless chain ended with a file")
            return
        }
        #expect("\(error)".contains("more than 5 redirects"), "\(error)")
        #expect(server.requests.count == 6, "\(server.requests.map(\.target))")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
    }

    // MARK: A segment redirected elsewhere

    /// The probe is answered with the file; later ranged requests are redirected to another server. When that
    /// server has another version of the file (same length, other validators and bytes), none of its bytes may
    /// end in the download: it fails as changed, or finishes with the right bytes; never the other file's.
    @Test(arguments: [false, true])
    func aSegmentRedirectedToAnotherFileIsNeverMixedIn(sameFile: Bool) async throws {
        let elsewhere = try MisbehavingServer(resource: sameFile ? resource : resource.otherVersion)
        defer { elsewhere.stop() }
        let target = elsewhere.url("/moved")
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            request.index >= 1 && request.rangeHeader != nil ? .redirect(to: target) : .normal
        })
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await run(server.url("/f"), options: options(connections: 4), to: directory + "/f")
        #expect(!elsewhere.requests.isEmpty, "a segment was redirected")
        #expect(leaks(elsewhere.requests).isEmpty, "\(leaks(elsewhere.requests))")
        switch result {
        case .success(let downloaded):
            // Starting over when the file changed is right: then every byte is the new version's, and the
            // download says it came from where the redirect leads.
            let whole = holds(directory + "/f", resource.bytes)
                || (holds(directory + "/f", resource.otherVersion.bytes) && downloaded.finalURL.description == target)
            #expect(whole, "exit 0 with a wrong file (final URL \(downloaded.finalURL))")
        case .failure(let error):
            #expect(!sameFile, "the same file elsewhere must download: \(error)")
            #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
        }
    }

    // MARK: TLS: a session is never a pass to another name

    /// An HTTPS server whose certificate names only `example.test` (reached there by a resolve rule) serves the
    /// probe, then redirects every ranged request to itself as `localhost`, a name its certificate does not
    /// cover. Resuming the `example.test` session there would skip the certificate check: the server must never
    /// receive a request for `localhost`, and the download must fail naming the verification.
    @Test func aSessionForOneNameIsNoPassForAnother() async throws {
        let ca = try TestCertificateAuthority.shared()
        let name = TestCertificateAuthority.virtualHostName
        let port = Mutex<UInt16>(0)
        let server = try MisbehavingServer(resource: resource, script: Script { request in
            request.index >= 1 && request.rangeHeader != nil
                ? .redirect(to: "https://localhost:\(port.withLock { $0 })/f") : .normal
        }, tlsCertificate: ca.virtualHost)
        defer { server.stop() }
        port.withLock { $0 = server.port }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = options(connections: 4)
        options.tls.caFile = ca.caCertificatePath
        options.network = NetworkSettings(resolve: [try #require(ResolveRule(host: name, port: server.port, addresses: ["127.0.0.1"]))])
        let result = try await run("https://\(name):\(server.port)/f", options: options, to: directory + "/f")
        let hosts = Set(server.requests.compactMap { $0.header("Host") })
        #expect(hosts == ["\(name):\(server.port)"], "requests reached the server under another name: \(hosts)")
        guard case .failure(let error) = result else {
            Issue.record("the download succeeded through a name the certificate does not cover")
            return
        }
        #expect("\(error)".contains("localhost"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
    }

    // MARK: A redirect target's name

    /// A download into a directory is redirected to a server that names the file with path tricks — in
    /// `Content-Disposition` (`filename`, RFC 5987 `filename*`) or in the final URL's last segment. The file lands
    /// inside the directory, once, with the right bytes; nothing appears beside or above it.
    @Test(arguments: [Behavior.attachment(filename: "../../escaped"), Behavior.attachment(filename: "/tmp/escaped"),
                      Behavior.field("Content-Disposition", "attachment; filename*=UTF-8''..%2F..%2Fescaped"),
                      Behavior.attachment(filename: ".."), Behavior.normal])
    func aRedirectTargetsNameStaysInTheDirectory(_ naming: Behavior) async throws {
        let namer = try MisbehavingServer(resource: resource, script: .always(naming))
        defer { namer.stop() }
        let target = namer.url("/a/%2E%2E%2F%2E%2E%2Fescaped")
        let server = try MisbehavingServer(resource: resource, script: .always(.redirect(to: target)))
        defer { server.stop() }
        let outer = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: outer) }
        let inner = outer + "/inner/deeper"
        try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: true)
        let client = try HaulClient(options: options())
        let task = client.start(DownloadRequest(url: server.url("/f"), destination: .directory(inner)))
        let outcome = try #require(await outcomeWithin(Self.deadline, of: task), "the download did not end")
        let result = try outcome.get()
        let names = try FileManager.default.contentsOfDirectory(atPath: inner)
        #expect(names.count == 1, "\(names)")
        #expect(result.path.hasPrefix(inner + "/") && !result.path.dropFirst(inner.count + 1).contains("/"), "\(result.path)")
        #expect(holds(result.path, resource.bytes))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outer) == ["inner"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: outer + "/inner") == ["deeper"])
        #expect(!FileManager.default.fileExists(atPath: "/tmp/escaped"))
    }
}
