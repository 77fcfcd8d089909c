/// One line of an ``NginxServer``'s access log: a completed request and what nginx sent for it.
public struct AccessLogEntry: Sendable, Hashable {
    /// nginx's serial number of the TCP connection (unique across workers): equal numbers mean keep-alive reuse.
    public let connection: Int
    /// The request's position on its connection, 1 for the first.
    public let connectionRequests: Int
    /// The response status code.
    public let status: Int
    /// Bytes sent to the client including the response head.
    public let bytesSent: Int
    /// Bytes of response body sent.
    public let bodyBytesSent: Int
    /// The request line, e.g. `GET /file HTTP/1.1`.
    public let request: String
    /// The request's `Range` field, `nil` if it had none.
    public let range: String?
    /// The request's `If-Range` field, `nil` if it had none.
    public let ifRange: String?
    /// The port the request arrived on: tells HTTP from HTTPS requests apart.
    public let serverPort: Int
    /// `http` or `https`.
    public let scheme: String

    /// The request method, e.g. `GET`.
    public var method: String { requestLineParts.first ?? "" }
    /// The request target, e.g. `/file`.
    public var target: String { requestLineParts.count > 1 ? requestLineParts[1] : "" }

    private var requestLineParts: [String] { request.split(separator: " ").map(String.init) }

    /// Parses one line in the `haul` log format; `nil` for a line that does not have its fields.
    init?(line: Substring) {
        let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map { AccessLogEntry.unescape($0) }
        guard fields.count == 10, let connection = Int(fields[0]), let connectionRequests = Int(fields[1]),
            let status = Int(fields[2]), let bytesSent = Int(fields[3]), let bodyBytesSent = Int(fields[4]),
            let serverPort = Int(fields[8])
        else { return nil }
        self.connection = connection
        self.connectionRequests = connectionRequests
        self.status = status
        self.bytesSent = bytesSent
        self.bodyBytesSent = bodyBytesSent
        self.request = fields[5]
        self.range = fields[6].isEmpty ? nil : fields[6]
        self.ifRange = fields[7].isEmpty ? nil : fields[7]
        self.serverPort = serverPort
        self.scheme = fields[9]
    }

    /// Undoes nginx's `escape=json` (`\"`, `\\`, `\uXXXX` and the short control escapes).
    private static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var result = ""
        var characters = field.makeIterator()
        while let character = characters.next() {
            guard character == "\\", let escaped = characters.next() else {
                result.append(character)
                continue
            }
            switch escaped {
            case "n": result.append("\n")
            case "r": result.append("\r")
            case "t": result.append("\t")
            case "b": result.append("\u{8}")
            case "f": result.append("\u{c}")
            case "u":
                var hex = ""
                for _ in 0..<4 { if let digit = characters.next() { hex.append(digit) } }
                if let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) { result.unicodeScalars.append(scalar) }
            default: result.append(escaped)
            }
        }
        return result
    }
}

extension Array where Element == AccessLogEntry {
    /// The entries grouped by TCP connection, each group in request order.
    public var byConnection: [Int: [AccessLogEntry]] {
        Dictionary(grouping: self, by: \.connection).mapValues { $0.sorted { $0.connectionRequests < $1.connectionRequests } }
    }

    /// The total body bytes nginx sent for these entries.
    public var totalBodyBytesSent: Int { reduce(0) { $0 + $1.bodyBytesSent } }
}
