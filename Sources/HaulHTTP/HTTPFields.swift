/// The header (or trailer) fields of one message, in the order received.
///
/// Everything lives in one byte array: the section's bytes, then (from `entriesOffset`, 16-byte aligned) one
/// `Entry` of byte ranges per field; bytes past the entries are unused. A value is an `ArraySlice` of that
/// array, so reading a field copies nothing, and a parsed head holds a single reference: handing it out and
/// dropping it costs one retain/release pair, and the parser overwrites the same array for the next head
/// when nobody kept the last (copy-on-write otherwise).
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

    /// The bytes the entries point into, then the entries themselves.
    @usableFromInline var storage: [UInt8]
    /// Where the entries start in `storage` (a multiple of 16).
    @usableFromInline var entriesOffset: Int32
    /// The number of entries.
    @usableFromInline var entryCount: Int32

    /// No fields.
    public init() {
        storage = []
        entriesOffset = 0
        entryCount = 0
    }

    /// Fields built from name/value pairs (used by tests and by request serialization).
    public init(_ pairs: [(name: String, value: String)]) {
        storage = []
        entriesOffset = 0
        entryCount = 0
        for (name, value) in pairs { append(name: Array(name.utf8), value: Array(value.utf8)) }
    }

    /// Fields over `storage`, whose `count` entries start at `entriesOffset` (16-byte aligned).
    @usableFromInline
    init(storage: [UInt8], entriesOffset: Int, count: Int) {
        self.storage = storage
        self.entriesOffset = Int32(truncatingIfNeeded: entriesOffset)
        self.entryCount = Int32(truncatingIfNeeded: count)
    }

    /// Where entries would start after `byteCount` bytes: the next multiple of 16, so they load aligned.
    @inline(__always)
    static func entriesOffset(afterBytes byteCount: Int) -> Int { (byteCount &+ 15) & ~15 }

    /// Appends a field by copying its bytes (the entries move up past them).
    public mutating func append(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        let oldOffset = Int(entriesOffset)
        let oldCount = count
        let used = oldOffset + oldCount * MemoryLayout<Entry>.stride
        if storage.count > used { storage.removeSubrange(used...) }
        let nameStart = oldOffset, valueStart = nameStart + name.count, valueEnd = valueStart + value.count
        let newOffset = Self.entriesOffset(afterBytes: valueEnd)
        storage.append(contentsOf: repeatElement(0, count: newOffset - oldOffset + MemoryLayout<Entry>.stride))
        storage.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress!
            (base + newOffset).copyMemory(from: base + oldOffset, byteCount: oldCount * MemoryLayout<Entry>.stride)
            var k = nameStart
            for byte in name { raw[k] = byte; k += 1 }
            for byte in value { raw[k] = byte; k += 1 }
            for pad in k..<newOffset { raw[pad] = 0 }
            (base + newOffset + oldCount * MemoryLayout<Entry>.stride).storeBytes(
                of: Entry(nameStart: Int32(nameStart), nameEnd: Int32(valueStart),
                          valueStart: Int32(valueStart), valueEnd: Int32(valueEnd)), as: Entry.self)
        }
        entriesOffset = Int32(newOffset)
        entryCount += 1
    }

    /// The number of fields.
    public var count: Int { Int(entryCount) }

    /// Whether there are no fields.
    public var isEmpty: Bool { entryCount == 0 }

    @inline(__always)
    func entry(_ index: Int) -> Entry {
        precondition(index >= 0 && index < count, "HTTPFields index out of range")
        return storage.withUnsafeBytes { $0.load(fromByteOffset: Int(entriesOffset) &+ index &<< 4, as: Entry.self) }
    }

    /// The name of field `index`, as received.
    public func name(at index: Int) -> ArraySlice<UInt8> {
        let e = entry(index)
        return storage[Int(e.nameStart)..<Int(e.nameEnd)]
    }

    /// The value of field `index`, without leading or trailing whitespace.
    public func value(at index: Int) -> ArraySlice<UInt8> {
        let e = entry(index)
        return storage[Int(e.valueStart)..<Int(e.valueEnd)]
    }

    /// The value of the first field named `name` (ASCII case-insensitive), if any.
    public func first(_ name: String) -> ArraySlice<UInt8>? {
        firstIndex(of: name).map(value(at:))
    }

    /// The index of the first field named `name`. The entries are read in place, names of another length
    /// skipped unread: the engine asks for several fields of every response head.
    func firstIndex(of name: String) -> Int? {
        guard entryCount > 0 else { return nil }
        var name = name
        return name.withUTF8 { key in
            storage.withUnsafeBytes { raw -> Int? in
                let base = raw.baseAddress!
                let entries = base + Int(entriesOffset)
                for i in 0..<Int(entryCount) {
                    let e = entries.load(fromByteOffset: i &<< 4, as: Entry.self)
                    guard Int(e.nameEnd &- e.nameStart) == key.count else { continue }
                    let start = base + Int(e.nameStart)
                    var j = 0
                    while j < key.count,
                          asciiLowercase(start.load(fromByteOffset: j, as: UInt8.self)) == asciiLowercase(key[j]) {
                        j &+= 1
                    }
                    if j == key.count { return i }
                }
                return nil
            }
        }
    }

    /// Calls `body` with each field whose name is one of `names` (ASCII case-insensitive), in order: the
    /// field's index and the position of its name in `names`. One pass over the fields finds every field a
    /// caller reads, where a lookup per name goes over them all each time (a response head is read for six).
    public func forEachField(named names: FieldNameSet, _ body: (_ index: Int, _ name: Int) -> Void) {
        guard entryCount > 0 else { return }
        storage.withUnsafeBytes { raw in
            names.bytes.withUnsafeBufferPointer { keys in
                let base = raw.baseAddress!
                let entries = base + Int(entriesOffset)
                for index in 0..<Int(entryCount) {
                    let e = entries.load(fromByteOffset: index &<< 4, as: Entry.self)
                    let length = Int(e.nameEnd &- e.nameStart)
                    // Most fields have a length no name in the set has: one table read skips them.
                    guard length < FieldNameSet.lengthLimit else { continue }
                    var candidate = names.firstOfLength[length]
                    let start = base + Int(e.nameStart)
                    while candidate >= 0 {
                        let key = keys.baseAddress! + names.starts[candidate]
                        var j = 0
                        while j < length, asciiLowercase(start.load(fromByteOffset: j, as: UInt8.self)) == key[j] {
                            j &+= 1
                        }
                        if j == length {
                            body(index, candidate)
                            break
                        }
                        candidate = names.nextOfLength[candidate]
                    }
                }
            }
        }
    }

    /// The values of every field named `name`, in order.
    public func all(_ name: String) -> [ArraySlice<UInt8>] {
        var name = name
        // One array, the answer: filtering the indices first made another per call (asked of every response).
        return name.withUTF8 { key in
            var values: [ArraySlice<UInt8>] = []
            for index in 0..<count where nameEquals(index, key) { values.append(value(at: index)) }
            return values
        }
    }

    /// The first value of `name` as a `String` (latin-1 for octets above 0x7F).
    public func firstString(_ name: String) -> String? {
        first(name).map(latin1String)
    }

    /// Whether any field named `name` exists.
    public func contains(_ name: String) -> Bool { firstIndex(of: name) != nil }

    /// Every field as a (name, value) pair of latin-1 strings, in order.
    public var pairs: [(name: String, value: String)] {
        (0..<count).map { (latin1String(name(at: $0)), latin1String(value(at: $0))) }
    }

    @inline(__always)
    func nameEquals(_ index: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let e = entry(index)
        let length = Int(e.nameEnd - e.nameStart)
        guard length == key.count else { return false }
        let start = Int(e.nameStart)
        return storage.withUnsafeBufferPointer { bytes in
            for j in 0..<length where asciiLowercase(bytes[start + j]) != asciiLowercase(key[j]) { return false }
            return true
        }
    }

    public static func == (lhs: HTTPFields, rhs: HTTPFields) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for i in 0..<lhs.count where lhs.name(at: i) != rhs.name(at: i) || lhs.value(at: i) != rhs.value(at: i) {
            return false
        }
        return true
    }
}

