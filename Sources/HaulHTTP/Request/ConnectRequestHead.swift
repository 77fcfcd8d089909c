/// A `CONNECT` request head (RFC 9110 §9.3.6, RFC 9112 §3.2.3), asking an HTTP proxy for a tunnel to
/// `host:port`:
///
/// ```
/// CONNECT example.org:443 HTTP/1.1
/// Host: example.org:443
/// User-Agent: haul/0.1
/// Proxy-Authorization: Basic dXNlcjpwYXNz
/// ```
///
/// The proxy's answer is an ordinary response head: read it with ``ResponseParser`` and stop at the
/// `.head` event, since after a 2xx the connection carries the tunnel, not a body.
public struct ConnectRequestHead: Sendable, Hashable {
    /// The host to tunnel to.
    public var host: HTTPHost
    /// The port to tunnel to (always written).
    public var port: UInt16
    /// The `User-Agent`, if any.
    public var userAgent: String?
    /// The `Proxy-Authorization` value, e.g. `Basic dXNlcjpwYXNz`.
    public var proxyAuthorization: String?

    /// A CONNECT for `host`:`port`.
    public init(host: HTTPHost, port: UInt16, userAgent: String? = nil, proxyAuthorization: String? = nil) {
        self.host = host
        self.port = port
        self.userAgent = userAgent
        self.proxyAuthorization = proxyAuthorization
    }

    /// The authority-form request-target, `host:port` (IPv6 in brackets), which `Host` repeats.
    public var authority: String { "\(host.uriText):\(port)" }

    /// The serialized head, ending with the empty line. Throws when a value holds CR, LF or another control
    /// character.
    public func serialized() throws(RequestHeadError) -> [UInt8] {
        if let userAgent { try RequestHead.validate(name: "User-Agent".utf8, value: userAgent.utf8) }
        if let proxyAuthorization {
            try RequestHead.validate(name: "Proxy-Authorization".utf8, value: proxyAuthorization.utf8)
        }
        var buffer: [UInt8] = []
        buffer.append(contentsOf: "CONNECT \(authority) HTTP/1.1\r\n".utf8)
        buffer.append(contentsOf: "Host: \(authority)\r\n".utf8)
        if let userAgent { buffer.append(contentsOf: "User-Agent: \(userAgent)\r\n".utf8) }
        if let proxyAuthorization { buffer.append(contentsOf: "Proxy-Authorization: \(proxyAuthorization)\r\n".utf8) }
        buffer.append(contentsOf: "\r\n".utf8)
        return buffer
    }
}
