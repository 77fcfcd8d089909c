/// An `Accept-Ranges` field value (RFC 9110 §14.3): the range units a server supports.
public struct AcceptRanges: Sendable, Hashable {
    /// The listed range units, lowercased, in order (range units are case-insensitive).
    public let units: [String]

    /// Parses a comma-separated list of tokens; nil when an element is not a token or the list is empty.
    public init?(_ value: ArraySlice<UInt8>) {
        guard let units = FieldValueScanner.lowercasedTokenList(value), !units.isEmpty else { return nil }
        self.units = units
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// Whether byte ranges are accepted.
    ///
    /// Absence of the field does not mean ranges are refused (RFC 9110 §14.3), so callers should still try.
    public var acceptsBytes: Bool { units.contains("bytes") }

    /// Whether the server said `none`: range requests will be ignored, so segmenting is pointless.
    public var acceptsNone: Bool { units.contains("none") && !acceptsBytes }
}
