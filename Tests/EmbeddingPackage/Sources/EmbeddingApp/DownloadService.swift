import FakeNIO
import FoundationEssentials
import Haul

/// A server app's service that fetches with AsyncHTTPClient and downloads files with Haul: every name of
/// FakeNIO unqualified, beside Haul's API and the lower-layer types `import Haul` is meant to export.
public final class DownloadService: Sendable {
    let haul: HaulClient
    let http: HTTPClient
    let group: any EventLoopGroup
    let tls: TLSConfiguration

    public init() throws {
        var options = DownloadOptions(connections: 4)
        var tls = TLSSettings()
        tls.minimumVersion = .tls13
        options.tls = tls
        options.timeouts = ConnectionTimeouts(connect: .seconds(5))
        options.proxy = ProxySettings(all: try ProxyURL("http://proxy.example:3128"), noProxy: NoProxyList("localhost"))
        haul = try HaulClient(options: options)
        http = HTTPClient()
        group = MultiThreadedEventLoopGroup()
        self.tls = TLSConfiguration.makeClientConfiguration()
    }

    /// A malformed checksum cannot be passed on as "no checksum": `Checksum(_:)` throws, and the request
    /// takes a `Checksum`, not text.
    public func request(_ url: String, to path: String, sha256: String) throws(ChecksumFormatError) -> DownloadRequest {
        DownloadRequest(url: url, destination: .file(path), checksum: try Checksum("sha256=" + sha256))
    }

    public func fetch(_ request: DownloadRequest, headers: HTTPHeaders, fields: HTTPFields) async -> String {
        do {
            let result: DownloadResult = try await haul.download(request)
            let url: HTTPURL = result.finalURL
            let origin: HTTPOrigin = url.origin
            let host: HTTPHost = origin.host
            let tag: EntityTag? = result.entityTag
            let date: HTTPDate? = result.lastModified
            keep(request, result)
            return "\(host) \(tag?.description ?? "-") \(date?.description ?? "-")"
        } catch {
            return describe(error)
        }
    }

    /// The program an app author writes first: a Foundation `URL`, headers and credentials in the
    /// initializer, a 404 told apart by its status, a cancellation from a failure, the result's media type.
    public func fetchReport(from url: URL, token: String, password: String, logger: Logger) async -> String {
        do {
            let request = try DownloadRequest(url: url, destination: .memory(limit: 1 << 20),
                                              headers: [("X-Request-ID", token)],
                                              credentials: .init(user: "reports", password: password))
            let result = try await haul.download(request, logger: logger)
            guard result.status == 200, result.hasMediaType("application/json"), let body = result.body else {
                return "not JSON: \(result.contentType ?? "no Content-Type")"
            }
            return "\(body.count) bytes"
        } catch where error.httpStatus == 404 {
            return "no report at \(url)"
        } catch where error.isCancelled {
            return "cancelled"
        } catch where error.reason == .outputClosed {
            return "closed"
        } catch {
            return describe(error)
        }
    }

    /// A file into a directory that may not exist yet, from an `HTTPURL` parsed where the text came in.
    public func save(_ text: String, to path: String) async throws -> DownloadResult {
        let url = try HTTPURL(text)
        _ = DownloadRequest(url: url, destination: .file(path), createsDirectories: true)
        return try await haul.download(text, to: path, creatingDirectories: true)
    }

    /// Requests and results are values an app stores and compares (a job table, a cache of what it fetched).
    func keep<Request: Codable & Equatable & Sendable, Result: Codable & Equatable & Sendable>(_ request: Request, _ result: Result) {}

    /// Names every type of the lower layers that Haul's API carries (HaulError's payloads among them), as
    /// a catch block or a log formatter does.
    func describe(_ error: HaulError) -> String { "\(error)" }

    func describe(_ url: URLParseError, _ request: RequestHeadError, _ connection: ConnectionError, _ system: SystemError,
                  _ failure: ProxyFailure, _ route: ProxyRoute, _ setup: TLSSetupError, _ parse: HTTPParseError,
                  _ proxy: ProxyConfigurationError, _ redirect: RedirectError, _ algorithm: DigestAlgorithm,
                  _ socks: SOCKS5.Type) -> String {
        "\(url) \(request) \(connection.kind) \(system.errno) \(failure.step) \(route) \(setup) \(parse) \(proxy) \(redirect) \(algorithm)"
    }

    /// The rest of FakeNIO's names, used the way an app uses them.
    public func serve(_ channel: any Channel, loop: any EventLoop, head: HTTPRequestHead, version: HTTPVersion,
                      method: HTTPMethod, address: SocketAddress, buffer: ByteBuffer) throws -> HTTPResponseHead {
        let _: [HTTPField] = []
        let _ = (HTTPRequest(), HTTPResponse(), HTTPClientRequest(url: "https://example.org/"), HTTPClientResponse())
        let _ = (Connection(), ConnectionPool(), RequestHead(), ResponseHead(), OutputFile())
        let _: (any Error)? = Bool.random() ? HTTPClientError() : IOError()
        return HTTPResponseHead()
    }
}
