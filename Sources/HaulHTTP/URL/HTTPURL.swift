/// An absolute `http` or `https` URL, validated and ready to be sent.
///
/// Parsing follows RFC 3986 with the choices curl makes: the fragment is dropped (it is never sent),
/// dot segments are removed from the path, spaces and non-ASCII bytes in the path and query are
/// percent-encoded, existing `%HH` escapes are kept as given, and control characters are rejected.
/// User information (`user:password@`) is kept for authentication but never appears in `description`
/// or in errors.
public struct HTTPURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A supported scheme.
    public enum Scheme: String, Sendable, Hashable {
        /// Plain HTTP.
        case http
        /// HTTP over TLS.
        case https

        /// 80 or 443.
        public var defaultPort: UInt16 { self == .http ? 80 : 443 }
    }

    /// Credentials from the URL's user information, percent-decoded.
    public struct UserInfo: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        /// The user name.
        public let user: String
        /// The password, when a `:` was present.
        public let password: String?

        /// The user name only; the password is masked so logs cannot leak it.
        public var description: String { password == nil ? user : "\(user):***" }

        /// Same as `description`.
        public var debugDescription: String { description }
    }

    /// The parts, behind one reference: a URL is copied many times per download (into its request, its
    /// segments' assignments, their request heads, results and reports), and each copy of six separate parts
    /// retained every string among them.
    /// (Inlinable, as the stored parts were read in place before: the accessors run in every module.)
    @usableFromInline
    final class Parts: Sendable {
        @usableFromInline let scheme: Scheme
        @usableFromInline let userInfo: UserInfo?
        @usableFromInline let host: HTTPHost
        @usableFromInline let port: UInt16
        @usableFromInline let path: String
        @usableFromInline let query: String?

        init(scheme: Scheme, userInfo: UserInfo?, host: HTTPHost, port: UInt16, path: String, query: String?) {
            self.scheme = scheme
            self.userInfo = userInfo
            self.host = host
            self.port = port
            self.path = path
            self.query = query
        }
    }

    @usableFromInline let parts: Parts

    /// The scheme, lowercased.
    @inlinable public var scheme: Scheme { parts.scheme }
    /// Credentials, if the URL carried any.
    @inlinable public var userInfo: UserInfo? { parts.userInfo }
    /// The host.
    @inlinable public var host: HTTPHost { parts.host }
    /// The port to connect to: explicit, or the scheme's default.
    @inlinable public var port: UInt16 { parts.port }
    /// The path, percent-encoded, always starting with `/`.
    @inlinable public var path: String { parts.path }
    /// The query without its `?`, percent-encoded; nil when there was no `?`.
    @inlinable public var query: String? { parts.query }

    /// Equal parts; the same parts (a copy of one URL) without comparing them.
    public static func == (lhs: HTTPURL, rhs: HTTPURL) -> Bool {
        let (a, b) = (lhs.parts, rhs.parts)
        if a === b { return true }
        return a.scheme == b.scheme && a.port == b.port && a.host == b.host && a.path == b.path && a.query == b.query
            && a.userInfo == b.userInfo
    }

    /// Hashes every part, as `==` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(parts.scheme)
        hasher.combine(parts.userInfo)
        hasher.combine(parts.host)
        hasher.combine(parts.port)
        hasher.combine(parts.path)
        hasher.combine(parts.query)
    }

    /// `string`, a URL as given (parsed or not), as safe-to-print text: user information replaced by `***`
    /// and control characters written as `%XX` — the form a ``URLParseError`` quotes.
    package static func displayText(of string: String) -> String {
        let bytes = trimmed(string)
        return URIReference(bytes).displayText(bytes)
    }

    /// Parses an absolute URL.
    public init(_ string: String) throws(URLParseError) {
        // Nearly every URL (all of a long list's, as a rule) is plain and read in place; the general parser
        // takes the rest, and gives every error.
        var text = string
        if let plain = text.withUTF8(Self.plain) {
            self = plain
            return
        }
        try self.init(parsingInFull: string)
    }

    /// The general parser behind ``init(_:)``: every form it accepts, every error it gives.
    init(parsingInFull string: String) throws(URLParseError) {
        let bytes = Self.trimmed(string)
        let reference = URIReference(bytes)
        // The printable form of the input is built only for an error: every URL of a long list is parsed.
        do throws(URLParseError) {
            guard !bytes.isEmpty else { throw URLParseError(.empty) }
            guard let schemeText = reference.scheme, !reference.isMissingSchemeBeforeUserInfo else {
                throw URLParseError(.missingScheme)
            }
            let scheme = try Self.parseScheme(schemeText)
            guard let authority = reference.authority else { throw URLParseError(.missingHost) }
            try self.init(scheme: scheme, authority: authority,
                          path: URIReference.normalizedComponent(reference.path), query: reference.query)
        } catch {
            throw error.quoting(reference.displayText(bytes))
        }
    }

    /// A plain URL read in place, or nil for any other text (which ``init(parsingInFull:)`` then reads or
    /// refuses): `http://` or `https://` in lowercase, a host of lowercase letters, digits, `-`, `.` and `_`, an
    /// optional port of up to five digits, then a path and an optional query of visible ASCII characters that
    /// need no percent-encoding and hold no `%` escape, no fragment and no `.` or `..` segment. For such text
    /// the general parser changes nothing and refuses nothing but what ``HTTPHost/parsePlain(_:)`` and the port
    /// check refuse here, so the URL is built from the bytes as they are — the same URL, by the tests'
    /// comparison of both on seeded inputs and by the fuzz harness's.
    static func plain(_ bytes: UnsafeBufferPointer<UInt8>) -> HTTPURL? {
        let count = bytes.count
        guard count > 7, bytes[0] == UInt8(ascii: "h"), bytes[1] == UInt8(ascii: "t"), bytes[2] == UInt8(ascii: "t"),
              bytes[3] == UInt8(ascii: "p") else { return nil }
        let scheme: Scheme
        var index: Int
        if bytes[4] == UInt8(ascii: ":") {
            (scheme, index) = (.http, 5)
        } else if bytes[4] == UInt8(ascii: "s"), bytes[5] == UInt8(ascii: ":") {
            (scheme, index) = (.https, 6)
        } else {
            return nil
        }
        guard index + 2 < count, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/") else { return nil }
        index += 2
        let hostStart = index
        while index < count, isPlainHostByte(bytes[index]) { index += 1 }
        guard index > hostStart,
              let host = HTTPHost.parsePlain(UnsafeBufferPointer(rebasing: bytes[hostStart..<index])) else { return nil }
        var port = scheme.defaultPort
        if index < count, bytes[index] == UInt8(ascii: ":") {
            index += 1
            let portStart = index
            var value = 0
            while index < count, index - portStart < 5, FieldSyntax.isDigit(bytes[index]) {
                value = value * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            guard index > portStart, value >= 1, value <= 65_535 else { return nil }
            port = UInt16(value)
        }
        let pathStart = index
        while index < count, bytes[index] != UInt8(ascii: "?") {
            guard isPlainTargetByte(bytes[index]) else { return nil }
            index += 1
        }
        let pathBytes = UnsafeBufferPointer(rebasing: bytes[pathStart..<index])
        // After the authority comes `/`, `?` or the end: anything else (`@`, `[`, an upper-case letter, a sixth
        // port digit) stopped the host or port early.
        guard pathBytes.first.map({ $0 == UInt8(ascii: "/") }) ?? true, !URIReference.hasDotSegment(pathBytes) else { return nil }
        var query: String?
        if index < count {
            let queryBytes = UnsafeBufferPointer(rebasing: bytes[(index + 1)...])
            guard queryBytes.allSatisfy(isPlainTargetByte) else { return nil }
            query = String(decoding: queryBytes, as: UTF8.self)
        }
        return HTTPURL(scheme: scheme, host: host, port: port,
                       path: pathBytes.isEmpty ? "/" : String(decoding: pathBytes, as: UTF8.self), query: query)
    }

    /// A byte of a plain host: a lowercase letter, a digit, `-`, `.` or `_`.
    @inline(__always)
    private static func isPlainHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
             UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    /// A byte of a plain path or query: visible ASCII that ``URIReference/normalizedComponent(_:)`` keeps as it
    /// is, other than `%` (whose escape it checks) and `#` (a fragment's start).
    @inline(__always)
    private static func isPlainTargetByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "#"), UInt8(ascii: "%"), UInt8(ascii: "<"), UInt8(ascii: ">"),
             UInt8(ascii: "\\"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"),
             UInt8(ascii: "}"):
            return false
        default:
            return byte > 0x20 && byte < 0x7F
        }
    }

    /// `[userinfo@]host[:port]`: the user info, the host (a bracketed IPv6 literal or a name or IPv4
    /// address) and the port (`defaultPort` when none is given). Proxy URLs share it.
    /// Its errors quote nothing yet (see ``URLParseError/quoting(_:)``).
    static func parseAuthority(_ authority: ArraySlice<UInt8>,
                               defaultPort: UInt16) throws(URLParseError) -> (UserInfo?, HTTPHost, UInt16) {
        var hostAndPort = authority
        var userInfo: UserInfo?
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            userInfo = try parseUserInfo(authority[..<at])
            hostAndPort = authority[(at + 1)...]
        }
        let hostEnd: Int
        if hostAndPort.first == UInt8(ascii: "[") {
            hostEnd = hostAndPort.firstIndex(of: UInt8(ascii: "]")).map { $0 + 1 } ?? hostAndPort.endIndex
        } else {
            hostEnd = hostAndPort.firstIndex(of: UInt8(ascii: ":")) ?? hostAndPort.endIndex
        }
        let host = try HTTPHost.parse(hostAndPort[..<hostEnd])
        var port = defaultPort
        let afterHost = hostAndPort[hostEnd...]
        if let colon = afterHost.first {
            guard colon == UInt8(ascii: ":") else {
                throw URLParseError(.invalidHost(String(decoding: hostAndPort, as: UTF8.self)))
            }
            port = try parsePort(afterHost.dropFirst(), default: port)
        }
        return (userInfo, host, port)
    }

    /// Builds a URL from raw components: `path` already normalized, `query` raw.
    private init(scheme: Scheme, authority: ArraySlice<UInt8>, path: [UInt8],
                 query: ArraySlice<UInt8>?) throws(URLParseError) {
        let (userInfo, host, port) = try Self.parseAuthority(authority, defaultPort: scheme.defaultPort)
        self.init(scheme: scheme, userInfo: userInfo, host: host, port: port,
                  path: URIReference.removeDotSegments(path),
                  query: try query.map { q throws(URLParseError) in try URIReference.normalizedComponent(q) })
    }

    /// A URL without user information from its parts as they are.
    private init(scheme: Scheme, host: HTTPHost, port: UInt16, path: String, query: String?) {
        parts = Parts(scheme: scheme, userInfo: nil, host: host, port: port, path: path, query: query)
    }

    private init(scheme: Scheme, userInfo: UserInfo?, host: HTTPHost, port: UInt16, path: [UInt8], query: [UInt8]?) {
        parts = Parts(scheme: scheme, userInfo: userInfo, host: host, port: port,
                      path: path.isEmpty ? "/" : String(decoding: path, as: UTF8.self),
                      query: query.map { String(decoding: $0, as: UTF8.self) })
    }

    // MARK: Derived forms

    /// Whether `port` is the scheme's default, so it is left out of `Host` and `description`.
    public var isDefaultPort: Bool { port == scheme.defaultPort }

    /// The origin-form request-target (RFC 9112 §3.2.1): path, then `?query` when there is a query.
    public var requestTarget: String {
        guard let query else { return path }
        return path + "?" + query
    }

    /// The `Host` header value: the host (bracketed if IPv6), plus `:port` only when not the default.
    public var hostHeader: String {
        isDefaultPort ? host.uriText : "\(host.uriText):\(port)"
    }

    /// Scheme, host and port: the identity of the server, used to key connection pools.
    public var origin: HTTPOrigin { HTTPOrigin(scheme: scheme, host: host, port: port) }

    /// The absolute-form request-target (RFC 9112 §3.2.2) a forward proxy needs: `http://host[:port]/path?query`,
    /// without user information or fragment.
    public var absoluteRequestTarget: String { withoutUserInfo }

    /// The URL without user information or fragment, safe to log.
    public var description: String { withoutUserInfo }

    /// `scheme://host[:port]/path[?query]`, copied piece by piece into one string made at its size: the
    /// interpolation of `hostHeader` and `requestTarget` built three strings on the way, appending to a string
    /// cost hundreds of instructions a piece, and every download spells its URL out when it finishes (its
    /// stored validators name it).
    private var withoutUserInfo: String {
        var scheme = parts.scheme.rawValue
        var host = parts.host.name
        var path = parts.path
        var query = parts.query
        let bracketed = parts.host.kind == .ipv6
        var portDigits = 0  // and a ":" before them, when the port is not the default
        if !isDefaultPort {
            var rest = parts.port
            repeat {
                portDigits += 1
                rest /= 10
            } while rest > 0
        }
        let portLength = portDigits == 0 ? 0 : portDigits + 1
        let length = scheme.utf8.count + 3 + host.utf8.count + (bracketed ? 2 : 0) + portLength + path.utf8.count
            + (query.map { $0.utf8.count + 1 } ?? 0)
        return String(unsafeUninitializedCapacity: length) { text in
            // A cursor rather than nested functions: those captured the count as a variable checked for
            // exclusive access at run time on every use.
            var out = TextCursor(text)
            scheme.withUTF8 { out.put($0) }
            out.put(UInt8(ascii: ":"))
            out.put(UInt8(ascii: "/"))
            out.put(UInt8(ascii: "/"))
            if bracketed { out.put(UInt8(ascii: "[")) }
            host.withUTF8 { out.put($0) }
            if bracketed { out.put(UInt8(ascii: "]")) }
            if portDigits > 0 {
                out.put(UInt8(ascii: ":"))
                out.putDecimal(UInt64(parts.port), digits: portDigits)
            }
            path.withUTF8 { out.put($0) }
            if query != nil {
                out.put(UInt8(ascii: "?"))
                query!.withUTF8 { out.put($0) }
            }
            return out.count
        }
    }

    /// Same as `description`, so debug output cannot leak credentials either.
    public var debugDescription: String { description }

    // MARK: Reference resolution

    /// Resolves `reference` (e.g. a redirect's `Location`) against this URL (RFC 3986 §5.2).
    ///
    /// Accepts absolute URLs, scheme-relative (`//host/p`), absolute-path, relative-path, query-only
    /// and fragment-only references. A reference that repeats this URL's scheme without an authority
    /// (`http:g`) is read as relative, the backward-compatible choice RFC 3986 §5.4.2 allows, because
    /// the strict reading has no host. User information is kept only when the authority is inherited.
    public func resolve(_ reference: String) throws(URLParseError) -> HTTPURL {
        let bytes = Self.trimmed(reference)
        let parts = URIReference(bytes)
        do throws(URLParseError) {
            return try resolve(parts)
        } catch {
            throw error.quoting(parts.displayText(bytes))
        }
    }

    /// ``resolve(_:)`` of a split reference; its errors quote nothing yet.
    private func resolve(_ parts: URIReference) throws(URLParseError) -> HTTPURL {
        if parts.isMissingSchemeBeforeUserInfo { throw URLParseError(.missingScheme) }
        var referenceScheme = try parts.scheme.map { s throws(URLParseError) in try Self.parseScheme(s) }
        if referenceScheme == scheme, parts.authority == nil { referenceScheme = nil }

        if let referenceScheme {
            guard let authority = parts.authority else { throw URLParseError(.missingHost) }
            return try HTTPURL(scheme: referenceScheme, authority: authority,
                               path: URIReference.normalizedComponent(parts.path),
                               query: parts.query)
        }
        let referencePath = try URIReference.normalizedComponent(parts.path)
        if let authority = parts.authority {
            return try HTTPURL(scheme: scheme, authority: authority, path: referencePath, query: parts.query)
        }
        let referenceQuery = try parts.query.map { q throws(URLParseError) in
            try URIReference.normalizedComponent(q)
        }
        let basePath = Array(path.utf8)
        if referencePath.isEmpty {
            return HTTPURL(scheme: scheme, userInfo: userInfo, host: host, port: port, path: basePath,
                           query: referenceQuery ?? query.map { Array($0.utf8) })
        }
        let targetPath = referencePath.first == UInt8(ascii: "/")
            ? referencePath
            : URIReference.merge(basePath: basePath, referencePath: referencePath)
        return HTTPURL(scheme: scheme, userInfo: userInfo, host: host, port: port,
                       path: URIReference.removeDotSegments(targetPath), query: referenceQuery)
    }

    // MARK: Component parsers

    /// Leading and trailing spaces and tabs are dropped: they come from copy and paste, not from servers.
    static func trimmed(_ string: String) -> ArraySlice<UInt8> {
        var bytes = ArraySlice(string.utf8)
        while let first = bytes.first, FieldSyntax.isWhitespace(first) { bytes.removeFirst() }
        while let last = bytes.last, FieldSyntax.isWhitespace(last) { bytes.removeLast() }
        return bytes
    }

    private static func parseScheme(_ bytes: ArraySlice<UInt8>) throws(URLParseError) -> Scheme {
        // Nearly every URL is `http` or `https`, in any case: known without building the lowercased text.
        if bytes.count == 4 || bytes.count == 5, bytes.lazy.map(asciiLowercase).starts(with: "http".utf8) {
            if bytes.count == 4 { return .http }
            if bytes.last.map(asciiLowercase) == UInt8(ascii: "s") { return .https }
        }
        let lowercased = String(decoding: bytes.map(asciiLowercase), as: UTF8.self)
        guard let first = bytes.first, FieldSyntax.isAlpha(first),
              bytes.allSatisfy({ FieldSyntax.isAlpha($0) || FieldSyntax.isDigit($0) || $0 == UInt8(ascii: "+")
                  || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
        else {
            let shown = bytes.map { FieldSyntax.isControl($0) ? UInt8(ascii: "?") : $0 }
            throw URLParseError(.invalidScheme(String(decoding: shown, as: UTF8.self)))
        }
        guard let scheme = Scheme(rawValue: lowercased) else {
            throw URLParseError(.unsupportedScheme(lowercased))
        }
        return scheme
    }

    /// `*DIGIT` in 1–65535; empty means the default (RFC 3986 §3.2.3).
    private static func parsePort(_ bytes: ArraySlice<UInt8>, default defaultPort: UInt16) throws(URLParseError) -> UInt16 {
        if bytes.isEmpty { return defaultPort }
        var value = 0
        for byte in bytes {
            guard FieldSyntax.isDigit(byte), value <= 65_535 else { value = -1; break }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        guard (1...65_535).contains(value) else {
            let shown = bytes.map { FieldSyntax.isControl($0) ? UInt8(ascii: "?") : $0 }
            throw URLParseError(.invalidPort(String(decoding: shown, as: UTF8.self)))
        }
        return UInt16(value)
    }

    /// `user[:password]`, percent-decoded; both parts must decode to UTF-8 without control characters.
    private static func parseUserInfo(_ bytes: ArraySlice<UInt8>) throws(URLParseError) -> UserInfo {
        let colon = bytes.firstIndex(of: UInt8(ascii: ":"))
        let userBytes = bytes[..<(colon ?? bytes.endIndex)]
        let passwordBytes = colon.map { bytes[($0 + 1)...] }
        func decode(_ part: ArraySlice<UInt8>) throws(URLParseError) -> String {
            guard !part.contains(where: { FieldSyntax.isControl($0) || $0 == UInt8(ascii: " ") }),
                  let decoded = FieldSyntax.percentDecoded(part),
                  !decoded.contains(where: FieldSyntax.isControl),
                  let text = String(validating: decoded, as: UTF8.self)
            else { throw URLParseError(.invalidUserInfo) }
            return text
        }
        return UserInfo(user: try decode(userBytes), password: try passwordBytes.map { p throws(URLParseError) in try decode(p) })
    }
}

/// The scheme, host and port of a URL (RFC 6454): two URLs with the same origin can share connections.
public struct HTTPOrigin: Sendable, Hashable, CustomStringConvertible {
    /// The scheme.
    public let scheme: HTTPURL.Scheme
    /// The host.
    public let host: HTTPHost
    /// The port, never implicit.
    public let port: UInt16

    /// An origin from its parts.
    public init(scheme: HTTPURL.Scheme, host: HTTPHost, port: UInt16) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `scheme://host:port`, with the port always shown.
    public var description: String { "\(scheme.rawValue)://\(host.uriText):\(port)" }
}

/// Writes bytes into a string's uninitialized storage (`String(unsafeUninitializedCapacity:)`), checking each
/// piece against the room left.
private struct TextCursor {
    let text: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    init(_ text: UnsafeMutableBufferPointer<UInt8>) { self.text = text }

    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        precondition(bytes.count <= text.count &- count, "text outgrew its length")
        if let source = bytes.baseAddress { (text.baseAddress! + count).initialize(from: source, count: bytes.count) }
        count &+= bytes.count
    }

    mutating func put(_ byte: UInt8) {
        precondition(count < text.count, "text outgrew its length")
        text[count] = byte
        count &+= 1
    }

    /// `value` in exactly `digits` decimal digits.
    mutating func putDecimal(_ value: UInt64, digits: Int) {
        precondition(digits <= text.count &- count, "text outgrew its length")
        var rest = value
        var index = count &+ digits
        while index > count {
            index &-= 1
            text[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        count &+= digits
    }
}