/// Field names looked up together (``HTTPFields/forEachField(named:_:)``), each given in lowercase, kept
/// so that a field name is matched against the names of its length only.
public struct FieldNameSet: Sendable {
    /// Names are shorter than this (every field a client reads is).
    static let lengthLimit = 64
    /// The names' bytes, one after another.
    let bytes: [UInt8]
    /// Where each name starts in `bytes`.
    let starts: [Int]
    /// For each length below `lengthLimit`, the first name of that length (-1 when none).
    let firstOfLength: [Int]
    /// The next name of the same length after each (-1 when none).
    let nextOfLength: [Int]

    /// The set of `names`, which must be lowercase ASCII, shorter than 64 bytes (a field is reported with the
    /// first that equals its name).
    public init(_ names: [StaticString]) {
        var bytes: [UInt8] = []
        var starts: [Int] = []
        var firstOfLength = [Int](repeating: -1, count: Self.lengthLimit)
        var nextOfLength = [Int](repeating: -1, count: names.count)
        var lastOfLength = [Int](repeating: -1, count: Self.lengthLimit)
        for (position, name) in names.enumerated() {
            precondition(name.hasPointerRepresentation && name.isASCII, "field names are ASCII text")
            let length = name.utf8CodeUnitCount
            precondition(length > 0 && length < Self.lengthLimit, "field names are 1 to 63 bytes long")
            name.withUTF8Buffer { text in
                precondition(text.allSatisfy { asciiLowercase($0) == $0 }, "field names are given in lowercase")
                starts.append(bytes.count)
                bytes.append(contentsOf: text)
            }
            if lastOfLength[length] < 0 { firstOfLength[length] = position } else { nextOfLength[lastOfLength[length]] = position }
            lastOfLength[length] = position
        }
        self.bytes = bytes
        self.starts = starts
        self.firstOfLength = firstOfLength
        self.nextOfLength = nextOfLength
    }
}

