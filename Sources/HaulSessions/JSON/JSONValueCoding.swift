// `Codable` to and from ``JSONValue``, without Foundation: a task spec is written through the request's own
// `Codable` conformance (``TaskSpec``), and read back as strictly as ``FieldReader`` reads the rest of a record.

/// Encodes an `Encodable` value as a ``JSONValue``: keys in the order the value encodes them.
enum JSONValueEncoder {
    static func encode(_ value: some Encodable) throws -> JSONValue {
        let root = EncodingNode()
        try value.encode(to: NodeEncoder(node: root, codingPath: []))
        return root.value
    }
}

/// Decodes a `Decodable` value from a ``JSONValue``, strictly: a key that the value's `init(from:)` never
/// asked for is an "unknown field", strings hold no NUL and at most `maximumStringBytes`, and every failure
/// is a ``SchemaError`` naming its field as a dotted path under `path`.
enum JSONValueDecoder {
    static let maximumStringBytes = 16 << 10

    static func decode<Value: Decodable>(_ type: Value.Type, from value: JSONValue, path: String) throws(SchemaError) -> Value {
        let reads = KeyReads()
        let decoded: Value
        do {
            decoded = try Value(from: NodeDecoder(value: value, codingPath: [], reads: reads))
        } catch let error as DecodingError {
            throw SchemaError(decoding: error, under: path)
        } catch let error as SchemaError {
            throw error
        } catch {
            throw SchemaError(field: path, "\(error)")
        }
        if let unknown = reads.firstUnread() { throw SchemaError(field: SchemaError.join(path, unknown), "unknown field") }
        return decoded
    }
}

extension SchemaError {
    /// `path.a.b[2]`.
    static func join(_ path: String, _ codingPath: [any CodingKey]) -> String {
        var text = path
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index") || key.stringValue == String(index) {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text
    }

    init(decoding error: DecodingError, under path: String) {
        switch error {
        case .typeMismatch(let type, let context):
            self.init(field: Self.join(path, context.codingPath), context.debugDescription.isEmpty ? "expected \(type)" : context.debugDescription)
        case .valueNotFound(_, let context):
            self.init(field: Self.join(path, context.codingPath), "missing")
        case .keyNotFound(let key, let context):
            self.init(field: Self.join(path, context.codingPath + [key]), "missing")
        case .dataCorrupted(let context):
            self.init(field: Self.join(path, context.codingPath), context.debugDescription)
        @unknown default:
            self.init(field: path, "\(error)")
        }
    }
}

// MARK: - Encoding

/// One value under construction; containers write into it, so that a nested container filled after it was
/// handed out still lands in its parent.
private final class EncodingNode {
    enum Content {
        case single(JSONValue)
        case object(keys: [String], nodes: [String: EncodingNode])
        case array([EncodingNode])
    }

    var content: Content = .single(.null)

    var value: JSONValue {
        switch content {
        case .single(let value): return value
        case .object(let keys, let nodes):
            var object = JSONObject()
            for key in keys { object[key] = nodes[key]!.value }
            return .object(object)
        case .array(let nodes): return .array(nodes.map(\.value))
        }
    }

    func child(forKey key: String) -> EncodingNode {
        var keys: [String] = [], nodes: [String: EncodingNode] = [:]
        if case .object(let existingKeys, let existingNodes) = content { (keys, nodes) = (existingKeys, existingNodes) }
        if let existing = nodes[key] { return existing }
        let node = EncodingNode()
        keys.append(key)
        nodes[key] = node
        content = .object(keys: keys, nodes: nodes)
        return node
    }

    func appendChild() -> EncodingNode {
        var nodes: [EncodingNode] = []
        if case .array(let existing) = content { nodes = existing }
        let node = EncodingNode()
        nodes.append(node)
        content = .array(nodes)
        return node
    }

    func makeObject() { if case .object = content {} else { content = .object(keys: [], nodes: [:]) } }
    func makeArray() { if case .array = content {} else { content = .array([]) } }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { (stringValue, self.intValue) = ("\(intValue)", intValue) }
}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeObject()
        return KeyedEncodingContainer(KeyedNodeEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedNodeEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleNodeEncoder(node: node, codingPath: codingPath) }
}

/// The scalar encodings every container shares.
private protocol ScalarEncoding {
    func put(_ value: JSONValue) throws
}

extension ScalarEncoding {
    func putNumber(_ value: some BinaryInteger) throws { try put(.int(value)) }
    func putNumber(_ value: Double) throws {
        guard value.isFinite else { throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "JSON has no \(value)")) }
        try put(.number(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"))
    }
}

private struct SingleNodeEncoder: SingleValueEncodingContainer, ScalarEncoding {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    func put(_ value: JSONValue) throws { node.content = .single(value) }

    mutating func encodeNil() throws { try put(.null) }
    mutating func encode(_ value: Bool) throws { try put(.bool(value)) }
    mutating func encode(_ value: String) throws { try put(.string(value)) }
    mutating func encode(_ value: Double) throws { try putNumber(value) }
    mutating func encode(_ value: Float) throws { try putNumber(Double(value)) }
    mutating func encode(_ value: Int) throws { try putNumber(value) }
    mutating func encode(_ value: Int8) throws { try putNumber(value) }
    mutating func encode(_ value: Int16) throws { try putNumber(value) }
    mutating func encode(_ value: Int32) throws { try putNumber(value) }
    mutating func encode(_ value: Int64) throws { try putNumber(value) }
    mutating func encode(_ value: UInt) throws { try putNumber(value) }
    mutating func encode(_ value: UInt8) throws { try putNumber(value) }
    mutating func encode(_ value: UInt16) throws { try putNumber(value) }
    mutating func encode(_ value: UInt32) throws { try putNumber(value) }
    mutating func encode(_ value: UInt64) throws { try putNumber(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try value.encode(to: NodeEncoder(node: node, codingPath: codingPath)) }
}

private struct KeyedNodeEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    private func single(_ key: Key) -> SingleNodeEncoder {
        SingleNodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }

