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
        written(try validated())
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
        buffer.append(contentsOf: written(try validated()))
    }

    /// The head, checked: written into one array made large enough for it at once, each piece copied from
    /// contiguous storage straight into place (no per-byte appends, no temporary strings, no growing array
    /// checked at every append): building a small file's request is a good share of its cost.
    private func written(_ checked: Checked) -> [UInt8] {
        var path = url.path
        var query = url.query
        var hostName = url.host.name
        var userAgent = userAgent
        var proxyAuthorization = checked.proxyAuthorization
        let ifRangeValue = checked.ifRangeValue
        var methodName = method.rawValue
        var scheme = url.scheme.rawValue
        // An upper bound of every piece below: literal lengths, every number at its most digits.
        let hostBound = hostName.utf8.count + 2 + 1 + 5  // brackets, ":" and a port
        var bound = methodName.utf8.count + 1 + path.utf8.count + 1 + (query?.utf8.count ?? 0) + 11 + 6 + hostBound + 2
        if targetForm == .absolute { bound += scheme.utf8.count + 3 + hostBound }
        if !checked.userSetsUserAgent { bound += 14 + userAgent.utf8.count }
        bound += 13 + 27 + 19 + (9 + 6 + 2 * 21)
        if let ifRangeValue { bound += 12 + ifRangeValue.count }
        if let proxyAuthorization { bound += 23 + proxyAuthorization.utf8.count }
        bound += Int(headers.entriesOffset) + 4 * headers.count + 2
        return [UInt8](unsafeUninitializedCapacity: bound) { bytes, count in
            var out = HeadWriter(bytes)
            out.writeText(&methodName)
            out.writeByte(UInt8(ascii: " "))
            if targetForm == .absolute {
                out.writeText(&scheme)
                out.writeLiteral("://")
                out.writeHost(&hostName, of: url)
            }
            out.writeText(&path)
            if query != nil {
                out.writeByte(UInt8(ascii: "?"))
                out.writeText(&query!)
            }
            out.writeLiteral(" HTTP/1.1\r\nHost: ")
            out.writeHost(&hostName, of: url)
            out.writeLiteral("\r\n")
            if !checked.userSetsUserAgent {
                out.writeLiteral("User-Agent: ")
                userAgent.withUTF8 { out.write(Self.trimmed($0)) }
                out.writeLiteral("\r\n")
            }
            if !checked.userSetsAccept { out.writeLiteral("Accept: */*\r\n") }
            out.writeLiteral("Accept-Encoding: identity\r\n")
            if let range {
                out.writeLiteral("Range: ")
                range.writeHeaderValue(to: &out)
                out.writeLiteral("\r\n")
            }
            if let ifRangeValue {
                out.writeLiteral("If-Range: ")
                ifRangeValue.withUnsafeBufferPointer { out.write($0) }
                out.writeLiteral("\r\n")
            }
            if closeConnection { out.writeLiteral("Connection: close\r\n") }
            if proxyAuthorization != nil {
                out.writeLiteral("Proxy-Authorization: ")
                proxyAuthorization!.withUTF8 { out.write(Self.trimmed($0)) }
                out.writeLiteral("\r\n")
            }
            headers.storage.withUnsafeBufferPointer { storage in
                for index in 0..<headers.count {
                    let entry = headers.entry(index)
                    out.write(storage[Int(entry.nameStart)..<Int(entry.nameEnd)])
                    out.writeLiteral(": ")
                    out.write(Self.trimmed(storage[Int(entry.valueStart)..<Int(entry.valueEnd)]))
                    out.writeLiteral("\r\n")
                }
            }
            out.writeLiteral("\r\n")
            count = out.count
        }
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
}
