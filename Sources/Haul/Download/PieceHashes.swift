/// The expected digest of every fixed-size piece of a file (Metalink's `<pieces length=… type=…>`, RFC 5854
/// §4.2.9): ``DownloadRequest/pieceHashes``.
///
/// Piece `i` is bytes `i × length ..< min((i + 1) × length, size)`; the last piece may be shorter. Each piece
/// is hashed once its bytes are written, before the journal counts it as done; a piece that fails is fetched
/// again (from another mirror when one is left, dropping those that served it), so a mirror that serves wrong
/// bytes costs only its pieces, not the whole file.
public struct PieceHashes: Sendable, Hashable, CustomStringConvertible {
    /// Bytes per piece, at least 1.
    public let length: Int64
    /// The digest function of every piece.
    public let algorithm: DigestAlgorithm
    /// One lowercase hex digest per piece, in order; at least one.
    public let digests: [String]

    /// Checks and keeps the hashes: a length of at least 1, at least one digest, each of the algorithm's
    /// length in hex digits (any case). Nothing wrong is quietly dropped: a list one digest short must not
    /// leave a piece unchecked.
    public init(length: Int64, algorithm: DigestAlgorithm, digests: [String]) throws(PieceHashesError) {
        guard length >= 1 else { throw PieceHashesError("a piece length of \(length) bytes; at least 1") }
        guard !digests.isEmpty else { throw PieceHashesError("no piece digest") }
        var lowered: [String] = []
        lowered.reserveCapacity(digests.count)
        for (index, digest) in digests.enumerated() {
            guard digest.utf8.count == algorithm.byteCount * 2, digest.utf8.allSatisfy({ Self.isHexDigit($0) }) else {
                throw PieceHashesError("piece \(index): a \(algorithm.rawValue) digest is \(algorithm.byteCount * 2) hex digits, not \"\(String(digest.prefix(140)))\"")
            }
            lowered.append(digest.lowercased())
        }
        self.length = length
        self.algorithm = algorithm
        self.digests = lowered
    }

    /// How many pieces a file of `size` bytes has with this piece length.
    public func pieceCount(forSize size: Int64) -> Int64 {
        size == 0 ? 0 : (size - 1) / length + 1
    }

    /// Throws unless the digests cover exactly a file of `size` bytes (one per piece). A file of 0 bytes has
    /// no piece; RFC 5854 has no way to say so, so any list is refused for it.
    public func check(size: Int64) throws(PieceHashesError) {
        let expected = pieceCount(forSize: size)
        guard Int64(digests.count) == expected else {
            throw PieceHashesError("\(digests.count) piece digests of \(length) bytes cover \(coveredSizes), not a file of \(size) bytes (\(expected) pieces)")
        }
    }

    /// The sizes of file these digests cover, as words (`1 to 1048576 bytes`).
    var coveredSizes: String {
        let count = Int64(digests.count)
        let (low, lowOverflow) = (count - 1).multipliedReportingOverflow(by: length)
        let (high, highOverflow) = count.multipliedReportingOverflow(by: length)
        guard !lowOverflow, !highOverflow else { return "more bytes than a file can have" }
        return "\(low + 1) to \(high) bytes"
    }

    /// Bytes of piece `index` of a file of `size` bytes.
    func range(of index: Int, size: Int64) -> Range<Int64> {
        let start = Int64(index) * length
        return start..<min(start + length, size)
    }

    public var description: String { "\(digests.count) \(algorithm.rawValue) pieces of \(length) bytes" }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte | 0x20)
    }
}

/// Why piece hashes cannot be used as given.
public struct PieceHashesError: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String

    init(_ reason: String) { self.reason = reason }

    public var description: String { "piece hashes: \(reason)" }
}

/// `{"length": 1048576, "algorithm": "sha256", "digests": ["9f86…", …]}`; checked as
/// ``PieceHashes/init(length:algorithm:digests:)`` checks (a `DecodingError` otherwise).
extension PieceHashes: Codable {
    enum CodingKeys: String, CodingKey {
        case length, algorithm, digests
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .algorithm)
        guard let algorithm = Checksum.algorithm(named: Substring(name)) else {
            throw DecodingError.dataCorruptedError(forKey: .algorithm, in: container, debugDescription: "piece hashes of \"\(name)\": sha256, sha512, sha1 or md5")
        }
        do {
            self = try PieceHashes(length: try container.decode(Int64.self, forKey: .length), algorithm: algorithm,
                                   digests: try container.decode([String].self, forKey: .digests))
        } catch let error as PieceHashesError {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: container.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(length, forKey: .length)
        try container.encode(algorithm.rawValue, forKey: .algorithm)
        try container.encode(digests, forKey: .digests)
    }
}
