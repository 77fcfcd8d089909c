/// The validator sent in `If-Range` (RFC 9110 §13.1.5), so a resumed range is only served if the
/// representation has not changed.
public enum IfRangeValidator: Sendable, Hashable {
    /// A strong entity tag; a weak one is rejected at serialization.
    case entityTag(EntityTag)
    /// A `Last-Modified` date; per RFC 9110 only use one the server sent, and only if it is strong.
    case lastModified(HTTPDate)
}

/// Why a request head could not be serialized. The names in it are safe to print; values never appear.
public struct RequestHeadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Sendable, Hashable {
        /// A header name that is not an RFC 9110 token.
        case invalidHeaderName(String)
        /// A header value with CR, LF, NUL or another control character other than HTAB.
        case invalidHeaderValue(name: String)
        /// A header the engine owns because it controls message framing, the connection or the ranges.
        case reservedHeader(String)
        /// A weak entity tag, which `If-Range` may not carry.
        case weakEntityTagInIfRange
        /// `If-Range` without `Range`, which RFC 9110 §13.1.5 forbids.
        case ifRangeWithoutRange
    }

    /// What was wrong.
    public let reason: Reason

    /// An error for `reason`.
    public init(_ reason: Reason) { self.reason = reason }

    /// A one-line explanation naming the header at fault.
    public var description: String {
        switch reason {
        case let .invalidHeaderName(name): return "invalid header name \"\(name)\" (must be a token)"
        case let .invalidHeaderValue(name):
            return "invalid value for header \"\(name)\" (control characters such as CR, LF and NUL are not allowed)"
        case let .reservedHeader(name): return "header \"\(name)\" cannot be set: haul manages it"
        case .weakEntityTagInIfRange: return "a weak entity tag cannot be used in If-Range"
        case .ifRangeWithoutRange: return "If-Range requires a Range"
        }
    }
}

/// A GET or HEAD request head, serialized as HTTP/1.1 (RFC 9112 §3).
///
/// Header order: request line, `Host`, `User-Agent`, `Accept`, `Accept-Encoding: identity`, `Range`,
/// `If-Range`, `Connection: close` when asked, `Proxy-Authorization` for a forward proxy, then the user's
/// headers in order. A user `User-Agent`
/// or `Accept` replaces the default and is sent in the user's position. The headers listed in
/// `reservedHeaderNames` are rejected, because setting them would break framing (`Content-Length`,
/// `Transfer-Encoding`), connection reuse (`Connection`, ...), virtual hosting (`Host`, which comes
/// from the URL) or the engine's byte accounting (`Range`, `If-Range`, `Accept-Encoding`).
public struct RequestHead: Sendable {
    /// The request methods a downloader needs.
    public enum Method: String, Sendable, Hashable {
        /// Fetch the representation.
        case get = "GET"
        /// Fetch only the headers (size, validators, range support).
        case head = "HEAD"
    }

    /// The method.
    public var method: Method
    /// The target; its userinfo is not sent (authorization is a user header).
    public var url: HTTPURL
    /// The byte range to ask for.
    public var range: RangeRequest?
    /// Only serve `range` if the representation still matches this validator.
    public var ifRange: IfRangeValidator?
    /// The default `User-Agent`.
    public var userAgent: String
    /// Whether to ask the server to close the connection after the response.
    public var closeConnection: Bool
    /// Extra headers, sent in order after the engine's own.
    public var headers: HTTPFields
    /// How the request line names the target: ``TargetForm/origin`` (`/path?query`, to the server itself,
    /// the default) or ``TargetForm/absolute`` (`http://host:port/path?query`, to a forward proxy).
    public var targetForm: TargetForm = .origin
    /// The `Proxy-Authorization` value for the proxy this request goes to in absolute form (e.g.
    /// `Basic dXNlcjpwYXNz`), sent after `Connection` unless ``headers`` carry their own `Proxy-Authorization`.
    /// Set by the HTTP client from the proxy URL's credentials; never sent to an origin server.
    public var proxyAuthorization: String?

    /// The forms of request-target a downloader sends (RFC 9112 §3.2).
    public enum TargetForm: Sendable, Hashable {
        /// `GET /path?query HTTP/1.1`, to the origin server.
        case origin
        /// `GET http://host:port/path?query HTTP/1.1`, to a forward proxy (`Host` is sent as usual).
        case absolute
    }

