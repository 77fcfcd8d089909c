/// Why bytes are not the JSON text expected: what is wrong and at which byte offset.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var problem: String
    public var offset: Int

    public init(_ problem: String, offset: Int) {
        self.problem = problem
        self.offset = offset
    }

    public var description: String { "invalid JSON: \(problem) at byte offset \(offset)" }
}

/// A strict RFC 8259 parser for one JSON value, written for untrusted input.
///
/// Strict: no comments, no trailing commas, no leading zeros, no raw control characters in strings, no lone
/// surrogates, valid UTF-8 only, no duplicate keys, nothing but whitespace after the value. Bounded: nesting
/// is limited to ``maximumDepth`` (so hostile input cannot exhaust the stack) and every string or number is
/// at most as long as the input; the caller bounds the input (the protocol's lines, the log's records).
public enum JSONParser {
    /// Deepest nesting of arrays and objects accepted.
    public static let maximumDepth = 32

    /// Parses `bytes` as exactly one JSON value (surrounding whitespace allowed).
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let array = Array(bytes)
        var parser = Parser(bytes: array)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.position == array.count else {
            throw JSONParseError("unexpected \(Parser.describe(array[parser.position])) after the value", offset: parser.position)
        }
        return value
    }

    /// Parses `text` as exactly one JSON value.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses `bytes` and requires an object.
    public static func parseObject(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONObject {
        let value = try parse(bytes)
        guard case .object(let object) = value else {
            throw JSONParseError("expected an object, found \(value.kindName)", offset: 0)
        }
        return object
    }
}

private struct Parser {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let digits = String(byte, radix: 16, uppercase: true)
        return "byte 0x" + (digits.count == 1 ? "0" + digits : digits)
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    func fail(_ problem: String) -> JSONParseError { JSONParseError(problem, offset: position) }

    func unexpected(_ wanted: String) -> JSONParseError {
        guard position < bytes.count else { return fail("input ended, expected \(wanted)") }
        return fail("unexpected \(Self.describe(bytes[position])), expected \(wanted)")
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard position < bytes.count else { throw unexpected("a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw unexpected("a value")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        guard bytes.count - position >= count, bytes[position..<position + count].elementsEqual(expected) else {
            throw fail("invalid literal, expected \(word)")
        }
        position += count
    }

    mutating func object(depth: Int) throws(JSONParseError) -> JSONObject {
        guard depth <= JSONParser.maximumDepth else { throw fail("nesting deeper than \(JSONParser.maximumDepth)") }
        position += 1  // {
        var result = JSONObject()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return result
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw unexpected("a key string") }
            let keyOffset = position
            let key = try string()
            guard result[key] == nil else {
                throw JSONParseError("duplicate key \"\(key)\"", offset: keyOffset)
            }
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw unexpected("':'") }
            position += 1
            skipWhitespace()
            result[key] = try value(depth: depth)
            skipWhitespace()
            guard position < bytes.count else { throw unexpected("',' or '}'") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "}") {
                position += 1
                return result
            }
            throw unexpected("',' or '}'")
        }
    }

    mutating func array(depth: Int) throws(JSONParseError) -> [JSONValue] {
        guard depth <= JSONParser.maximumDepth else { throw fail("nesting deeper than \(JSONParser.maximumDepth)") }
        position += 1  // [
        var result: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return result
        }
        while true {
            skipWhitespace()
            result.append(try value(depth: depth))
            skipWhitespace()
            guard position < bytes.count else { throw unexpected("',' or ']'") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            if bytes[position] == UInt8(ascii: "]") {
                position += 1
                return result
            }
            throw unexpected("',' or ']'")
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, returned as its text.
    mutating func number() throws(JSONParseError) -> String {
        let start = position
        func isDigit(_ index: Int) -> Bool {
            index < bytes.count && bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9")
        }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard isDigit(position) else { throw unexpected("a digit") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
            if isDigit(position) { throw fail("leading zero in a number") }
        } else {
            while isDigit(position) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard isDigit(position) else { throw unexpected("a digit after '.'") }
            while isDigit(position) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard isDigit(position) else { throw unexpected("a digit in the exponent") }
            while isDigit(position) { position += 1 }
        }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    /// A string literal; the opening quote is at `position`.
    mutating func string() throws(JSONParseError) -> String {
        position += 1  // "
        var scalars = String.UnicodeScalarView()
        var runStart = position
        func flushRun(_ end: Int) throws(JSONParseError) {
            guard end > runStart else { return }
            guard let text = String(validating: bytes[runStart..<end], as: UTF8.self) else {
                throw JSONParseError("invalid UTF-8 in a string", offset: runStart)
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard position < bytes.count else { throw fail("input ended inside a string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try flushRun(position)
                position += 1
                return String(scalars)
            }
            if byte < 0x20 { throw fail("raw control character \(Self.describe(byte)) in a string") }
            if byte != UInt8(ascii: "\\") {
                position += 1
                continue
            }
            try flushRun(position)
            let escapeOffset = position
            position += 1
            guard position < bytes.count else { throw fail("input ended inside an escape") }
            let escaped = bytes[position]
            position += 1
            switch escaped {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                let unit = try hex4()
                if unit >= 0xD800 && unit < 0xDC00 {
                    guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"),
                          bytes[position + 1] == UInt8(ascii: "u")
                    else { throw JSONParseError("lone high surrogate", offset: escapeOffset) }
                    position += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else {
                        throw JSONParseError("high surrogate without a low one", offset: escapeOffset)
                    }
                    let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                    scalars.append(Unicode.Scalar(value)!)
                } else if unit >= 0xDC00 && unit < 0xE000 {
                    throw JSONParseError("lone low surrogate", offset: escapeOffset)
                } else {
                    scalars.append(Unicode.Scalar(unit)!)
                }
            default:
                throw JSONParseError("invalid escape \\\(Self.describe(escaped))", offset: escapeOffset)
            }
            runStart = position
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt16 {
        guard bytes.count - position >= 4 else { throw fail("input ended inside a \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("invalid hex digit \(Self.describe(byte)) in a \\u escape")
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }
}
