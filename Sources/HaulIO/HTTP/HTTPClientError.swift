import HaulHTTP

/// Why an HTTP exchange failed, with the server it was talking to.
public enum HTTPClientError: Error, Sendable, CustomStringConvertible {
    /// Connecting, TLS, or the socket failed (includes stalls: no bytes for the idle timeout).
    case connection(ConnectionError)
    /// The response broke HTTP/1.1; `offset` inside the error counts bytes of this connection's responses.
    /// `through` is the proxy route the connection took, if any: the broken bytes may be the proxy's.
    case malformedResponse(HTTPParseError, origin: HTTPOrigin, through: ProxyRoute?)
    /// A TLS peer closed without close_notify while the body was delimited only by the close, so it may be
    /// truncated.
    case truncatedTLSBody(origin: HTTPOrigin, bytesReceived: Int64, through: ProxyRoute?)
    /// The request could not be serialized (for example a header with CR/LF in it).
    case invalidRequest(RequestHeadError)
    /// The response handler threw; the exchange was abandoned.
    case handlerFailed(any Error)
    /// No TLS context could be set up for an https URL.
    case tlsSetup(TLSSetupError)

    public var description: String {
        switch self {
        case .connection(let error): error.description
        case .malformedResponse(let error, let origin, let route): "malformed response from \(origin.hostAndPort(through: route)): \(error)"
        case .truncatedTLSBody(let origin, let bytes, let route):
            "TLS connection to \(origin.hostAndPort(through: route)) closed without close_notify after \(bytes) body bytes of a body that only the close delimits; it may be truncated"
        case .invalidRequest(let error): "invalid request: \(error)"
        case .handlerFailed(let error): String(describing: error)
        case .tlsSetup(let error): error.description
        }
    }

    /// Whether the failure may be transient (worth a retry on a new connection).
    public var isTransient: Bool {
        switch self {
        case .connection(let error):
            switch error.kind {
            case .resolutionFailed, .tlsHandshakeFailed: return false
            case .proxyFailed: return error.proxyFailure?.isTransient ?? true
            default: return true
            }
        case .malformedResponse(let error, _, _):
            if case .incompleteMessage = error.kind { return true }
            if case .connectionClosedBeforeResponse = error.kind { return true }
            return false
        case .truncatedTLSBody: return true
        case .invalidRequest, .handlerFailed, .tlsSetup: return false
        }
    }
}

extension HTTPOrigin {
    /// `host:port` (IPv6 in brackets), as error messages name a server.
    public var hostAndPort: String { "\(host.uriText):\(port)" }

    /// `host:port`, and the proxy on the way when there is one: `origin.test:80 (through proxy
    /// socks5h://127.0.0.1:1080)`. A proxy that hangs up or sends garbage after its tunnel opened is named, not
    /// only the origin the user sees (no credentials: a `ProxyURL` never shows them).
    public func hostAndPort(through route: ProxyRoute?) -> String {
        route.map { "\(hostAndPort) (through proxy \($0.proxy))" } ?? hostAndPort
    }
}