    /// Lowercased names of headers users may not set.
    public static let reservedHeaderNames: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
        "te", "trailer", "upgrade", "range", "if-range", "accept-encoding",
    ]

    /// A request head; `headers` are validated only when serializing.
    public init(method: Method = .get, url: HTTPURL, range: RangeRequest? = nil, ifRange: IfRangeValidator? = nil,
                userAgent: String = "haul", closeConnection: Bool = false, headers: HTTPFields = HTTPFields()) {
        self.method = method
        self.url = url
        self.range = range
        self.ifRange = ifRange
        self.userAgent = userAgent
        self.closeConnection = closeConnection
        self.headers = headers
    }

    /// The serialized head, ending with the empty line.
    public func serialized() throws(RequestHeadError) -> [UInt8] {
        var buffer: [UInt8] = []
        try serialize(into: &buffer)
        return buffer
    }

    /// Throws exactly what ``serialized()`` would throw, without writing the head: for a caller that only
    /// checks a request before it is sent (preparing a download checks its first request, which is then
    /// built again for the connection).
    public func validate() throws(RequestHeadError) {
        _ = try validated()
    }

    /// What the head's own headers need to know once it is checked: which defaults the user's headers
    /// replace, and the `Proxy-Authorization` and `If-Range` values to send.
    private struct Checked {
        var userSetsUserAgent: Bool
        var userSetsAccept: Bool
        var proxyAuthorization: String?
        var ifRangeValue: [UInt8]?
    }

    /// Every check of the head, in the order the errors are reported.
    private func validated() throws(RequestHeadError) -> Checked {
        var userSetsUserAgent = false
        var userSetsAccept = false
        var userSetsProxyAuthorization = false
        for index in 0..<headers.count {
            let name = headers.name(at: index)
            try Self.validate(name: name, value: headers.value(at: index))
            let lowercased = String(decoding: name.map(asciiLowercase), as: UTF8.self)
            if Self.reservedHeaderNames.contains(lowercased) {
                throw RequestHeadError(.reservedHeader(String(decoding: name, as: UTF8.self)))
            }
            userSetsUserAgent = userSetsUserAgent || lowercased == "user-agent"
            userSetsAccept = userSetsAccept || lowercased == "accept"
            userSetsProxyAuthorization = userSetsProxyAuthorization || lowercased == "proxy-authorization"
        }
        if !userSetsUserAgent {
            // What `validate(name:value:)` checks of it (the name is a token): in place, not through the generic view.
            var userAgent = userAgent
            guard userAgent.withUTF8({ $0.allSatisfy { $0 == 0x09 || !FieldSyntax.isControl($0) } }) else {
                throw RequestHeadError(.invalidHeaderValue(name: "User-Agent"))
            }
        }
        let proxyAuthorization = userSetsProxyAuthorization ? nil : self.proxyAuthorization
        if let proxyAuthorization { try Self.validate(name: "Proxy-Authorization".utf8, value: proxyAuthorization.utf8) }
        var ifRangeValue: [UInt8]?
        switch ifRange {
        case nil:
            break
        case let .entityTag(tag):
            guard let value = tag.ifRangeValue else { throw RequestHeadError(.weakEntityTagInIfRange) }
            ifRangeValue = value
        case let .lastModified(date):
            ifRangeValue = Array(date.imfFixdate.utf8)
        }
        if ifRangeValue != nil, range == nil { throw RequestHeadError(.ifRangeWithoutRange) }
        return Checked(userSetsUserAgent: userSetsUserAgent, userSetsAccept: userSetsAccept,
                       proxyAuthorization: proxyAuthorization, ifRangeValue: ifRangeValue)
    }

    /// Appends the serialized head to `buffer`; on error `buffer` is left unchanged.
    public func serialize(into buffer: inout [UInt8]) throws(RequestHeadError) {
        let checked = try validated()
        let userSetsUserAgent = checked.userSetsUserAgent
        let userSetsAccept = checked.userSetsAccept
        let proxyAuthorization = checked.proxyAuthorization
        let ifRangeValue = checked.ifRangeValue

        // Everything is validated: from here on nothing throws, so the buffer is never half-written. The
        // bytes are copied from contiguous storage (no per-byte appends, no temporary strings): building a small file's
        // request is a good share of its cost.
        buffer.reserveCapacity(buffer.count + 160 + url.path.utf8.count + (url.query?.utf8.count ?? 0)
                               + userAgent.utf8.count + Int(headers.entriesOffset) + 4 * headers.count)
        Self.append(method.rawValue, to: &buffer)
        buffer.append(UInt8(ascii: " "))
        if targetForm == .absolute {
            Self.append(url.scheme.rawValue, to: &buffer)
            Self.appendLiteral("://", to: &buffer)
            Self.appendHost(of: url, to: &buffer)
        }
        Self.append(url.path, to: &buffer)
        if let query = url.query {
            buffer.append(UInt8(ascii: "?"))
            Self.append(query, to: &buffer)
        }
        Self.appendLiteral(" HTTP/1.1\r\nHost: ", to: &buffer)
        Self.appendHost(of: url, to: &buffer)
        Self.appendLiteral("\r\n", to: &buffer)
        if !userSetsUserAgent {
            var userAgent = userAgent
            userAgent.withUTF8 { Self.appendField("User-Agent", Self.trimmed($0), to: &buffer) }
        }
        if !userSetsAccept { Self.appendLiteral("Accept: */*\r\n", to: &buffer) }
        Self.appendLiteral("Accept-Encoding: identity\r\n", to: &buffer)
        if let range {
            Self.appendLiteral("Range: ", to: &buffer)
            range.appendHeaderValue(to: &buffer)
            Self.appendLiteral("\r\n", to: &buffer)
        }
        if let ifRangeValue { Self.appendField("If-Range", ifRangeValue, to: &buffer) }
        if closeConnection { Self.appendLiteral("Connection: close\r\n", to: &buffer) }
        if let proxyAuthorization { Self.appendField("Proxy-Authorization", Self.trimmed(proxyAuthorization.utf8), to: &buffer) }
        for index in 0..<headers.count {
            Self.appendField(headers.name(at: index), Self.trimmed(headers.value(at: index)), to: &buffer)
        }
        Self.appendLiteral("\r\n", to: &buffer)
    }

    /// The `Host` header value (``HTTPURL/hostHeader``) without making it a string first.
    private static func appendHost(of url: HTTPURL, to buffer: inout [UInt8]) {
        if url.host.kind == .ipv6 {
            buffer.append(UInt8(ascii: "["))
            append(url.host.name, to: &buffer)
            buffer.append(UInt8(ascii: "]"))
        } else {
            append(url.host.name, to: &buffer)
        }
        if !url.isDefaultPort {
            buffer.append(UInt8(ascii: ":"))
            appendDecimal(UInt64(url.port), to: &buffer)
        }
    }

    /// Appends a string's UTF-8 bytes in one copy (a native string's storage is contiguous; a bridged or
    /// lazily made one is made contiguous on this copy of it first).
    static func append(_ text: String, to buffer: inout [UInt8]) {
        var text = text
        text.withUTF8 { buffer.append(contentsOf: $0) }
    }

    /// Appends a literal's bytes (named apart from `append(_:to:)`: a literal would pick the `String` overload).
    private static func appendLiteral(_ text: StaticString, to buffer: inout [UInt8]) {
        text.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    /// Names must be tokens; values may hold visible characters, SP, HTAB and obs-text but no other
    /// control character, since CR or LF would let a value inject headers or end the head early.
    static func validate(name: some Collection<UInt8>, value: some Collection<UInt8>) throws(RequestHeadError) {
        guard FieldSyntax.isToken(name) else {
            let shown = name.map { FieldSyntax.isControl($0) ? UInt8(ascii: "?") : $0 }
            throw RequestHeadError(.invalidHeaderName(String(decoding: shown, as: UTF8.self)))
        }
        guard value.allSatisfy({ $0 == 0x09 || !FieldSyntax.isControl($0) }) else {
            throw RequestHeadError(.invalidHeaderValue(name: String(decoding: name, as: UTF8.self)))
        }
    }

    /// Field values may not begin or end with whitespace (RFC 9110 §5.5).
    private static func trimmed<C: BidirectionalCollection<UInt8>>(_ value: C) -> C.SubSequence {
        let start = value.firstIndex { !FieldSyntax.isWhitespace($0) } ?? value.endIndex
        let end = value[start...].lastIndex { !FieldSyntax.isWhitespace($0) }.map(value.index(after:)) ?? start
        return value[start..<end]
    }

    private static func appendField(_ name: some Collection<UInt8>, _ value: some Collection<UInt8>,
                                    to buffer: inout [UInt8]) {
        buffer.append(contentsOf: name)
        buffer.append(contentsOf: ": ".utf8)
        buffer.append(contentsOf: value)
        buffer.append(contentsOf: "\r\n".utf8)
    }

    private static func appendField(_ name: StaticString, _ value: some Collection<UInt8>, to buffer: inout [UInt8]) {
        appendLiteral(name, to: &buffer)
        appendLiteral(": ", to: &buffer)
        buffer.append(contentsOf: value)
        appendLiteral("\r\n", to: &buffer)
    }
}

/// Appends `value` in decimal ASCII digits, as `String(value)` would spell it.
func appendDecimal(_ value: UInt64, to buffer: inout [UInt8]) {
    guard value > 0 else { return buffer.append(UInt8(ascii: "0")) }
    var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes hold UInt64.max's 20 digits
    var count = 0
    var rest = value
    withUnsafeMutableBytes(of: &digits) { bytes in
        while rest > 0 {
            count += 1
            bytes[32 - count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[(32 - count)...]))
    }
}

/// Appends `value` in decimal ASCII digits, a minus sign first when negative.
func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
    if value < 0 { buffer.append(UInt8(ascii: "-")) }
    appendDecimal(value.magnitude, to: &buffer)
}
