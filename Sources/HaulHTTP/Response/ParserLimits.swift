/// Upper bounds that keep a hostile server from making the parser buffer without end.
public struct ParserLimits: Sendable, Equatable {
    /// Largest response head (status line, fields and the empty line), in bytes.
    public var maxHeadBytes: Int
    /// Most header fields in one head (and trailer fields in one trailer section).
    public var maxFields: Int
    /// Longest chunk-size line, extensions included.
    public var maxChunkLineBytes: Int
    /// Largest trailer section, in bytes.
    public var maxTrailerBytes: Int
    /// Most interim (1xx) responses before one final response: a server repeating `100 Continue` must not
    /// hold a request forever. A real exchange sees one or two (100, 103).
    public var maxInterimResponses: Int

    public init(maxHeadBytes: Int = 64 * 1024, maxFields: Int = 256,
                maxChunkLineBytes: Int = 4 * 1024, maxTrailerBytes: Int = 16 * 1024,
                maxInterimResponses: Int = 5) {
        self.maxHeadBytes = maxHeadBytes
        self.maxFields = maxFields
        self.maxChunkLineBytes = maxChunkLineBytes
        self.maxTrailerBytes = maxTrailerBytes
        self.maxInterimResponses = maxInterimResponses
    }
}
