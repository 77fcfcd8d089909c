/// A response that breaks RFC 9112 (or one of the parser's limits), with the byte offset where it broke.
///
/// `offset` counts bytes from the first byte ever fed to the parser, so it points into the connection's
/// byte stream even across interim responses and keep-alive reuse.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public enum Kind: Sendable, Equatable {
        case invalidStatusLine(String)
        case unsupportedVersion(major: Int, minor: Int)
        case invalidStatusCode(String)
        case invalidReasonPhrase(byte: UInt8)
        case unexpectedSwitchingProtocols
        case bareCR
        case bareLF
        case emptyFieldName
        case invalidFieldNameCharacter(byte: UInt8)
        case whitespaceBeforeColon(field: String)
        case invalidFieldValueCharacter(field: String, byte: UInt8)
        case obsFoldWithoutField
        case headTooLarge(limit: Int)
        case tooManyFields(limit: Int)
        /// The response would be interim response number `limit + 1` for one request; the offset is its first byte.
        case tooManyInterimResponses(limit: Int)
        case contentLengthWithTransferEncoding
        case invalidContentLength(String)
        case conflictingContentLengths(String, String)
        case unsupportedTransferCoding(String)
        case invalidChunkSize(byte: UInt8)
        case chunkSizeOverflow
        case chunkLineTooLong(limit: Int)
        case invalidChunkExtension(byte: UInt8)
        case missingCRLFAfterChunkData(byte: UInt8)
        case trailersTooLarge(limit: Int)
        case connectionClosedBeforeResponse
        case incompleteMessage(String)
    }

    /// What was wrong.
    public var kind: Kind
    /// Offset of the offending byte in the stream fed to the parser.
    public var offset: Int

    public init(_ kind: Kind, offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String { "\(reason) at byte offset \(offset)" }

    /// The reason alone, without the offset.
    public var reason: String {
        switch kind {
        case .invalidStatusLine(let what): "invalid status line: \(what)"
        case .unsupportedVersion(let major, let minor): "unsupported HTTP version \(major).\(minor)"
        case .invalidStatusCode(let code): "invalid status code \"\(code)\""
        case .invalidReasonPhrase(let byte): "invalid byte \(hex(byte)) in reason phrase"
        case .unexpectedSwitchingProtocols: "unexpected 101 Switching Protocols (no upgrade was requested)"
        case .bareCR: "CR not followed by LF"
        case .bareLF: "LF without preceding CR"
        case .emptyFieldName: "empty field name"
        case .invalidFieldNameCharacter(let byte): "invalid byte \(hex(byte)) in field name"
        case .whitespaceBeforeColon(let field): "whitespace between field name \"\(field)\" and colon"
        case .invalidFieldValueCharacter(let field, let byte): "invalid byte \(hex(byte)) in value of field \"\(field)\""
        case .obsFoldWithoutField: "line folding (obs-fold) before any field"
        case .headTooLarge(let limit): "response head larger than \(limit) bytes"
        case .tooManyFields(let limit): "more than \(limit) header fields"
        case .tooManyInterimResponses(let limit): "more than \(limit) interim (1xx) responses before the final response"
        case .contentLengthWithTransferEncoding: "both Transfer-Encoding and Content-Length present"
        case .invalidContentLength(let value): "invalid Content-Length \"\(value)\""
        case .conflictingContentLengths(let a, let b): "conflicting Content-Length values \"\(a)\" and \"\(b)\""
        case .unsupportedTransferCoding(let value): "unsupported Transfer-Encoding \"\(value)\""
        case .invalidChunkSize(let byte): "invalid byte \(hex(byte)) in chunk size"
        case .chunkSizeOverflow: "chunk size too large"
        case .chunkLineTooLong(let limit): "chunk-size line longer than \(limit) bytes"
        case .invalidChunkExtension(let byte): "invalid byte \(hex(byte)) in chunk extension"
        case .missingCRLFAfterChunkData(let byte): "expected CRLF after chunk data, found \(hex(byte))"
        case .trailersTooLarge(let limit): "trailer section larger than \(limit) bytes"
        case .connectionClosedBeforeResponse: "connection closed before any response byte"
        case .incompleteMessage(let what): "incomplete message: \(what)"
        }
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
}
