/// A proxy server: `http://`, `https://`, `socks5://` or `socks5h://`, with optional credentials.
///
/// Parsing follows curl's `-x`/`CURLOPT_PROXY`:
/// - without a scheme the proxy is an HTTP proxy (`proxy.example:3128` means `http://proxy.example:3128`);
/// - without a port the port is 443 for `https://` proxies and **1080 for every other kind**, curl's default
///   (`CURLOPT_PROXYPORT`), although HTTP proxies often listen on 3128 or 8080: give the port;
/// - `user:password@` is percent-decoded and used for `Proxy-Authorization: Basic` (HTTP and HTTPS proxies)
///   or RFC 1929 username/password authentication (SOCKS5);
/// - a trailing `/` is accepted; any other path, a query or a fragment is an error, since a proxy has no
///   use for one and it usually means a mistyped URL.
///
/// `socks5://` resolves the origin's host name locally and gives the proxy an address; `socks5h://` hands the
/// name to the proxy to resolve. The credentials never appear in ``description`` or in errors.
public struct ProxyURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kinds of proxy Haul speaks.
    public enum Scheme: String, Sendable, Hashable, CaseIterable {
        /// An HTTP proxy: plain-HTTP requests in absolute form, HTTPS through `CONNECT` tunnels.
        case http
        /// An HTTP proxy reached over TLS (verified against the proxy's own name), used like ``http``.
        case https
        /// SOCKS5 (RFC 1928) with the origin's name resolved locally.
        case socks5
        /// SOCKS5 with the origin's name resolved by the proxy.
        case socks5h

        /// 443 for ``https``, 1080 for the others (curl's choice).
        public var defaultPort: UInt16 { self == .https ? 443 : 1080 }

        /// Whether this is a SOCKS proxy (as opposed to an HTTP proxy).
        public var isSOCKS: Bool { self == .socks5 || self == .socks5h }
    }

    /// The kind of proxy.
    public let scheme: Scheme
    /// Credentials from the URL, percent-decoded.
    public let userInfo: HTTPURL.UserInfo?
    /// The proxy's host.
    public let host: HTTPHost
    /// The proxy's port: explicit, or the scheme's default.
    public let port: UInt16

    /// Parses a proxy URL as curl does (see the type's documentation).
    public init(_ string: String) throws(ProxyConfigurationError) {
        var bytes = HTTPURL.trimmed(string)
        guard !bytes.isEmpty else { throw ProxyConfigurationError(.empty, input: "") }
        let separator = Array("://".utf8)
        var schemeText = "http"
        if let range = Self.firstRange(of: separator, in: bytes) {
            schemeText = String(decoding: bytes[..<range.lowerBound].map(asciiLowercase), as: UTF8.self)
            bytes = bytes[range.upperBound...]
        }
        let remainder = bytes
        let input = Self.redacted(scheme: schemeText, remainder: remainder)
        guard let scheme = Scheme(rawValue: schemeText) else {
            throw ProxyConfigurationError(.unsupportedScheme(Self.printable(schemeText)), input: input)
        }
        let authorityEnd = remainder.firstIndex {
            $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        } ?? remainder.endIndex
        let authority = remainder[..<authorityEnd]
        let rest = remainder[authorityEnd...]
        guard rest.isEmpty || rest.elementsEqual("/".utf8) else {
            throw ProxyConfigurationError(.unexpectedPath(Self.printable(String(decoding: rest, as: UTF8.self))), input: input)
        }
        do throws(URLParseError) {
            let (userInfo, host, port) = try HTTPURL.parseAuthority(authority, defaultPort: scheme.defaultPort)
            self.scheme = scheme
            self.userInfo = userInfo
            self.host = host
            self.port = port
        } catch {
            throw ProxyConfigurationError(.invalidURL(error.quoting(input)), input: input)
        }
    }

    /// `scheme://host:port`, the port always shown, credentials never.
    public var description: String { "\(scheme.rawValue)://\(hostAndPort)" }

    /// Same as `description`, so debug output cannot leak credentials either.
    public var debugDescription: String { description }

    /// `host:port`, IPv6 in brackets.
    public var hostAndPort: String { "\(host.uriText):\(port)" }

    /// `Basic base64(user:password)` for `Proxy-Authorization`, when the URL has credentials.
    public var basicAuthorization: String? {
        guard let userInfo else { return nil }
        let credentials = Array("\(userInfo.user):\(userInfo.password ?? "")".utf8)
        return "Basic " + Base64.encode(credentials)
    }

    private static func firstRange(of needle: [UInt8], in bytes: ArraySlice<UInt8>) -> Range<Int>? {
        guard bytes.count >= needle.count else { return nil }
        var index = bytes.startIndex
        while index + needle.count <= bytes.endIndex {
            // A scheme never contains `/`, `@` or `:`; stop looking once the authority has clearly begun.
            if bytes[index] == UInt8(ascii: "/") || bytes[index] == UInt8(ascii: "@") { return nil }
            if bytes[index..<(index + needle.count)].elementsEqual(needle) { return index..<(index + needle.count) }
            index += 1
        }
        return nil
    }

    /// The proxy URL as errors may quote it: credentials replaced by `***`, control characters as `?`.
    private static func redacted(scheme: String, remainder: ArraySlice<UInt8>) -> String {
        let authorityEnd = remainder.firstIndex {
            $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        } ?? remainder.endIndex
        var shown = remainder
        var prefix = ""
        if let at = remainder[..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) {
            prefix = "***@"
            shown = remainder[(at + 1)...]
        }
        return printable(scheme) + "://" + prefix + printable(String(decoding: shown, as: UTF8.self))
    }

    private static func printable(_ text: String) -> String {
        String(decoding: text.utf8.map { FieldSyntax.isControl($0) ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
    }
}

/// A proxy setting that cannot be used: a malformed or unsupported proxy URL, naming where it came from.
///
/// `input` is the offending text with credentials replaced by `***`, so the error is safe to print.
public struct ProxyConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Sendable, Hashable {
        /// An empty proxy URL where one was required.
        case empty
        /// A scheme other than `http`, `https`, `socks5` and `socks5h` (e.g. `socks4`, `ftp`).
        case unsupportedScheme(String)
        /// The host, port or credentials are malformed.
        case invalidURL(URLParseError)
        /// A path, query or fragment after the proxy's host and port.
        case unexpectedPath(String)
    }

    /// What was wrong.
    public let reason: Reason
    /// The proxy URL, redacted.
    public let input: String
    /// Where the setting came from, e.g. `HTTPS_PROXY` or `--proxy`; `nil` when not known.
    public var source: String?

    /// An error for `reason` in `input` (already redacted).
    public init(_ reason: Reason, input: String, source: String? = nil) {
        self.reason = reason
        self.input = input
        self.source = source
    }

    /// The same error, naming where the setting came from.
    public func from(_ source: String) -> ProxyConfigurationError {
        var copy = self
        copy.source = source
        return copy
    }

    /// One line, e.g. `unsupported proxy scheme "socks4" in HTTPS_PROXY="socks4://127.0.0.1:1080"
    /// (supported: http, https, socks5, socks5h)`.
    public var description: String {
        let location = source.map { "in \($0)=\"\(input)\"" } ?? "in \"\(input)\""
        switch reason {
        case .empty:
            return "empty proxy URL" + (source.map { " in \($0)" } ?? "")
        case .unsupportedScheme(let scheme):
            let supported = ProxyURL.Scheme.allCases.map(\.rawValue).joined(separator: ", ")
            return "unsupported proxy scheme \"\(scheme)\" \(location) (supported: \(supported))"
        case .invalidURL(let error):
            return "invalid proxy URL \(location): \(error.reasonText)"
        case .unexpectedPath(let path):
            return "unexpected path \"\(path)\" in proxy URL \(location) (a proxy URL is scheme://[user:password@]host[:port])"
        }
    }
}

