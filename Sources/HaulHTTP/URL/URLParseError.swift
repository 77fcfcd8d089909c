/// Why a URL or reference could not be parsed or resolved.
///
/// `input` is the text that was parsed with any user information replaced by `***` and control
/// characters shown as `%XX`, so the error is safe to print or log.
public struct URLParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public enum Reason: Sendable, Hashable {
        /// Nothing to parse.
        case empty
        /// No `scheme:` where an absolute URL was required.
        case missingScheme
        /// The scheme is not `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
        case invalidScheme(String)
        /// A well-formed scheme other than `http` or `https`.
        case unsupportedScheme(String)
        /// No `//authority`, or an empty host.
        case missingHost
        /// A host with characters a DNS name cannot have.
        case invalidHost(String)
        /// A host with non-ASCII characters; it must be converted to its punycode (`xn--`) form first.
        case internationalizedHost(String)
        /// A host that looks numeric but is not a dotted-decimal IPv4 address.
        case invalidIPv4Address(String)
        /// A bracketed IP literal that is not a valid IPv6 address (IPvFuture is not supported either).
        case invalidIPv6Address(String)
        /// An IPv6 literal with a zone ID (`%25eth0`), which has no meaning beyond the local machine.
        case ipv6ZoneID(String)
        /// A port that is not a number in 1–65535.
        case invalidPort(String)
        /// User information with bytes a URL cannot carry; the text itself is never repeated.
        case invalidUserInfo
        /// A `%` not followed by two hexadecimal digits.
        case invalidPercentEncoding(String)
        /// A control character (0x00–0x1F or 0x7F), which may not appear in a URL even percent-decoded.
        case controlCharacter(UInt8)
    }

    /// What was wrong.
    public let reason: Reason
    /// The offending URL, redacted (see the type's documentation).
    public let input: String

    /// An error for `reason` found in `input` (already redacted).
    public init(_ reason: Reason, input: String) {
        self.reason = reason
        self.input = input
    }

    /// An error for `reason` that quotes nothing yet: the parsers below an entry point find what is wrong,
    /// and the entry point then adds the printable form of its input with ``quoting(_:)``, so that form is
    /// built only when there is an error to quote it in.
    init(_ reason: Reason) {
        self.init(reason, input: "")
    }

    /// The same error quoting `input` (already redacted).
    func quoting(_ input: String) -> URLParseError { URLParseError(reason, input: input) }

    /// A one-line explanation such as `invalid port "99999" in "http://h:99999/"`.
    public var description: String {
        let location = "in \"\(input)\""
        switch reason {
        case .empty: return "empty URL"
        case .missingScheme: return "missing scheme (expected \"http://\" or \"https://\") \(location)"
        case let .invalidScheme(scheme): return "invalid scheme \"\(scheme)\" \(location)"
        case let .unsupportedScheme(scheme):
            return "unsupported scheme \"\(scheme)\" (only http and https are supported) \(location)"
        case .missingHost: return "missing host \(location)"
        case let .invalidHost(host): return "invalid host \"\(host)\" \(location)"
        case let .internationalizedHost(host):
            return "non-ASCII host \"\(host)\" \(location) (convert it to its punycode xn-- form)"
        case let .invalidIPv4Address(host): return "invalid IPv4 address \"\(host)\" \(location)"
        case let .invalidIPv6Address(host): return "invalid IPv6 address \"\(host)\" \(location)"
        case let .ipv6ZoneID(host): return "IPv6 zone IDs are not supported: \"\(host)\" \(location)"
        case let .invalidPort(port): return "invalid port \"\(port)\" \(location)"
        case .invalidUserInfo: return "invalid user information \(location)"
        case let .invalidPercentEncoding(escape): return "invalid percent-encoding \"\(escape)\" \(location)"
        case let .controlCharacter(byte):
            let hex = FieldSyntax.upperHexDigits
            return "control character 0x\(Character(Unicode.Scalar(hex[Int(byte >> 4)])))"
                + "\(Character(Unicode.Scalar(hex[Int(byte & 0xF)]))) \(location)"
        }
    }
}
