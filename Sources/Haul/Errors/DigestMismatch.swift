/// A digest that did not match, other than the request's whole-file ``Checksum``: a piece of a download with
/// ``PieceHashes`` that kept failing, or the finished file against the `Repr-Digest` a server sent
/// (RFC 9530). ``HaulError/Reason/digestMismatch(_:)``; the file stays `NAME.part`.
public struct DigestMismatch: Sendable, Hashable, CustomStringConvertible {
    public enum Subject: Sendable, Hashable {
        /// Piece `index` (from 0), bytes `range` of the file. `mirrors`: every URL that served bytes of it in
        /// the run that failed, each blamed, since a hash cannot tell which part was wrong (empty when its
        /// bytes came from an earlier run). `why` says why it was not fetched again.
        case piece(index: Int, range: Range<Int64>, mirrors: [String], why: String)
        /// The whole file against the `Repr-Digest` field of the response from `url`.
        case representationDigest(url: String)
    }

    public var subject: Subject
    /// The `.part` file (or, in memory, the URL so marked).
    public var path: String
    /// The digest function, as the source names it (`sha-256`).
    public var algorithm: String
    /// Lowercase hex.
    public var expected: String
    /// Lowercase hex.
    public var actual: String

    public init(_ subject: Subject, path: String, algorithm: String, expected: String, actual: String) {
        self.subject = subject
        self.path = path
        self.algorithm = algorithm
        self.expected = expected
        self.actual = actual
    }

    public var description: String {
        switch subject {
        case .piece(let index, let range, let mirrors, let why):
            let served = switch mirrors.count {
            case 0: "its bytes came from an earlier run"
            case 1: "served by \(mirrors[0])"
            default: "served by \(mirrors.joined(separator: " and ")) (each is blamed: a hash cannot tell which part was wrong)"
            }
            return "piece \(index) (bytes \(range.lowerBound)-\(range.upperBound - 1)) of \(path) failed its \(algorithm) check: \(actual), expected \(expected); \(served); \(why)"
        case .representationDigest(let url):
            return "\(path): \(algorithm) is \(actual), but the Repr-Digest field from \(url) says \(expected)"
        }
    }
}
