/// A JSON value (RFC 8259), as the session log's payloads and the daemon protocol's lines carry them.
///
/// Numbers keep their literal text (validated against the grammar), so an integer read back is exactly the
/// integer written, whatever its size; ``int64`` refuses a fraction or an exponent rather than round.
/// Objects keep their keys in order and never hold a key twice (the parser refuses duplicates), so the same
/// value always serializes to the same bytes.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number literal, e.g. `-12`, `3.5`, `1e9`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// An integer.
    public static func int(_ value: some BinaryInteger) -> JSONValue { .number(String(value)) }

    /// The value as an integer, if it is a number without fraction or exponent that fits in 64 bits.
    public var int64: Int64? {
        guard case .number(let text) = self else { return nil }
        return Int64(text)
    }

    public var string: String? {
        guard case .string(let value) = self else { return nil }
        return value
    }

    public var bool: Bool? {
        guard case .bool(let value) = self else { return nil }
        return value
    }

    public var object: JSONObject? {
        guard case .object(let value) = self else { return nil }
        return value
    }

    public var array: [JSONValue]? {
        guard case .array(let value) = self else { return nil }
        return value
    }

    public var isNull: Bool { self == .null }

    /// What kind of value this is, for error messages.
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON object: keys in insertion order, each at most once.
public struct JSONObject: Sendable, Hashable {
    public private(set) var keys: [String] = []
    private var values: [String: JSONValue] = [:]

    public init() {}

    /// An object with these entries in this order; a later duplicate key replaces the earlier value.
    public init(_ entries: KeyValuePairs<String, JSONValue>) {
        for (key, value) in entries { self[key] = value }
    }

    public subscript(key: String) -> JSONValue? {
        get { values[key] }
        set {
            if let newValue {
                if values.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if values.removeValue(forKey: key) != nil {
                keys.removeAll { $0 == key }
            }
        }
    }

    public var count: Int { keys.count }

    /// The entries in order.
    public var entries: [(key: String, value: JSONValue)] { keys.map { ($0, values[$0]!) } }
}

extension JSONValue {
    /// The value as compact JSON text on one line: no spaces, keys in order, strings escaped so that the
    /// text never contains a raw control character, line separator or invalid UTF-8.
    public var serialized: String {
        var out = ""
        JSONSerializer.write(self, into: &out)
        return out
    }
}

package enum JSONSerializer {
    static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): quote(text, into: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        case .object(let object):
            out += "{"
            for (index, entry) in object.entries.enumerated() {
                if index > 0 { out += "," }
                quote(entry.key, into: &out)
                out += ":"
                write(entry.value, into: &out)
            }
            out += "}"
        }
    }

    /// `"text"` escaped as JSON.
    static func quote(_ text: String, into out: inout String) {
        out += quoted(text)
    }

    /// `value` as a JSON string literal: `"` and `\` escaped, control characters as `\n`, `\t`, ... or
    /// `\u00XX`, U+2028 and U+2029 escaped too (they end lines in JavaScript), everything else as is. One
    /// writer for all of Haul's JSON: the CLI's `JSONObjectWriter` calls it too.
    package static func quoted(_ value: String) -> String {
        var result = "\""
        result.unicodeScalars.reserveCapacity(value.unicodeScalars.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\u{08}": result += "\\b"
            case "\u{0C}": result += "\\f"
            case "\u{2028}": result += "\\u2028"
            case "\u{2029}": result += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = "0123456789abcdef".unicodeScalars.map { $0 }
                    result += "\\u00"
                    result.unicodeScalars.append(hex[Int(scalar.value >> 4)])
                    result.unicodeScalars.append(hex[Int(scalar.value & 0xF)])
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result + "\""
    }

}
