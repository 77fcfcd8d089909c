/// Decodes the chunk framing of a chunked body (RFC 9112 §7.1) up to the last chunk.
///
/// Chunk data is never copied: the decoder reports which part of the caller's input is data. Chunk
/// extensions are checked against the grammar and then ignored. The trailer section that follows the last
/// chunk is left to the caller.
public struct ChunkedDecoder: Sendable {
    /// What one step of decoding found.
    public enum Step: Equatable, Sendable {
        /// The whole input was framing; more is needed.
        case needMoreInput
        /// `range` of the input is chunk data.
        case data(Range<Int>)
        /// The last chunk's line ended; the trailer section starts after `consumed` bytes.
        case lastChunk
    }

    private enum State: Sendable {
        case size, afterSize, extBeforeName, extName, extAfterName, extBeforeValue, extTokenValue
        case extQuoted, extQuotedPair, extAfterValue, sizeLF, data, dataCR, dataLF, done
    }

    private var state: State = .size
    private var size: UInt64 = 0
    private var sizeDigits = 0
    private var lineLength = 0
    private var remaining: UInt64 = 0
    private let maxLineBytes: Int

    public init(maxLineBytes: Int = 4 * 1024) {
        self.maxLineBytes = maxLineBytes
    }

    /// Whether the decoder is between chunks (nothing of a chunk is pending).
    public var isAtChunkBoundary: Bool { state == .size && sizeDigits == 0 }

    /// Bytes of the current chunk's data not yet seen.
    public var remainingInChunk: UInt64 { state == .data ? remaining : 0 }

    /// Decodes from `input`; `baseOffset` is the stream offset of `input[0]`, for errors.
    /// Returns the step and how many input bytes it consumed.
    public mutating func decode(_ input: UnsafeRawBufferPointer, baseOffset: Int) throws(HTTPParseError) -> (step: Step, consumed: Int) {
        let n = input.count
        var i = 0
        while i < n {
            if state == .data {
                let take = Int(min(UInt64(n - i), remaining))
                remaining -= UInt64(take)
                if remaining == 0 { state = .dataCR }
                return (.data(i..<(i + take)), i + take)
            }
            let b = input[i]
            let offset = baseOffset + i
            i += 1
            switch state {
            case .size, .afterSize, .extBeforeName, .extName, .extAfterName, .extBeforeValue, .extTokenValue,
                 .extQuoted, .extQuotedPair, .extAfterValue:
                lineLength += 1
                if lineLength > maxLineBytes { throw HTTPParseError(.chunkLineTooLong(limit: maxLineBytes), offset: offset) }
                try sizeLineByte(b, offset: offset)
            case .sizeLF:
                guard b == asciiLF else { throw HTTPParseError(.bareCR, offset: offset - 1) }
                lineLength = 0
                if size == 0 {
                    state = .done
                    return (.lastChunk, i)
                }
                remaining = size
                size = 0
                sizeDigits = 0
                state = .data
            case .dataCR:
                guard b == asciiCR else { throw HTTPParseError(.missingCRLFAfterChunkData(byte: b), offset: offset) }
                state = .dataLF
            case .dataLF:
                guard b == asciiLF else { throw HTTPParseError(.bareCR, offset: offset - 1) }
                state = .size
            case .data, .done:
                preconditionFailure("unreachable decoder state")
            }
        }
        return (.needMoreInput, n)
    }

    private mutating func sizeLineByte(_ b: UInt8, offset: Int) throws(HTTPParseError) {
        let isWhitespace = b == asciiSP || b == asciiHT
        let isToken = FieldSyntax.isTokenChar(b)
        func invalidExtension() -> HTTPParseError { HTTPParseError(.invalidChunkExtension(byte: b), offset: offset) }
        switch state {
        case .size:
            if let digit = hexValue(b) {
                guard size >> 60 == 0 else { throw HTTPParseError(.chunkSizeOverflow, offset: offset) }
                size = size << 4 | UInt64(digit)
                guard size <= UInt64(Int64.max) else { throw HTTPParseError(.chunkSizeOverflow, offset: offset) }
                sizeDigits += 1
            } else if sizeDigits > 0 && (isWhitespace || b == UInt8(ascii: ";")) {
                state = b == UInt8(ascii: ";") ? .extBeforeName : .afterSize
            } else if sizeDigits > 0 && b == asciiCR {
                state = .sizeLF
            } else {
                throw HTTPParseError(b == asciiLF && sizeDigits > 0 ? .bareLF : .invalidChunkSize(byte: b), offset: offset)
            }
        case .afterSize, .extAfterValue, .extAfterName:
            // BWS, then another extension, "=" (only right after a name), or the end of the line.
            if isWhitespace { return }
            if b == UInt8(ascii: ";") { state = .extBeforeName }
            else if b == asciiCR { state = .sizeLF }
            else if b == UInt8(ascii: "=") && state == .extAfterName { state = .extBeforeValue }
            else if b == asciiLF { throw HTTPParseError(.bareLF, offset: offset) }
            else { throw invalidExtension() }
        case .extBeforeName:
            if isWhitespace { return }
            guard isToken else { throw invalidExtension() }
            state = .extName
        case .extName:
            if isToken { return }
            if isWhitespace { state = .extAfterName }
            else if b == UInt8(ascii: "=") { state = .extBeforeValue }
            else if b == UInt8(ascii: ";") { state = .extBeforeName }
            else if b == asciiCR { state = .sizeLF }
            else if b == asciiLF { throw HTTPParseError(.bareLF, offset: offset) }
            else { throw invalidExtension() }
        case .extBeforeValue:
            if isWhitespace { return }
            if b == UInt8(ascii: "\"") { state = .extQuoted }
            else if isToken { state = .extTokenValue }
            else { throw invalidExtension() }
        case .extTokenValue:
            if isToken { return }
            if isWhitespace { state = .extAfterValue }
            else if b == UInt8(ascii: ";") { state = .extBeforeName }
            else if b == asciiCR { state = .sizeLF }
            else if b == asciiLF { throw HTTPParseError(.bareLF, offset: offset) }
            else { throw invalidExtension() }
        case .extQuoted:
            if b == UInt8(ascii: "\"") { state = .extAfterValue }
            else if b == UInt8(ascii: "\\") { state = .extQuotedPair }
            else if !(isWhitespace || (b >= 0x21 && b != 0x7F)) { throw invalidExtension() }
        case .extQuotedPair:
            guard isWhitespace || (b >= 0x21 && b != 0x7F) else { throw invalidExtension() }
            state = .extQuoted
        default:
            preconditionFailure("not a size-line state")
        }
    }
}

@inline(__always) func hexValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
    default: nil
    }
}
