/// An entity tag is encoded as one string, its field text (`"xyz"` or `W/"xyz"`) with each byte as the
/// character of the same number (latin-1), so that obs-text bytes survive exactly; decoding parses it as an
/// `ETag` field and rejects anything that is not exactly one entity tag.
extension EntityTag: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            guard scalar.value <= 0xFF else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "an entity tag has a character beyond latin-1: \(text)")
            }
            bytes.append(UInt8(scalar.value))
        }
        guard let tag = EntityTag(bytes[...]) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an entity tag: \(text)")
        }
        self = tag
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
