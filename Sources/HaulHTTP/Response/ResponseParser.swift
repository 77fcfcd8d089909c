/// One thing the parser found in the input.
///
/// `.body` points into the caller's buffer: use it before the buffer is reused.
public enum ResponseEvent {
    /// All input was used; feed more (or call `finish()` at end of stream).
    case needMoreInput
    /// A 1xx interim response; the final response follows.
    case interim(ResponseHead)
    /// The final response's head.
    case head(ResponseHead)
    /// Body bytes (after de-chunking), a slice of the input.
    case body(UnsafeRawBufferPointer)
    /// The response is complete; `trailers` holds chunked trailer fields (kept apart from the head's fields).
    case end(trailers: HTTPFields)
}

/// An incremental, zero-copy HTTP/1.1 response parser (RFC 9112) that does no I/O.
///
/// Feed it whatever bytes arrived, in pieces of any size; each `parse` call reports one event and how many
/// bytes it consumed. Call it again with the rest of the input until it answers `.needMoreInput`. After
/// `.end`, unconsumed bytes belong to the next response: call `prepareForNextResponse` and go on. At end of
/// stream call `finish()`, which completes a close-delimited body or reports the message incomplete.
///
/// The parser is strict: anything RFC 9112 calls invalid is an `HTTPParseError` naming the problem and the
/// byte offset, and the same input gives the same events and errors however it is split.
public struct ResponseParser {
    private enum State {
        case head
        case endPending
        case contentLength(remaining: Int64)
        case chunked
        case trailers
        case untilClose
        case done
    }

    private let limits: ParserLimits
    private var requestWasHead: Bool
    private var state: State = .head
    private var section: FieldSectionParser
    private var chunked: ChunkedDecoder
    private var pendingTrailers = HTTPFields()
    private var streamOffset = 0
    private var responseStartOffset = 0
    private var framing: BodyFraming = .none
    private var bodyBytes: Int64 = 0
    private var keepAlive = false

    /// - Parameters:
    ///   - requestWasHead: whether the request being answered was `HEAD` (its response has no body).
    ///   - limits: bounds on what the parser will buffer.
    public init(requestWasHead: Bool = false, limits: ParserLimits = ParserLimits()) {
        self.limits = limits
        self.requestWasHead = requestWasHead
        self.section = FieldSectionParser(mode: .responseHead, headLimit: limits.maxHeadBytes,
                                          trailerLimit: limits.maxTrailerBytes,
                                          maxFields: limits.maxFields, sectionOffset: 0)
        self.chunked = ChunkedDecoder(maxLineBytes: limits.maxChunkLineBytes)
    }

    /// Readies the parser for the next response on the same connection.
    public mutating func prepareForNextResponse(requestWasHead: Bool = false) {
        self.requestWasHead = requestWasHead
        state = .head
        responseStartOffset = streamOffset
        section.reset(mode: .responseHead, sectionOffset: streamOffset)
        pendingTrailers = HTTPFields()
    }

    /// Bytes consumed since the parser was created.
    public var bytesConsumed: Int { streamOffset }

    /// Whether the last response ended and the server allows the connection to be reused.
    public var connectionReusable: Bool {
        if case .done = state { return keepAlive }
        return false
    }

    /// Whether the current response ended (`.end` was returned).
    public var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Body bytes of the final response delivered so far.
    public var bodyBytesDelivered: Int64 { bodyBytes }

    /// Parses from `input`; returns one event and the number of bytes of `input` it consumed.
    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (event: ResponseEvent, consumed: Int) {
        let result = try step(input)
        streamOffset += result.consumed
        return result
    }

