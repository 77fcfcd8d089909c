/// The header (or trailer) fields of one message, in the order received.
///
/// The fields share one byte buffer: a value is an `ArraySlice` of it, so reading a field copies nothing.
/// Names compare ASCII case-insensitively; values are raw octets (ASCII, or obs-text read as latin-1).
public struct HTTPFields: Sendable, Equatable {
    /// Byte ranges of one field inside `storage`.
    @usableFromInline
    struct Entry: Sendable, Equatable {
        @usableFromInline var nameStart: Int32
        @usableFromInline var nameEnd: Int32
        @usableFromInline var valueStart: Int32
        @usableFromInline var valueEnd: Int32
    }

    @usableFromInline var storage: [UInt8]
    @usableFromInline var entries: [Entry]

    /// No fields.
    public init() {
        storage = []
        entries = []
    }

    /// Fields built from name/value pairs (used by tests and by request serialization).
    public init(_ pairs: [(name: String, value: String)]) {
        storage = []
        entries = []
        for (name, value) in pairs { append(name: Array(name.utf8), value: Array(value.utf8)) }
    }

    @usableFromInline
    init(storage: [UInt8], entries: [Entry]) {
        self.storage = storage
        self.entries = entries
    }

    /// Appends a field by copying its bytes.
    public mutating func append(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        let nameStart = storage.count
        storage.append(contentsOf: name)
        let valueStart = storage.count
        storage.append(contentsOf: value)
        entries.append(Entry(nameStart: Int32(nameStart), nameEnd: Int32(valueStart),
                             valueStart: Int32(valueStart), valueEnd: Int32(storage.count)))
    }

    /// The number of fields.
    public var count: Int { entries.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { entries.isEmpty }

    /// The name of field `index`, as received.
    public func name(at index: Int) -> ArraySlice<UInt8> {
        let e = entries[index]
        return storage[Int(e.nameStart)..<Int(e.nameEnd)]
    }

    /// The value of field `index`, without leading or trailing whitespace.
    public func value(at index: Int) -> ArraySlice<UInt8> {
        let e = entries[index]
        return storage[Int(e.valueStart)..<Int(e.valueEnd)]
    }

    /// The value of the first field named `name` (ASCII case-insensitive), if any.
    public func first(_ name: String) -> ArraySlice<UInt8>? {
        var name = name
        return name.withUTF8 { key in
            for i in entries.indices where nameEquals(i, key) { return value(at: i) }
            return nil
        }
    }

    /// The values of every field named `name`, in order.
    public func all(_ name: String) -> [ArraySlice<UInt8>] {
        var name = name
        return name.withUTF8 { key in entries.indices.filter { nameEquals($0, key) }.map { value(at: $0) } }
    }

    /// The first value of `name` as a `String` (latin-1 for octets above 0x7F).
    public func firstString(_ name: String) -> String? {
        first(name).map(latin1String)
    }

    /// Whether any field named `name` exists.
    public func contains(_ name: String) -> Bool { first(name) != nil }

    /// Every field as a (name, value) pair of latin-1 strings, in order.
    public var pairs: [(name: String, value: String)] {
        entries.indices.map { (latin1String(name(at: $0)), latin1String(value(at: $0))) }
    }

    @inline(__always)
    func nameEquals(_ index: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let e = entries[index]
        let length = Int(e.nameEnd - e.nameStart)
        guard length == key.count else { return false }
        let start = Int(e.nameStart)
        for j in 0..<length where asciiLowercase(storage[start + j]) != asciiLowercase(key[j]) { return false }
        return true
    }

    public static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for i in 0..<lhs.count where lhs.name(at: i) != rhs.name(at: i) || lhs.value(at: i) != rhs.value(at: i) {
            return false
        }
        return true
    }
}

/// Lowercases an ASCII letter; leaves every other byte alone.
@inline(__always)
public func asciiLowercase(_ byte: UInt8) -> UInt8 {
    byte &- 0x41 < 26 ? byte | 0x20 : byte
}

/// Decodes bytes as ISO-8859-1, which maps every octet to one Unicode scalar and never fails.
public func latin1String(_ bytes: some Sequence<UInt8>) -> String {
    var result = ""
    for byte in bytes { result.unicodeScalars.append(Unicode.Scalar(byte)) }
    return result
}

/// Whether two byte sequences are equal ignoring ASCII case.
public func asciiCaseInsensitiveEquals(_ bytes: some Collection<UInt8>, _ string: String) -> Bool {
    let other = string.utf8
    guard bytes.count == other.count else { return false }
    return zip(bytes, other).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
}
