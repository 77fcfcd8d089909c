/// How the body of a response is delimited (RFC 9112 §6.3).
public enum BodyFraming: Sendable, Equatable {
    /// No body: a response to HEAD, or a 1xx, 204 or 304 response.
    case none
    /// Exactly this many bytes.
    case contentLength(Int64)
    /// Transfer-Encoding: chunked.
    case chunked
    /// Everything until the server closes the connection.
    case untilClose

    /// The name used in logs and by `haul-parse`.
    public var name: String {
        switch self {
        case .none: "none"
        case .contentLength: "content-length"
        case .chunked: "chunked"
        case .untilClose: "close"
        }
    }
}

/// The parsed head of a response: status line and header fields, with the framing already decided.
public struct ResponseHead: Sendable, Equatable {
    /// HTTP major version (always 1).
    public var major: Int
    /// HTTP minor version.
    public var minor: Int
    /// The status code exactly as the server sent it, 100–999.
    ///
    /// RFC 9110 §15 defines classes only up to 5xx and has a client treat an unrecognised code as the x00 of
    /// its class. Codes 600 and above have no class: callers are to treat them as server errors (5xx).
    /// Codes 100–199 are interim (``isInterim``).
    public var status: Int
    /// Header fields in the order received.
    public var fields: HTTPFields
    /// How the body is delimited.
    public var framing: BodyFraming
    /// Whether the connection may carry another request after this response ends cleanly.
    public var keepAlive: Bool
    let reasonRange: Range<Int>

    /// The reason phrase, as latin-1 text (clients should not rely on it).
    public var reason: String { latin1String(fields.storage[reasonRange]) }

    /// "1.1" or "1.0".
    public var version: String { "\(major).\(minor)" }

    /// Whether this is an interim (1xx) response.
    public var isInterim: Bool { status < 200 }
}
