/// A `Content-Encoding` field value (RFC 9110 §8.4): the content codings applied to a representation, in
/// the order they were applied.
///
/// A range of a content-coded representation is a range of its *coded* bytes (RFC 9110 §14.1.1), and a
/// server that chooses a coding per response (it may: a request without `Accept-Encoding` states no
/// preference, §12.5.3) answers each range in its own coding, so a downloader must know whether one applies.
public struct ContentEncoding: Sendable, Hashable {
    /// The codings, lowercased (coding names are case-insensitive), in order, `identity` included when sent.
    public let codings: [String]

    /// Parses a comma-separated list of tokens; nil when an element is not a token. An empty list (an
    /// empty value) names no coding.
    public init?(_ value: ArraySlice<UInt8>) {
        guard let codings = FieldValueScanner.lowercasedTokenList(value) else { return nil }
        self.codings = codings
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        self.init(ArraySlice(value.utf8))
    }

    /// The codings other than `identity` ("no coding"): empty when the bytes are the representation's own.
    public var appliedCodings: [String] { codings.filter { $0 != "identity" } }
}