    mutating func encodeNil(forKey key: Key) throws { try single(key).put(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try single(key).put(.bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { try single(key).put(.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try single(key).putNumber(Double(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try single(key).putNumber(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try value.encode(to: NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { NodeEncoder(node: node.child(forKey: "super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeEncoder: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int {
        if case .array(let nodes) = node.content { return nodes.count }
        return 0
    }

    private func next() -> NodeEncoder { NodeEncoder(node: node.appendChild(), codingPath: codingPath + [AnyKey(intValue: count)]) }

    mutating func encodeNil() throws { try next().singleContainer.put(.null) }
    mutating func encode(_ value: Bool) throws { try next().singleContainer.put(.bool(value)) }
    mutating func encode(_ value: String) throws { try next().singleContainer.put(.string(value)) }
    mutating func encode(_ value: Double) throws { try next().singleContainer.putNumber(value) }
    mutating func encode(_ value: Int) throws { try next().singleContainer.putNumber(value) }
    mutating func encode(_ value: Int64) throws { try next().singleContainer.putNumber(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try value.encode(to: next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        next().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { next().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { next() }
}

extension NodeEncoder {
    fileprivate var singleContainer: SingleNodeEncoder { SingleNodeEncoder(node: node, codingPath: codingPath) }
}

// MARK: - Decoding

/// The keys of every object met while decoding, and which of them the decoded types asked for.
private final class KeyReads {
    private var objects: [(path: [any CodingKey], keys: [String], read: Set<String>)] = []

    func register(_ object: JSONObject, at path: [any CodingKey]) -> Int {
        objects.append((path, object.keys, []))
        return objects.count - 1
    }

    func markRead(_ key: String, in index: Int) { objects[index].read.insert(key) }

    func firstUnread() -> [any CodingKey]? {
        for object in objects {
            if let key = object.keys.first(where: { !object.read.contains($0) }) { return object.path + [AnyKey(stringValue: key)] }
        }
        return nil
    }
}

private struct NodeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let reads: KeyReads
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else { throw mismatch([String: JSONValue].self, "an object") }
        return KeyedDecodingContainer(KeyedNodeDecoder<Key>(object: object, codingPath: codingPath, reads: reads,
                                                             index: reads.register(object, at: codingPath)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([JSONValue].self, "an array") }
        return UnkeyedNodeDecoder(items: items, codingPath: codingPath, reads: reads)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleNodeDecoder(value: value, codingPath: codingPath, reads: reads) }

    func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(value.kindName)"))
    }
}

private struct SingleNodeDecoder: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let reads: KeyReads

    private var decoder: NodeDecoder { NodeDecoder(value: value, codingPath: codingPath, reads: reads) }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw decoder.mismatch(type, "true or false") }
        return flag
    }
    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value else { throw decoder.mismatch(type, "a string") }
        guard text.utf8.count <= JSONValueDecoder.maximumStringBytes else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "longer than \(JSONValueDecoder.maximumStringBytes) bytes"))
        }
        guard !text.unicodeScalars.contains("\u{0}") else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "contains a NUL character"))
        }
        return text
    }
    func decode(_ type: Double.Type) throws -> Double {
        guard case .number(let text) = value, let number = Double(text) else { throw decoder.mismatch(type, "a number") }
        return number
    }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        guard case .number(let text) = value else { throw decoder.mismatch(type, "an integer") }
        guard let number = Integer(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(text) is not an integer of \(Integer.bitWidth) bits"))
        }
        return number
    }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
}

private struct KeyedNodeDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]
    let reads: KeyReads
    let index: Int

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool {
        reads.markRead(key.stringValue, in: index)
        return object[key.stringValue] != nil
    }

    private func single(_ key: Key) throws -> SingleNodeDecoder {
        reads.markRead(key.stringValue, in: index)
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
        }
        return SingleNodeDecoder(value: value, codingPath: codingPath + [key], reads: reads)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try single(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try single(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try single(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try single(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try single(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try single(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try single(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try single(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try single(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try single(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try single(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try single(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try single(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try single(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try single(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try single(key).decode(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let single = try single(key)
        return try NodeDecoder(value: single.value, codingPath: single.codingPath, reads: reads).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let single = try single(key)
        return try NodeDecoder(value: single.value, codingPath: single.codingPath, reads: reads).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { NodeDecoder(value: .object(object), codingPath: codingPath, reads: reads) }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        let single = try single(key)
        return NodeDecoder(value: single.value, codingPath: single.codingPath, reads: reads)
    }
}

private struct UnkeyedNodeDecoder: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    let reads: KeyReads
    var currentIndex = 0

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [JSONValue], codingPath: [any CodingKey], reads: KeyReads) {
        (self.items, self.codingPath, self.reads) = (items, codingPath, reads)
    }

    private mutating func next() throws -> NodeDecoder {
        let path = codingPath + [AnyKey(intValue: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(JSONValue.self, .init(codingPath: path, debugDescription: "the array has no more items"))
        }
        defer { currentIndex += 1 }
        return NodeDecoder(value: items[currentIndex], codingPath: path, reads: reads)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = try next()
        return try SingleNodeDecoder(value: decoder.value, codingPath: decoder.codingPath, reads: reads).decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
