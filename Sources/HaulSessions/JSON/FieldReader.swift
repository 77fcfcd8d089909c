/// Why a JSON value is not the message or record it should be: which field, and what is wrong with it.
public struct SchemaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where, as a dotted path (`spec.options.connections`).
    public var field: String
    public var problem: String

    public init(field: String, _ problem: String) {
        self.field = field
        self.problem = problem
    }

    public var description: String { field.isEmpty ? problem : "\(field): \(problem)" }
}

/// Reads the fields of one JSON object strictly: each field has the expected type and range, and
/// ``finish()`` refuses any field nobody asked for — a record or message is understood entirely or not at
/// all, never half-trusted.
struct FieldReader {
    let object: JSONObject
    /// The path of this object, for errors (`""` at the top).
    let path: String
    private var read: Set<String> = []

    init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    init(_ value: JSONValue, path: String) throws(SchemaError) {
        guard case .object(let object) = value else {
            throw SchemaError(field: path, "expected an object, found \(value.kindName)")
        }
        self.init(object, path: path)
    }

    func name(_ key: String) -> String { path.isEmpty ? key : path + "." + key }

    private mutating func take(_ key: String) -> JSONValue? {
        read.insert(key)
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { object[key] != nil && object[key] != .null }

    /// Throws when the object has a field that was never read.
    func finish() throws(SchemaError) {
        for key in object.keys where !read.contains(key) {
            throw SchemaError(field: name(key), "unknown field")
        }
    }

    /// Marks `key` as understood without reading it (a field the caller checks another way).
    mutating func ignore(_ key: String) { read.insert(key) }

    mutating func value(_ key: String) throws(SchemaError) -> JSONValue {
        guard let value = take(key) else { throw SchemaError(field: name(key), "missing") }
        return value
    }

    mutating func optionalString(_ key: String, maximumBytes: Int = 16 << 10) throws(SchemaError) -> String? {
        guard let value = take(key) else { return nil }
        guard case .string(let text) = value else {
            throw SchemaError(field: name(key), "expected a string, found \(value.kindName)")
        }
        guard text.utf8.count <= maximumBytes else {
            throw SchemaError(field: name(key), "longer than \(maximumBytes) bytes")
        }
        guard !text.unicodeScalars.contains("\u{0}") else { throw SchemaError(field: name(key), "contains a NUL character") }
        return text
    }

    mutating func string(_ key: String, maximumBytes: Int = 16 << 10) throws(SchemaError) -> String {
        guard let text = try optionalString(key, maximumBytes: maximumBytes) else {
            throw SchemaError(field: name(key), "missing")
        }
        return text
    }

    mutating func optionalInteger(_ key: String, in range: ClosedRange<Int64>) throws(SchemaError) -> Int64? {
        guard let value = take(key) else { return nil }
        guard case .number(let text) = value else {
            throw SchemaError(field: name(key), "expected an integer, found \(value.kindName)")
        }
        guard let number = Int64(text) else { throw SchemaError(field: name(key), "\(text) is not a 64-bit integer") }
        guard range.contains(number) else {
            throw SchemaError(field: name(key), "\(number) is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    mutating func integer(_ key: String, in range: ClosedRange<Int64>) throws(SchemaError) -> Int64 {
        guard let number = try optionalInteger(key, in: range) else { throw SchemaError(field: name(key), "missing") }
        return number
    }

    mutating func optionalBool(_ key: String) throws(SchemaError) -> Bool? {
        guard let value = take(key) else { return nil }
        guard case .bool(let flag) = value else {
            throw SchemaError(field: name(key), "expected true or false, found \(value.kindName)")
        }
        return flag
    }

    mutating func bool(_ key: String, default fallback: Bool) throws(SchemaError) -> Bool {
        try optionalBool(key) ?? fallback
    }

    mutating func optionalArray(_ key: String, maximumCount: Int) throws(SchemaError) -> [JSONValue]? {
        guard let value = take(key) else { return nil }
        guard case .array(let items) = value else {
            throw SchemaError(field: name(key), "expected an array, found \(value.kindName)")
        }
        guard items.count <= maximumCount else {
            throw SchemaError(field: name(key), "more than \(maximumCount) items")
        }
        return items
    }

    mutating func optionalObject(_ key: String) throws(SchemaError) -> FieldReader? {
        guard let value = take(key) else { return nil }
        return try FieldReader(value, path: name(key))
    }

    mutating func object(_ key: String) throws(SchemaError) -> FieldReader {
        guard let reader = try optionalObject(key) else { throw SchemaError(field: name(key), "missing") }
        return reader
    }

    mutating func stringArray(_ key: String, maximumCount: Int, maximumBytes: Int = 16 << 10) throws(SchemaError) -> [String] {
        let items = try optionalArray(key, maximumCount: maximumCount) ?? []
        var result: [String] = []
        for (index, item) in items.enumerated() {
            guard case .string(let text) = item, text.utf8.count <= maximumBytes, !text.unicodeScalars.contains("\u{0}") else {
                throw SchemaError(field: name(key) + "[\(index)]", "expected a string of at most \(maximumBytes) bytes without NUL")
            }
            result.append(text)
        }
        return result
    }

    mutating func integerArray(_ key: String, maximumCount: Int, in range: ClosedRange<Int64>) throws(SchemaError) -> [Int64] {
        let items = try optionalArray(key, maximumCount: maximumCount) ?? []
        var result: [Int64] = []
        for (index, item) in items.enumerated() {
            guard let number = item.int64, range.contains(number) else {
                throw SchemaError(field: name(key) + "[\(index)]", "expected an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            result.append(number)
        }
        return result
    }
}
