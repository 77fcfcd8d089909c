import HaulHTTP

/// A failure of a ``Connection``, naming the endpoint and the cause in its description.
public struct ConnectionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for callers that react differently to different failures (retry, give up, report).
    public enum Kind: Sendable, Hashable {
        /// The host name could not be resolved.
        case resolutionFailed
        /// Every address refused or failed; ``ConnectionError/systemError`` holds the last errno.
        case connectFailed
        /// No address connected within the connect timeout.
        case connectTimedOut
        /// The TLS handshake failed (certificate, hostname, protocol...).
        case tlsHandshakeFailed
        /// The TLS handshake did not finish within its timeout.
        case tlsHandshakeTimedOut
        /// No bytes arrived (or could be sent) for the idle timeout while an operation was waiting.
        case idleTimedOut
        /// An HTTP exchange got no complete final response head within the head timeout
        /// (``ConnectionTimeouts/head``), although bytes may have kept arriving.
        case headTimedOut
        /// A TLS error after the handshake.
        case tlsFailure
        /// A socket call failed after connecting, e.g. `ECONNRESET`.
        case ioFailure
        /// The connection was closed locally, or the awaiting task was cancelled.
        case closed
        /// A proxy refused or failed to set up the way to the server (authentication, a refused `CONNECT`
        /// or SOCKS request, a malformed reply); ``ConnectionError/proxyFailure`` says which and why.
        case proxyFailed
    }

    /// The category of failure.
    public let kind: Kind
    /// The host as the caller gave it.
    public let host: String
    /// The port.
    public let port: UInt16
    /// The underlying errno, if a system call is to blame.
    public let systemError: SystemError?
    /// Extra detail (OpenSSL reason, resolver text, timeout length).
    public let detail: String
    /// What the proxy refused or got wrong, for ``Kind/proxyFailed``.
    public let proxyFailure: ProxyFailure?
    /// The proxy the connection went through (and the server beyond it), when it used one; the description
    /// names it.
    public internal(set) var proxyRoute: ProxyRoute?

    /// Creates an error; normally only HaulIO does this.
    public init(kind: Kind, host: String, port: UInt16, systemError: SystemError? = nil, detail: String = "") {
        self.kind = kind
        self.host = host
        self.port = port
        self.systemError = systemError
        self.detail = detail
        self.proxyFailure = nil
        self.proxyRoute = nil
    }

    /// A ``Kind/proxyFailed`` error for `failure`, naming the proxy's host and port.
    public init(proxyFailure failure: ProxyFailure) {
        self.kind = .proxyFailed
        self.host = failure.route.proxy.host.name
        self.port = failure.route.proxy.port
        self.systemError = nil
        self.detail = ""
        self.proxyFailure = failure
        self.proxyRoute = failure.route
    }

    /// The same error, saying it happened on a connection through `route` (unless it already names a route).
    func through(_ route: ProxyRoute?) -> ConnectionError {
        guard let route, proxyRoute == nil else { return self }
        var copy = self
        copy.proxyRoute = route
        return copy
    }

    private var endpoint: String { SocketAddress.endpoint(host: host, port: port) }

    /// A one-line message naming the endpoint and the cause, e.g. `connect to 127.0.0.1:1: Connection refused`.
    public var description: String {
        if let proxyFailure { return proxyFailure.description }
        guard let proxyRoute else { return directDescription }
        return "\(directDescription) (\(proxyRoute))"
    }

    private var directDescription: String {
        let cause = systemError?.reason ?? detail
        switch kind {
        case .resolutionFailed: return "resolve \(host): \(detail)"
        case .connectFailed: return "connect to \(endpoint): \(cause)"
        case .connectTimedOut:
            let last = systemError.map { " (last error: \($0.reason))" } ?? ""
            return "connect to \(endpoint) timed out after \(detail)\(last)"
        case .tlsHandshakeFailed: return "TLS handshake with \(endpoint) failed: \(cause)"
        case .tlsHandshakeTimedOut: return "TLS handshake with \(endpoint) timed out after \(detail)"
        case .idleTimedOut: return "connection to \(endpoint) stalled: no data for \(detail)"
        case .headTimedOut: return "no complete response head from \(endpoint) within \(detail)"
        case .tlsFailure: return "TLS error on connection to \(endpoint): \(cause)"
        case .ioFailure: return "connection to \(endpoint) failed: \(systemError.map(String.init(describing:)) ?? detail)"
        case .closed: return "connection to \(endpoint) closed" + (detail.isEmpty ? "" : ": \(detail)")
        case .proxyFailed: return "proxy \(endpoint) failed" + (detail.isEmpty ? "" : ": \(detail)")
        }
    }
}

extension Duration {
    /// `250ms`, `5s`, `1.5s`: short enough for an error message.
    var compactDescription: String {
        let milliseconds = wholeNanoseconds / 1_000_000
        if milliseconds < 1_000 { return "\(milliseconds)ms" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000)s" }
        return "\(milliseconds / 1_000).\(milliseconds % 1_000 / 100)s"
    }
}
