import HaulHTTP

/// How a connection reaches its server through a proxy: which proxy, and which host and port beyond it.
public struct ProxyRoute: Sendable, Hashable, CustomStringConvertible {
    /// The proxy (its description never shows credentials).
    public let proxy: ProxyURL
    /// The host the proxy is asked to reach.
    public let targetHost: HTTPHost
    /// The port the proxy is asked to reach.
    public let targetPort: UInt16

    /// A route to `targetHost`:`targetPort` through `proxy`.
    public init(proxy: ProxyURL, targetHost: HTTPHost, targetPort: UInt16) {
        self.proxy = proxy
        self.targetHost = targetHost
        self.targetPort = targetPort
    }

    /// `host:port` of the target, IPv6 in brackets.
    public var target: String { "\(targetHost.uriText):\(targetPort)" }

    /// `through proxy http://127.0.0.1:3128 to example.org:443`.
    public var description: String { "through proxy \(proxy) to \(target)" }
}

/// What a proxy refused or got wrong while a connection was being set up through it; carried by a
/// ``ConnectionError`` of kind ``ConnectionError/Kind/proxyFailed``.
public struct ProxyFailure: Sendable, Hashable, CustomStringConvertible {
    /// Where in the setup the proxy failed.
    public enum Step: Sendable, Hashable, CustomStringConvertible {
        /// The HTTP `CONNECT` that opens a tunnel (HTTPS origins through HTTP and HTTPS proxies).
        case connectTunnel
        /// A request sent to an HTTP proxy in absolute form (plain-HTTP origins).
        case forwardedRequest
        /// Resolving the target's name locally for a `socks5://` proxy.
        case resolvingTarget
        /// The SOCKS5 greeting (method selection, RFC 1928 §3).
        case socksGreeting
        /// SOCKS5 username/password authentication (RFC 1929).
        case socksAuthentication
        /// The SOCKS5 CONNECT command (RFC 1928 §4).
        case socksConnect

        public var description: String {
            switch self {
            case .connectTunnel: "CONNECT"
            case .forwardedRequest: "forwarded request"
            case .resolvingTarget: "name resolution"
            case .socksGreeting: "SOCKS5 greeting"
            case .socksAuthentication: "SOCKS5 authentication"
            case .socksConnect: "SOCKS5 CONNECT"
            }
        }
    }

    /// What went wrong.
    public enum Reason: Sendable, Hashable {
        /// An HTTP proxy answered `407` and no credentials had been sent.
        case authenticationRequired(status: Int)
        /// An HTTP proxy answered `407` to the credentials that were sent.
        case credentialsRejected(status: Int)
        /// An HTTP proxy answered a `CONNECT` with another non-2xx status.
        case tunnelRefused(status: Int, reason: String)
        /// A SOCKS5 proxy accepted none of the authentication methods offered (`0xFF`).
        case socksNoAcceptableMethod(credentialsOffered: Bool)
        /// A SOCKS5 proxy rejected the username and password (a non-zero RFC 1929 status).
        case socksCredentialsRejected(status: UInt8)
        /// A SOCKS5 proxy could not or would not connect to the target (a non-zero reply).
        case socksConnectFailed(SOCKS5.ReplyCode)
        /// The proxy's reply broke its protocol.
        case malformedReply(String)
        /// The proxy closed the connection before the setup finished.
        case closedDuringNegotiation
        /// The setup did not finish within the time allowed.
        case timedOut(Duration)
        /// The target's name could not be resolved locally (`socks5://`).
        case targetNotResolved(String)
        /// The credentials or the target name cannot be expressed in the proxy's protocol (SOCKS5 allows 255
        /// bytes each).
        case unrepresentable(String)
    }

    /// The proxy and the target.
    public let route: ProxyRoute
    /// Where the setup failed.
    public let step: Step
    /// What went wrong.
    public let reason: Reason

    /// A failure at `step` on `route`.
    public init(route: ProxyRoute, step: Step, reason: Reason) {
        self.route = route
        self.step = step
        self.reason = reason
    }

    /// Whether the proxy turned down the credentials (or demanded some): retrying will not help.
    public var isAuthenticationFailure: Bool {
        switch reason {
        case .authenticationRequired, .credentialsRejected, .socksCredentialsRejected: true
        case .socksNoAcceptableMethod: true
        default: false
        }
    }

    /// Whether trying again on a new connection may succeed.
    public var isTransient: Bool {
        switch reason {
        case .authenticationRequired, .credentialsRejected, .socksNoAcceptableMethod, .socksCredentialsRejected,
             .malformedReply, .targetNotResolved, .unrepresentable:
            return false
        case .tunnelRefused(let status, _):
            return status == 408 || status == 429 || status >= 500
        case .socksConnectFailed(let code):
            switch code {
            case .notAllowed, .commandNotSupported, .addressTypeNotSupported: return false
            default: return true
            }
        case .closedDuringNegotiation, .timedOut:
            return true
        }
    }

    private var proxyName: String {
        route.proxy.scheme.isSOCKS ? "SOCKS5 proxy \(route.proxy.hostAndPort)" : "proxy \(route.proxy)"
    }

    private var user: String { route.proxy.userInfo.map { " for user \"\($0.user)\"" } ?? "" }

    /// One line naming the proxy, the target and the cause, e.g.
    /// `proxy http://127.0.0.1:3128 requires authentication (407) to reach example.org:443` or
    /// `SOCKS5 proxy 127.0.0.1:1080 refused the connection to a.test:443: connection refused (reply 5)`.
    public var description: String {
        let target = route.target
        switch reason {
        case .authenticationRequired(let status):
            return "\(proxyName) requires authentication (\(status)) to reach \(target); "
                + "give the credentials in the proxy URL (\(route.proxy.scheme.rawValue)://USER:PASSWORD@\(route.proxy.hostAndPort))"
        case .credentialsRejected(let status):
            return "\(proxyName) rejected the credentials\(user) (\(status)) to reach \(target)"
        case .tunnelRefused(let status, let reasonPhrase):
            return "\(proxyName) refused to open a tunnel to \(target): \(status)\(reasonPhrase.isEmpty ? "" : " \(reasonPhrase)")"
        case .socksNoAcceptableMethod(let offered):
            return "\(proxyName) accepts none of the offered authentication methods "
                + (offered ? "(none, username/password) for \(target)"
                           : "(none) for \(target); it may require a username and password in the proxy URL")
        case .socksCredentialsRejected(let status):
            return "\(proxyName) rejected the username/password\(user) for \(target) (status \(status))"
        case .socksConnectFailed(let code):
            return "\(proxyName) refused the connection to \(target): \(code) (reply \(code.rawValue))"
        case .malformedReply(let detail):
            return "\(proxyName) sent a malformed reply during the \(step) to \(target): \(detail)"
        case .closedDuringNegotiation:
            return "\(proxyName) closed the connection during the \(step) to \(target)"
        case .timedOut(let limit):
            return "\(proxyName) did not complete the \(step) to \(target) within \(limit.compactDescription)"
        case .targetNotResolved(let detail):
            return "resolve \(route.targetHost.name) for \(proxyName): \(detail)"
        case .unrepresentable(let detail):
            return "cannot use \(proxyName) for \(target): \(detail)"
        }
    }
}