extension URLParseError {
    /// The description without the quoted input (the proxy error quotes it itself).
    var reasonText: String {
        let full = Array(description.utf8)
        let needle = Array(" in \"\(input)\"".utf8)
        guard full.count >= needle.count else { return description }
        for start in 0...(full.count - needle.count) where full[start..<(start + needle.count)].elementsEqual(needle) {
            return String(decoding: full[..<start] + full[(start + needle.count)...], as: UTF8.self)
        }
        return description
    }
}

/// Standard Base64 (RFC 4648 §4, with padding), for `Basic` credentials and for bytes in JSON (the body of a
/// download kept in memory, when its result is encoded).
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    package static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(alphabet[Int(value >> 6 & 63)])
            output.append(alphabet[Int(value & 63)])
            index += 3
        }
        let left = bytes.count - index
        if left > 0 {
            var value = UInt32(bytes[index]) << 16
            if left == 2 { value |= UInt32(bytes[index + 1]) << 8 }
            output.append(alphabet[Int(value >> 18 & 63)])
            output.append(alphabet[Int(value >> 12 & 63)])
            output.append(left == 2 ? alphabet[Int(value >> 6 & 63)] : UInt8(ascii: "="))
            output.append(UInt8(ascii: "="))
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil unless it is canonical Base64 with padding: a length that is a
    /// multiple of 4, only the alphabet, `=` only as the last one or two characters, and no stray bits in
    /// the last group — so that every byte string has exactly one text that decodes to it.
    package static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard input.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(input.count / 4 * 3)
        var index = 0
        while index < input.count {
            let last = index + 4 == input.count
            let padding = last ? (input[index + 3] == UInt8(ascii: "=") ? (input[index + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var value: UInt32 = 0
            for offset in 0..<(4 - padding) {
                guard let digit = sextet(input[index + offset]) else { return nil }
                value |= UInt32(digit) << (18 - 6 * UInt32(offset))
            }
            output.append(UInt8(value >> 16 & 0xFF))
            if padding < 2 { output.append(UInt8(value >> 8 & 0xFF)) }
            if padding < 1 { output.append(UInt8(value & 0xFF)) }
            // Bits the padding leaves unused must be zero (RFC 4648 §3.5), or two texts would mean one value.
            if padding == 1, value & 0xFF != 0 { return nil }
            if padding == 2, value & 0xFFFF != 0 { return nil }
            index += 4
        }
        return output
    }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
