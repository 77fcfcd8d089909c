extension MisbehavingServer {
    /// A request as the server received it, recorded in arrival order.
    public struct ReceivedRequest: Sendable, Hashable {
        /// The position of the request among all requests to this server, from 0.
        public let index: Int
        /// Which accepted connection carried it; connections are numbered from 0 in accept order.
        public let connectionID: Int
        /// The position of the request on its connection, from 0 (1 and up means keep-alive reuse).
        public let indexOnConnection: Int
        /// The method, e.g. `GET`.
        public let method: String
        /// The request target, e.g. `/file`.
        public let target: String
        /// The protocol version, e.g. `HTTP/1.1`.
        public let version: String
        /// The header fields in order, names as sent.
        public let headerFields: [HeaderField]

        /// The value of the first field named `name` (case-insensitive), if any.
        public func header(_ name: String) -> String? {
            headerFields.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The raw `Range` field, if any.
        public var rangeHeader: String? { header("Range") }

        /// The parsed `Range` field: `nil` if absent, not `bytes=`, malformed, or more than one range.
        public var range: ByteRangeSpecifier? { rangeHeader.flatMap(ByteRangeSpecifier.init(fieldValue:)) }
    }

    /// One request header field.
    public struct HeaderField: Sendable, Hashable {
        /// The field name as sent.
        public let name: String
        /// The field value without surrounding whitespace.
        public let value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A single byte range of a `Range: bytes=...` field.
    public enum ByteRangeSpecifier: Sendable, Hashable {
        /// `bytes=first-last`.
        case bounded(first: Int, last: Int)
        /// `bytes=first-`.
        case from(first: Int)
        /// `bytes=-length`: the last `length` bytes.
        case suffix(length: Int)

        /// Parses a `Range` field value; `nil` unless it is exactly one syntactically valid byte range.
        public init?(fieldValue: String) {
            let value = fieldValue.trimmingWhitespace()
            guard value.lowercased().hasPrefix("bytes=") else { return nil }
            let specifier = value.dropFirst("bytes=".count).trimmingWhitespace()
            guard !specifier.contains(","), let dash = specifier.firstIndex(of: "-") else { return nil }
            let firstText = specifier[..<dash].trimmingWhitespace()
            let lastText = specifier[specifier.index(after: dash)...].trimmingWhitespace()
            switch (Int(firstText), Int(lastText)) {
            case let (first?, last?) where first >= 0 && last >= first: self = .bounded(first: first, last: last)
            case let (first?, nil) where lastText.isEmpty && first >= 0: self = .from(first: first)
            case let (nil, length?) where firstText.isEmpty && length >= 0: self = .suffix(length: length)
            default: return nil
            }
        }

        /// The byte offsets selected in a representation of `length` bytes; `nil` if unsatisfiable (416).
        public func resolved(length: Int) -> ClosedRange<Int>? {
            switch self {
            case let .bounded(first, last): first < length ? first...min(last, length - 1) : nil
            case let .from(first): first < length ? first...(length - 1) : nil
            case let .suffix(suffixLength): suffixLength > 0 && length > 0 ? max(0, length - suffixLength)...(length - 1) : nil
            }
        }
    }
}

/// A parsed request head before it is numbered and recorded.
struct RequestHead {
    var method: String
    var target: String
    var version: String
    var fields: [MisbehavingServer.HeaderField]

    func header(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Reads request heads off a connection, robust to heads arriving in any number of pieces and to several
/// pipelined requests arriving in one read.
struct RequestHeadReader {
    /// Heads larger than this end the connection: the client is broken or hostile, and this is a test server.
    static let maximumHeadSize = 64 * 1024

    private var buffered: [UInt8] = []

    enum Outcome {
        case head(RequestHead)
        case endOfStream
        case malformed
    }

    mutating func next(from transport: ServerTransport) -> Outcome {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if let end = headEnd() {
                let headBytes = Array(buffered[..<end.head])
                buffered.removeFirst(end.afterTerminator)
                guard let head = Self.parse(headBytes) else { return .malformed }
                // Request bodies are not part of any test; read and drop them so the next head lines up.
                if let length = head.header("Content-Length").flatMap({ Int($0) }), length > 0 {
                    guard discard(length, from: transport, scratch: &scratch) else { return .endOfStream }
                }
                return .head(head)
            }
            if buffered.count > Self.maximumHeadSize { return .malformed }
            let count = scratch.withUnsafeMutableBytes { transport.read(into: $0) }
            if count <= 0 { return .endOfStream }
            buffered.append(contentsOf: scratch[0..<count])
        }
    }

    /// Where the head ends: the index of its blank line, and the index just after it. Bare LF is tolerated.
    private func headEnd() -> (head: Int, afterTerminator: Int)? {
        var index = 0
        while index < buffered.count {
            if buffered[index] == UInt8(ascii: "\n") {
                if index + 1 < buffered.count && buffered[index + 1] == UInt8(ascii: "\n") { return (index, index + 2) }
                if index + 2 < buffered.count && buffered[index + 1] == UInt8(ascii: "\r") && buffered[index + 2] == UInt8(ascii: "\n") {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    private mutating func discard(_ length: Int, from transport: ServerTransport, scratch: inout [UInt8]) -> Bool {
        var remaining = length
        let fromBuffer = min(remaining, buffered.count)
        buffered.removeFirst(fromBuffer)
        remaining -= fromBuffer
        while remaining > 0 {
            let count = scratch.withUnsafeMutableBytes { transport.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<min($0.count, remaining)])) }
            if count <= 0 { return false }
            remaining -= count
        }
        return true
    }

    private static func parse(_ bytes: [UInt8]) -> RequestHead? {
        // Split the bytes, not a String: Swift treats "\r\n" as one Character, which never equals "\n".
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            String(decoding: line.last == UInt8(ascii: "\r") ? line.dropLast() : line, as: UTF8.self)
        }
        // RFC 9112 §2.2: ignore empty lines before the request line.
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/") else { return nil }
        var fields: [MisbehavingServer.HeaderField] = []
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            fields.append(.init(name: String(line[..<colon]), value: line[line.index(after: colon)...].trimmingWhitespace()))
        }
        return RequestHead(method: String(parts[0]), target: String(parts[1]), version: String(parts[2]), fields: fields)
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs (no Foundation needed).
    func trimmingWhitespace() -> String {
        let isWhitespace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isWhitespace($0) }), let end = lastIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(self[start...end])
    }
}
