import HaulHTTP

/// One range of a resource's bytes to fetch alone (curl's `-r/--range`), for
/// ``HaulClient/download(_:range:logger:)``.
///
/// Written as curl writes it: `A-B` (bytes A to B, both included), `A-` (from A to the end), `-N` (the last N
/// bytes). One range only: a list (`0-9,20-29`) would come back as `multipart/byteranges`, parts with MIME
/// boundaries between them, which is no file.
public struct ByteRange: Sendable, Hashable, CustomStringConvertible {
    public enum Form: Sendable, Hashable {
        /// Bytes `first...last`.
        case closed(first: Int64, last: Int64)
        /// From `first` to the end.
        case from(first: Int64)
        /// The last `length` bytes.
        case suffix(length: Int64)
    }

    public let form: Form

    public init(_ form: Form) throws(ByteRangeError) {
        switch form {
        case .closed(let first, let last):
            guard first >= 0, last >= first, last < Int64.max else { throw ByteRangeError(text: "\(first)-\(last)", reason: "the last byte comes before the first") }
        case .from(let first):
            guard first >= 0 else { throw ByteRangeError(text: "\(first)-", reason: "a range starts at 0 or later") }
        case .suffix(let length):
            guard length > 0 else { throw ByteRangeError(text: "-\(length)", reason: "a suffix asks for at least one byte") }
        }
        self.form = form
    }

    /// Parses curl's spelling: `A-B`, `A-` or `-N`, decimal byte offsets.
    public init(_ text: String) throws(ByteRangeError) {
        if text.contains(",") {
            throw ByteRangeError(text: text, reason: "one range only: several come back as multipart/byteranges, which is no file (run once per range)")
        }
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].allSatisfy(\.isASCIIDigitCharacter), parts[1].allSatisfy(\.isASCIIDigitCharacter),
              !(parts[0].isEmpty && parts[1].isEmpty) else {
            throw ByteRangeError(text: text, reason: "not A-B, A- or -N (byte offsets)")
        }
        let first = parts[0].isEmpty ? nil : Int64(parts[0])
        let last = parts[1].isEmpty ? nil : Int64(parts[1])
        if (!parts[0].isEmpty && first == nil) || (!parts[1].isEmpty && last == nil) {
            throw ByteRangeError(text: text, reason: "an offset is too large")
        }
        switch (first, last) {
        case (let first?, let last?):
            guard last >= first else { throw ByteRangeError(text: text, reason: "the last byte comes before the first") }
            try self.init(.closed(first: first, last: last))
        case (let first?, nil): try self.init(.from(first: first))
        case (nil, let length?):
            guard length > 0 else { throw ByteRangeError(text: text, reason: "a suffix asks for at least one byte") }
            try self.init(.suffix(length: length))
        case (nil, nil): throw ByteRangeError(text: text, reason: "not A-B, A- or -N (byte offsets)")
        }
    }

    /// `A-B`, `A-` or `-N`.
    public var description: String {
        switch form {
        case .closed(let first, let last): "\(first)-\(last)"
        case .from(let first): "\(first)-"
        case .suffix(let length): "-\(length)"
        }
    }

    /// The `Range` field this range is asked with.
    var request: RangeRequest {
        switch form {
        case .closed(let first, let last): .bytes(first...last)
        case .from(let first): .from(first)
        case .suffix(let length): .suffix(length)
        }
    }

    /// The bytes a server must send for a resource of `total` bytes (RFC 9110 §14.1.2: a last byte past
    /// the end is the end, a suffix longer than the resource is all of it); nil when none is satisfiable.
    func satisfied(total: Int64) -> ClosedRange<Int64>? {
        guard total > 0 else { return nil }
        switch form {
        case .closed(let first, let last): return first < total ? first...min(last, total - 1) : nil
        case .from(let first): return first < total ? first...(total - 1) : nil
        case .suffix(let length): return max(0, total - length)...(total - 1)
        }
    }
}

/// Why a `-r/--range` text is not one range.
public struct ByteRangeError: Error, Sendable, Hashable, CustomStringConvertible {
    public let text: String
    public let reason: String

    public var description: String { "range \"\(text)\": \(reason)" }
}

extension Character {
    fileprivate var isASCIIDigitCharacter: Bool { isASCII && isNumber }
}
