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
    private var streamOffset = 0
    private var responseStartOffset = 0
    /// Interim (1xx) responses seen for the current request.
    private var interimResponses = 0
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
        interimResponses = 0
        section.reset(mode: .responseHead, sectionOffset: streamOffset)
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

    /// The bytes still to come of a body framed by `Content-Length`, while one is being received; nil in any
    /// other state (head, chunked, close-delimited, complete).
    public var contentLengthRemaining: Int64? {
        if case .contentLength(let remaining) = state { return remaining }
        return nil
    }

    /// Counts `count` bytes of a `Content-Length` body that the caller received around the parser (spliced
    /// straight from the socket into a file) as delivered, exactly as if they had been parsed as `.body`. After
    /// the body's last byte, the next `parse` reports `.end`. `count` must not exceed ``contentLengthRemaining``.
    public mutating func skipBody(_ count: Int) {
        guard case .contentLength(let remaining) = state, Int64(count) <= remaining, count >= 0 else {
            preconditionFailure("skipBody(\(count)) outside a Content-Length body or past its end")
        }
        bodyBytes += Int64(count)
        streamOffset += count
        state = remaining == Int64(count) ? .endPending : .contentLength(remaining: remaining - Int64(count))
    }

    /// Parses from `input`; returns one event and the number of bytes of `input` it consumed.
    public mutating func parse(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (event: ResponseEvent, consumed: Int) {
        let result = try step(input)
        streamOffset += result.consumed
        return result
    }

    @inline(__always)
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
            return (.end(trailers: HTTPFields()), 0)

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
            return .end(trailers: HTTPFields())
        case .contentLength(let remaining):
            throw HTTPParseError(.incompleteMessage("body ended after \(bodyBytes) of \(bodyBytes + remaining) bytes"), offset: streamOffset)
        case .chunked:
            let position = chunked.isAtChunkBoundary ? "before the last chunk" : "inside a chunk"
            throw HTTPParseError(.incompleteMessage("chunked body ended \(position) after \(bodyBytes) bytes"), offset: streamOffset)
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
    @inline(__always)
    private mutating func finishHead(endOffset: Int) throws(HTTPParseError) -> ResponseHead {
        let line = section.statusLine
        let status = line.status
        let headOffset = endOffset - section.completedLength
        if status == 101 { throw HTTPParseError(.unexpectedSwitchingProtocols, offset: headOffset) }

        let framingFields = try section.framingFields(headOffset: headOffset)
        let persistent = line.minor >= 1 ? !framingFields.connectionClose
                                         : (framingFields.connectionKeepAlive && !framingFields.connectionClose)
        let framing: BodyFraming
        if status < 200 || status == 204 || status == 304 || requestWasHead {
            framing = .none
        } else if framingFields.isChunked {
            framing = .chunked
        } else if let length = framingFields.contentLength {
            framing = .contentLength(length)
        } else {
            framing = .untilClose
        }
        // A 1.0 message with Transfer-Encoding may have been mangled by an old proxy: never reuse it.
        keepAlive = persistent && framing != .untilClose && !(framingFields.isChunked && line.minor == 0)

        let head = ResponseHead(major: line.major, minor: line.minor, status: status, fields: section.fields,
                                framing: framing, keepAlive: keepAlive, reasonRange: line.reasonStart..<line.reasonEnd)
        if head.isInterim {
            // Judged once the head is complete, like every other head-level check, so the verdict cannot
            // depend on how the input was split.
            guard interimResponses < limits.maxInterimResponses else {
                throw HTTPParseError(.tooManyInterimResponses(limit: limits.maxInterimResponses), offset: headOffset)
            }
            interimResponses += 1
            return head
        }
        bodyBytes = 0
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

/// What the framing-related fields of a head say: Content-Length, Transfer-Encoding and Connection.
///
/// Fields are told apart by name length first and compared in place, because this runs for every response
/// and most heads carry none of the rarer forms (lists, duplicates) that need more work.
struct FramingFields {
    var contentLength: Int64?
    var isChunked = false
    var connectionClose = false
    var connectionKeepAlive = false

    /// - Parameter candidates: bit k set for every field k that may be one of the three (by the length of
    ///   its name), all bits when fields past the 64th may be; other fields are not looked at.
    @inline(__always)
    /// - Parameter entries: `count` `HTTPFields.Entry` values, one per field, in order (loaded, not bound).
    init(_ p: UnsafeBufferPointer<UInt8>, entries: UnsafeRawPointer, count: Int, candidates: UInt64,
         headOffset: Int) throws(HTTPParseError) {
        var transferEncodingSeen = false
        var transferEncodingChunked = true
        var firstTransferEncoding: Range<Int>? = nil
        var contentLengthText: Range<Int>? = nil
        var remaining = candidates
        var next = 0
        while next < count && remaining != 0 {
            // Every field in order when fields past the 64th are candidates, else only the candidates.
            let index = candidates == UInt64.max ? next : remaining.trailingZeroBitCount
            next = index &+ 1
            remaining = candidates == UInt64.max ? remaining : remaining & (remaining &- 1)
            let entry = entries.load(fromByteOffset: index &<< 4, as: HTTPFields.Entry.self)
            let name = entry.nameRange
            let value = Int(entry.valueStart)..<Int(entry.valueEnd)
            switch name.count {
            case 14 where equalsLowercase(p, name, "content-length"):
                // The usual value, one number, read at once; anything else (a list, a repeat) takes the long way.
                if contentLength == nil, value.count <= 18, let length = parseShortDecimal(p, value) {
                    contentLength = length
                    contentLengthText = value
                } else {
                    try addContentLength(p, value, previous: &contentLengthText, offset: headOffset + value.lowerBound)
                }
            case 17 where equalsLowercase(p, name, "transfer-encoding"):
                // Several fields form one list (RFC 9110 §5.3); only a lone "chunked" is supported.
                if firstTransferEncoding == nil { firstTransferEncoding = value }
                forEachListItem(p, value) { item in
                    transferEncodingChunked = transferEncodingChunked && !transferEncodingSeen
                        && equalsLowercase(p, item, "chunked")
                    transferEncodingSeen = true
                }
                if value.isEmpty { transferEncodingChunked = false }
            case 10 where equalsLowercase(p, name, "connection"):
                // One option alone is the usual value.
                if equalsLowercase(p, value, "keep-alive") {
                    connectionKeepAlive = true
                    continue
                }
                if equalsLowercase(p, value, "close") {
                    connectionClose = true
                    continue
                }
                forEachListItem(p, value) { item in
                    if equalsLowercase(p, item, "close") { connectionClose = true }
                    if equalsLowercase(p, item, "keep-alive") { connectionKeepAlive = true }
                }
            default:
                continue
            }
        }
        if let encoding = firstTransferEncoding {
            if contentLength != nil { throw HTTPParseError(.contentLengthWithTransferEncoding, offset: headOffset) }
            guard transferEncodingSeen && transferEncodingChunked else {
                let text = Self.allValues(named: "transfer-encoding", p, entries, count) ?? latin1String(p[encoding])
                throw HTTPParseError(.unsupportedTransferCoding(text), offset: headOffset)
            }
            isChunked = true
        }
    }

    private mutating func addContentLength(_ p: UnsafeBufferPointer<UInt8>, _ value: Range<Int>,
                                           previous: inout Range<Int>?, offset: Int) throws(HTTPParseError) {
        var any = false
        var failure: HTTPParseError? = nil
        forEachListItem(p, value) { item in
            guard failure == nil else { return }
            any = true
            guard let parsed = parseDecimal(p, item) else {
                failure = HTTPParseError(.invalidContentLength(latin1String(p[value])), offset: offset)
                return
            }
            if let existing = contentLength, existing != parsed, let earlier = previous {
                failure = HTTPParseError(.conflictingContentLengths(latin1String(p[earlier]), latin1String(p[item])), offset: offset)
                return
            }
            contentLength = parsed
            previous = item
        }
        if let failure { throw failure }
        if !any { throw HTTPParseError(.invalidContentLength(latin1String(p[value])), offset: offset) }
    }

    /// Every value of the named field joined with ", ", for error messages.
    private static func allValues(named name: StaticString, _ p: UnsafeBufferPointer<UInt8>, _ entries: UnsafeRawPointer, _ count: Int) -> String? {
        let values = (0..<count).map { entries.load(fromByteOffset: $0 &<< 4, as: HTTPFields.Entry.self) }
            .filter { $0.nameRange.count == name.utf8CodeUnitCount && equalsLowercase(p, $0.nameRange, name) }
            .map { latin1String(p[Int($0.valueStart)..<Int($0.valueEnd)]) }
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}

/// Whether `p[range]` equals `lowercase` ignoring ASCII case; `lowercase` must be lowercase ASCII.
///
/// Compares eight bytes at a time with the 0x20 bit forced on: that folds A-Z onto a-z and leaves digits
/// and '-' alone. The only other token bytes it moves are '^' and '_', onto '~' and DEL, which never match
/// a lowercase name that contains neither.
@inline(__always)
func equalsLowercase(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
    let count = lowercase.utf8CodeUnitCount
    guard range.count == count else { return false }
    let actual = UnsafeRawPointer(p.baseAddress! + range.lowerBound)
    let expected = UnsafeRawPointer(lowercase.utf8Start)
    var k = 0
    while k &+ 8 <= count {
        let a = actual.loadUnaligned(fromByteOffset: k, as: UInt64.self) | 0x2020_2020_2020_2020
        guard a == expected.loadUnaligned(fromByteOffset: k, as: UInt64.self) else { return false }
        k &+= 8
    }
    if k < count && count >= 8 {
        // The rest as the last eight bytes, overlapping bytes already compared.
        let last = count &- 8
        let a = actual.loadUnaligned(fromByteOffset: last, as: UInt64.self) | 0x2020_2020_2020_2020
        return a == expected.loadUnaligned(fromByteOffset: last, as: UInt64.self)
    }
    while k < count {
        guard actual.load(fromByteOffset: k, as: UInt8.self) | 0x20 == expected.load(fromByteOffset: k, as: UInt8.self) else { return false }
        k &+= 1
    }
    return true
}

/// Calls `body` with each non-empty element of a comma-separated list, optional whitespace trimmed.
@inline(__always)
func forEachListItem(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ body: (Range<Int>) -> Void) {
    var start = range.lowerBound
    while start <= range.upperBound {
        var end = start
        while end < range.upperBound && p[end] != UInt8(ascii: ",") { end &+= 1 }
        var a = start, b = end
        while a < b && (p[a] == asciiSP || p[a] == asciiHT) { a &+= 1 }
        while b > a && (p[b - 1] == asciiSP || p[b - 1] == asciiHT) { b &-= 1 }
        if a < b { body(a..<b) }
        start = end &+ 1
    }
}

/// `1*DIGIT` of 1 to 18 digits (which cannot overflow Int64); nil for anything else. Eight digits at a
/// time: a Content-Length is read for every response.
@inline(__always)
func parseShortDecimal(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int64? {
    let count = range.count
    guard count > 0 && count <= 18 else { return nil }
    let start = UnsafeRawPointer(p.baseAddress! + range.lowerBound)
    var value: Int64 = 0
    var k = 0
    while k &+ 8 <= count {
        guard let eight = eightDigits(start.loadUnaligned(fromByteOffset: k, as: UInt64.self)) else { return nil }
        value = value &* 100_000_000 &+ Int64(eight)
        k &+= 8
    }
    while k < count {
        let digit = start.load(fromByteOffset: k, as: UInt8.self) &- 0x30
        guard digit < 10 else { return nil }
        value = value &* 10 &+ Int64(digit)
        k &+= 1
    }
    return value
}

/// The number written by eight ASCII digits loaded little-endian (the first digit in the low byte), or nil
/// when any byte is not a digit.
@inline(__always)
func eightDigits(_ chunk: UInt64) -> UInt64? {
    // A byte is a digit when its high nibble is 3 and adding 6 leaves it there (0x30-0x39; 0x3A-0x3F carry).
    let highNibbles = chunk & 0xF0F0_F0F0_F0F0_F0F0
    let carried = (chunk &+ 0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0
    guard highNibbles | (carried &>> 4) == 0x3333_3333_3333_3333 else { return nil }
    // Pairs, then fours, then all eight (each step multiplies the higher-placed half and adds).
    var v = chunk &- 0x3030_3030_3030_3030
    v = (v &* 10) &+ (v &>> 8)
    v = (((v & 0x0000_00FF_0000_00FF) &* 0x000F_4240_0000_0064)
        &+ (((v &>> 16) & 0x0000_00FF_0000_00FF) &* 0x0000_2710_0000_0001)) &>> 32
    return v & 0xFFFF_FFFF
}

/// `1*DIGIT` within Int64; nil for anything else, including overflow.
func parseDecimal(_ p: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int64? {
    guard !range.isEmpty else { return nil }
    var value: Int64 = 0
    if range.count <= 18 {
        // Eighteen digits cannot overflow Int64.
        for i in range {
            let digit = p[i] &- 0x30
            guard digit < 10 else { return nil }
            value = value &* 10 &+ Int64(digit)
        }
        return value
    }
    for i in range {
        let byte = p[i]
        guard isDigit(byte) else { return nil }
        let (times10, o1) = value.multipliedReportingOverflow(by: 10)
        let (sum, o2) = times10.addingReportingOverflow(Int64(byte &- 0x30))
        guard !o1 && !o2 else { return nil }
        value = sum
    }
    return value
}

