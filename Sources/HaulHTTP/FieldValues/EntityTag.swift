/// An entity tag from an `ETag` field (RFC 9110 §8.8.3): strong `"xyz"` or weak `W/"xyz"`.
///
/// The opaque tag is kept as raw bytes because it may contain obs-text, and `If-Range`
/// must echo it byte for byte.
public struct EntityTag: Sendable, Hashable, CustomStringConvertible {
    /// Whether the tag was marked weak (`W/`): weak tags never match in `If-Range`.
    public let isWeak: Bool
    /// The bytes between the quotes, exactly as received.
    public let opaqueTag: [UInt8]

    /// Parses an `ETag` field value; nil when it is not exactly one entity tag.
    public init?(_ value: ArraySlice<UInt8>) {
        var scanner = FieldValueScanner(value)
        scanner.skipWhitespace()
        // `W/` is case-sensitive (`%s"W/"` in RFC 9110).
        let isWeak = scanner.consume(UInt8(ascii: "W"))
        if isWeak, !scanner.consume(UInt8(ascii: "/")) { return nil }
        guard scanner.consume(UInt8(ascii: "\"")) else { return nil }
        let opaque = scanner.consume(while: Self.isEntityTagChar)
        guard scanner.consume(UInt8(ascii: "\"")) else { return nil }
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { return nil }
        self.isWeak = isWeak
        self.opaqueTag = Array(opaque)
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// An entity tag built from its parts; nil when `opaqueTag` holds a byte outside `etagc`.
    public init?(opaqueTag: some Collection<UInt8>, isWeak: Bool) {
        guard opaqueTag.allSatisfy(Self.isEntityTagChar) else { return nil }
        self.isWeak = isWeak
        self.opaqueTag = Array(opaqueTag)
    }

    /// `etagc = %x21 / %x23-7E / obs-text`: visible characters except the double quote.
    static func isEntityTagChar(_ byte: UInt8) -> Bool {
        byte == 0x21 || (byte >= 0x23 && byte != 0x7F)
    }

    /// The field text, `"xyz"` or `W/"xyz"`, byte for byte.
    public var fieldValue: [UInt8] {
        var text: [UInt8] = isWeak ? Array("W/".utf8) : []
        text.reserveCapacity(opaqueTag.count + 4)
        text.append(UInt8(ascii: "\""))
        text.append(contentsOf: opaqueTag)
        text.append(UInt8(ascii: "\""))
        return text
    }

    /// The value to send in `If-Range`, or nil for a weak tag, which RFC 9110 §13.1.5 forbids there.
    public var ifRangeValue: [UInt8]? { isWeak ? nil : fieldValue }

    /// Strong comparison (RFC 9110 §8.8.3.2): both tags strong and their opaque tags identical.
    ///
    /// This is the comparison that decides whether two range responses belong to the same representation.
    public func strongMatches(_ other: EntityTag) -> Bool {
        !isWeak && !other.isWeak && opaqueTag == other.opaqueTag
    }

    /// Weak comparison (RFC 9110 §8.8.3.2): opaque tags identical, weakness ignored.
    public func weakMatches(_ other: EntityTag) -> Bool {
        opaqueTag == other.opaqueTag
    }

    /// The field text decoded as latin-1, for logs.
    public var description: String { latin1String(fieldValue) }
}