/// Lowercases an ASCII letter; leaves every other byte alone.
@inline(__always)
public func asciiLowercase(_ byte: UInt8) -> UInt8 {
    byte &- 0x41 < 26 ? byte | 0x20 : byte
}

/// Decodes bytes as ISO-8859-1, which maps every octet to one Unicode scalar and never fails.
///
/// Inlinable: a call from another module is specialized for its bytes (a field's slice, mostly) instead of
/// going through witness tables, which cost more than the decoding for every field read as text.
@inlinable
public func latin1String(_ bytes: some Sequence<UInt8>) -> String {
    // ASCII (every field of nearly every response) is the same text in UTF-8: one copy, instead of a scalar
    // appended at a time, which made converting a response's fields most of a small download's CPU.
    let ascii = bytes.withContiguousStorageIfAvailable { buffer -> String? in
        var combined: UInt8 = 0
        for byte in buffer { combined |= byte }
        return combined < 0x80 ? String(decoding: buffer, as: UTF8.self) : nil
    }
    if let ascii = ascii ?? nil { return ascii }
    var result = ""
    for byte in bytes { result.unicodeScalars.append(Unicode.Scalar(byte)) }
    return result
}

/// Whether two byte sequences are equal ignoring ASCII case.
public func asciiCaseInsensitiveEquals(_ bytes: some Collection<UInt8>, _ string: String) -> Bool {
    let other = string.utf8
    guard bytes.count == other.count else { return false }
    // Both sides contiguous (a field's bytes, a native string): compared in place, which is most calls (the
    // date parser asks for day and month names this way, every response) and far cheaper than the zip.
    let compared = bytes.withContiguousStorageIfAvailable { left in
        other.withContiguousStorageIfAvailable { right in
            for index in 0..<left.count where asciiLowercase(left[index]) != asciiLowercase(right[index]) { return false }
            return true
        }
    }
    if let compared = compared ?? nil { return compared }
    return zip(bytes, other).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
}
