/// A whole response gathered in memory: for small bodies (error pages, redirects), for `haul-parse`, and for
/// checking that every way of splitting the same bytes gives the same result.
public struct CollectedResponse: Sendable, Equatable {
    /// 1xx responses before the final one, in order.
    public var interim: [ResponseHead] = []
    /// The final response's head, once received.
    public var head: ResponseHead?
    /// The body after de-chunking.
    public var body: [UInt8] = []
    /// Chunked trailer fields.
    public var trailers = HTTPFields()
    /// Whether the response ended.
    public var isComplete = false
    /// Bytes of input that belonged to the response (anything after it is left for the next one); after an
    /// error, the offset where parsing stopped.
    public var consumed = 0
    /// The error that stopped parsing, if any.
    public var error: HTTPParseError?

    public init() {}

    /// Parses a response fed as `pieces`, then signals end of stream unless the response ended first.
    public static func parse<Piece: Collection<UInt8>>(
        pieces: some Sequence<Piece>, requestWasHead: Bool = false, limits: ParserLimits = ParserLimits()
    ) -> CollectedResponse {
        var parser = ResponseParser(requestWasHead: requestWasHead, limits: limits)
        var result = CollectedResponse()
        do throws(HTTPParseError) {
            for piece in pieces {
                let bytes = Array(piece)
                let finished = try bytes.withUnsafeBytes { raw in
                    Result { () throws(HTTPParseError) -> Bool in try result.feed(raw, into: &parser) }
                }.get()
                if finished { return result }
            }
            if let event = try parser.finish() { result.record(event) }
        } catch {
            result.error = error
            // How much a parser had swallowed before failing depends on how the input was split; the error
            // offset does not.
            result.consumed = error.offset
            return result
        }
        result.consumed = parser.bytesConsumed
        return result
    }

    /// Feeds one piece; returns true once the response is complete.
    private mutating func feed(_ raw: UnsafeRawBufferPointer, into parser: inout ResponseParser) throws(HTTPParseError) -> Bool {
        var offset = 0
        while true {
            let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: raw[offset...]))
            offset += consumed
            if case .needMoreInput = event { return false }
            record(event)
            if isComplete {
                self.consumed = parser.bytesConsumed
                return true
            }
        }
    }

    private mutating func record(_ event: ResponseEvent) {
        switch event {
        case .needMoreInput: break
        case .interim(let head): interim.append(head)
        case .head(let head): self.head = head
        case .body(let bytes): body.append(contentsOf: bytes)
        case .end(let trailers):
            self.trailers = trailers
            isComplete = true
        }
    }
}
