/// A date is encoded as its whole seconds since 1970-01-01 UTC (the resolution HTTP dates have), which
/// every decoder reads back exactly, whatever the year.
extension HTTPDate: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(secondsSinceEpoch: try decoder.singleValueContainer().decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(secondsSinceEpoch)
    }
}