    private mutating func step(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (event: ResponseEvent, consumed: Int) {
        switch state {
        case .head:
            let (consumed, complete) = try section.feed(input)
            guard complete else { return (.needMoreInput, consumed) }
            let head = try finishHead(endOffset: streamOffset + consumed)
            if head.isInterim {
                section.reset(mode: .responseHead, sectionOffset: streamOffset + consumed)
                return (.interim(head), consumed)
            }
            return (.head(head), consumed)

        case .endPending:
            state = .done
            return (.end(trailers: pendingTrailers), 0)

        case .contentLength(let remaining):
            guard !input.isEmpty else { return (.needMoreInput, 0) }
            let take = Int(min(Int64(input.count), remaining))
            bodyBytes += Int64(take)
            state = remaining == Int64(take) ? .endPending : .contentLength(remaining: remaining - Int64(take))
            return (.body(UnsafeRawBufferPointer(rebasing: input[0..<take])), take)

        case .chunked:
            let (step, consumed) = try chunked.decode(input, baseOffset: streamOffset)
            switch step {
            case .needMoreInput:
                return (.needMoreInput, consumed)
            case .data(let range):
                bodyBytes += Int64(range.count)
                return (.body(UnsafeRawBufferPointer(rebasing: input[range])), consumed)
            case .lastChunk:
                state = .trailers
                section.reset(mode: .trailers, sectionOffset: streamOffset + consumed)
                return try continueWithTrailers(input, alreadyConsumed: consumed)
            }

        case .trailers:
            return try continueWithTrailers(input, alreadyConsumed: 0)

        case .untilClose:
            guard !input.isEmpty else { return (.needMoreInput, 0) }
            bodyBytes += Int64(input.count)
            return (.body(input), input.count)

        case .done:
            return (.needMoreInput, 0)
        }
    }

    private mutating func continueWithTrailers(_ input: UnsafeRawBufferPointer, alreadyConsumed: Int) throws(HTTPParseError) -> (event: ResponseEvent, consumed: Int) {
        let rest = UnsafeRawBufferPointer(rebasing: input[alreadyConsumed...])
        let (consumed, complete) = try section.feed(rest)
        guard complete else { return (.needMoreInput, alreadyConsumed + consumed) }
        state = .done
        return (.end(trailers: section.fields), alreadyConsumed + consumed)
    }

    /// Call at end of stream. Returns `.end` when the close completes the response, nil when the response had
    /// already ended; throws when the response was cut short.
    public mutating func finish() throws(HTTPParseError) -> ResponseEvent? {
        switch state {
        case .head:
            if section.receivedCount == 0 {
                if streamOffset == responseStartOffset {
                    throw HTTPParseError(.connectionClosedBeforeResponse, offset: streamOffset)
                }
                throw HTTPParseError(.incompleteMessage("connection closed after an interim response"), offset: streamOffset)
            }
            try section.finishIncomplete()
        case .endPending:
            state = .done
            return .end(trailers: pendingTrailers)
        case .contentLength(let remaining):
            throw HTTPParseError(.incompleteMessage("body ended after \(bodyBytes) of \(bodyBytes + remaining) bytes"), offset: streamOffset)
        case .chunked:
            let where_ = chunked.isAtChunkBoundary ? "before the last chunk" : "inside a chunk"
            throw HTTPParseError(.incompleteMessage("chunked body ended \(where_) after \(bodyBytes) bytes"), offset: streamOffset)
        case .trailers:
            try section.finishIncomplete()
        case .untilClose:
            state = .done
            return .end(trailers: HTTPFields())
        case .done:
            return nil
        }
    }

    /// Decides framing and persistence once the head is complete (RFC 9112 §6.3, §9.3).
    private mutating func finishHead(endOffset: Int) throws(HTTPParseError) -> ResponseHead {
        let line = section.statusLine
        let fields = section.fields
        let status = line.status
        let headOffset = endOffset - section.receivedCount
        if status == 101 { throw HTTPParseError(.unexpectedSwitchingProtocols, offset: headOffset) }

        var transferEncoding: [UInt8]? = nil
        var contentLength: Int64? = nil
        var contentLengthText: [UInt8] = []
        var connectionClose = false
        var connectionKeepAlive = false
        for index in 0..<fields.count {
            let name = fields.name(at: index)
            let value = fields.value(at: index)
            if asciiCaseInsensitiveEquals(name, "transfer-encoding") {
                if transferEncoding == nil { transferEncoding = Array(value) } else { transferEncoding! += Array(", ".utf8) + value }
            } else if asciiCaseInsensitiveEquals(name, "content-length") {
                for item in commaSeparated(value) {
                    guard let parsed = parseContentLength(item) else {
                        throw HTTPParseError(.invalidContentLength(latin1String(value)), offset: headOffset + fields.entries[index].valueStartOffset)
                    }
                    if let existing = contentLength, existing != parsed {
                        throw HTTPParseError(.conflictingContentLengths(latin1String(contentLengthText), latin1String(item)),
                                             offset: headOffset + fields.entries[index].valueStartOffset)
                    }
                    contentLength = parsed
                    contentLengthText = Array(item)
                }
                if contentLength == nil {
                    throw HTTPParseError(.invalidContentLength(latin1String(value)), offset: headOffset + fields.entries[index].valueStartOffset)
                }
            } else if asciiCaseInsensitiveEquals(name, "connection") {
                for token in commaSeparated(value) {
                    if asciiCaseInsensitiveEquals(token, "close") { connectionClose = true }
                    if asciiCaseInsensitiveEquals(token, "keep-alive") { connectionKeepAlive = true }
                }
            }
        }

        if transferEncoding != nil && contentLength != nil {
            throw HTTPParseError(.contentLengthWithTransferEncoding, offset: headOffset)
        }
        var isChunked = false
        if let coding = transferEncoding {
            let codings = commaSeparated(coding[...])
            guard codings.count == 1, asciiCaseInsensitiveEquals(codings[0], "chunked") else {
                throw HTTPParseError(.unsupportedTransferCoding(latin1String(coding)), offset: headOffset)
            }
            isChunked = true
        }

        let persistent = line.minor >= 1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        let framing: BodyFraming
        if status < 200 || status == 204 || status == 304 || requestWasHead {
            framing = .none
        } else if isChunked {
            framing = .chunked
        } else if let length = contentLength {
            framing = .contentLength(length)
        } else {
            framing = .untilClose
        }
        // A 1.0 message with Transfer-Encoding may have been mangled by an old proxy: never reuse it.
        keepAlive = persistent && framing != .untilClose && !(isChunked && line.minor == 0)

        let head = ResponseHead(major: line.major, minor: line.minor, status: status, fields: fields,
                                framing: framing, keepAlive: keepAlive, reasonRange: line.reasonStart..<line.reasonEnd)
        guard !head.isInterim else { return head }
        bodyBytes = 0
        self.framing = framing
        switch framing {
        case .none: state = .endPending
        case .contentLength(let length): state = length == 0 ? .endPending : .contentLength(remaining: length)
        case .chunked:
            chunked = ChunkedDecoder(maxLineBytes: limits.maxChunkLineBytes)
            state = .chunked
        case .untilClose: state = .untilClose
        }
        return head
    }
}

extension HTTPFields.Entry {
    var valueStartOffset: Int { Int(valueStart) }
}

/// Splits a list-valued field on commas, trimming optional whitespace and skipping empty elements.
func commaSeparated(_ value: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
    var items: [ArraySlice<UInt8>] = []
    for piece in value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
        var item = piece
        while let first = item.first, first == asciiSP || first == asciiHT { item = item.dropFirst() }
        while let last = item.last, last == asciiSP || last == asciiHT { item = item.dropLast() }
        if !item.isEmpty { items.append(item) }
    }
    return items
}

/// `1*DIGIT` within Int64; nil for anything else, including overflow.
func parseContentLength(_ text: ArraySlice<UInt8>) -> Int64? {
    guard !text.isEmpty else { return nil }
    var value: Int64 = 0
    for byte in text {
        guard isDigit(byte) else { return nil }
        let (times10, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(Int64(byte - 0x30))
        guard !o1 && !o2 else { return nil }
        value = sum
    }
    return value
}
