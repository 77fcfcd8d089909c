import HaulSessions

/// Builds one JSON object as text, field by field, in the order the fields are added.
///
/// Hand-written (no Foundation): the CLI only ever writes flat objects of strings, integers, decimals,
/// booleans and nulls, and doing it here keeps the output byte-for-byte predictable (field order, number
/// format) for scripts and tests.
public struct JSONObjectWriter: Sendable {
    private var text = "{"
    private var isEmpty = true

    public init() {}

    /// Adds `"key":"value"`, escaped per RFC 8259.
    public mutating func add(_ key: String, _ value: String) {
        addRaw(key, Self.quoted(value))
    }

    /// Adds `"key":"value"`, or `"key":null` when `value` is nil.
    public mutating func add(_ key: String, _ value: String?) {
        addRaw(key, value.map(Self.quoted) ?? "null")
    }

    /// Adds an integer, or null.
    public mutating func add(_ key: String, _ value: Int64?) {
        addRaw(key, value.map { String($0) } ?? "null")
    }

    /// Adds an integer.
    public mutating func add(_ key: String, _ value: Int) {
        addRaw(key, String(value))
    }

    /// Adds a decimal with `fractionDigits` digits, or null when `value` is nil, NaN or infinite (JSON has
    /// no way to write those).
    public mutating func add(_ key: String, _ value: Double?, fractionDigits: Int) {
        guard let value, value.isFinite else { return addRaw(key, "null") }
        addRaw(key, UnitFormatting.fixedPoint(value, fractionDigits: fractionDigits))
    }

    /// Adds `true` or `false`.
    public mutating func add(_ key: String, _ value: Bool) {
        addRaw(key, value ? "true" : "false")
    }

    /// Adds an already-encoded JSON value.
    mutating func addRaw(_ key: String, _ json: String) {
        if !isEmpty { text += "," }
        isEmpty = false
        text += Self.quoted(key) + ":" + json
    }

    /// The finished object, `{...}`, on one line.
    public var json: String { text + "}" }

    /// `value` as a JSON string literal: `"` and `\` escaped, control characters as `\n`, `\t`, ... or
    /// `\u00XX`, U+2028 and U+2029 escaped too (they end lines in JavaScript), everything else as is.
    ///
    /// A Swift `String` is always valid Unicode, so the output is valid UTF-8: a file name with bytes that
    /// are not UTF-8 has had them replaced by U+FFFD before it became a `String`.
    public static func quoted(_ value: String) -> String {
        // One writer for all of Haul's JSON: the session log's and protocol's (HaulSessions) and the CLI's.
        JSONSerializer.quoted(value)
    }
}
