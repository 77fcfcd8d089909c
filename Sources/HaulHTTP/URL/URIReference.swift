/// A URI reference split into its five components (RFC 3986 Appendix B), before any validation.
///
/// `nil` means the component's delimiter was absent; empty means present but empty, a distinction
/// that reference resolution depends on (e.g. `?` versus no query).
struct URIReference {
    var scheme: ArraySlice<UInt8>?
    var authority: ArraySlice<UInt8>?
    var path: ArraySlice<UInt8>
    var query: ArraySlice<UInt8>?
    var hasFragment: Bool

    /// Splits like `^(([^:/?#]+):)?(//([^/?#]*))?([^?#]*)(\?([^#]*))?(#(.*))?`; never fails.
    init(_ bytes: ArraySlice<UInt8>) {
        var rest = bytes
        let isDelimiter = { (byte: UInt8) in
            byte == UInt8(ascii: ":") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
        }
        if let colon = rest.firstIndex(where: isDelimiter), rest[colon] == UInt8(ascii: ":"), colon > rest.startIndex {
            scheme = rest[..<colon]
            rest = rest[(colon + 1)...]
        }
        if rest.starts(with: "//".utf8) {
            rest = rest.dropFirst(2)
            let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
                ?? rest.endIndex
            authority = rest[..<end]
            rest = rest[end...]
        }
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) {
            hasFragment = true
            rest = rest[..<hash]
        } else {
            hasFragment = false
        }
        if let question = rest.firstIndex(of: UInt8(ascii: "?")) {
            path = rest[..<question]
            query = rest[(question + 1)...]
        } else {
            path = rest
        }
    }

    /// Where user information is, or seems to be: inside the authority, or, when there is no `//`,
    /// before an `@` that follows a `scheme:` (`user:password@host/` typed without `http://`).
    var userInfoRange: Range<Int>? {
        if let authority {
            return authority.lastIndex(of: UInt8(ascii: "@")).map { authority.startIndex..<$0 }
        }
        guard let scheme else { return nil }
        let beforePath = path.prefix { $0 != UInt8(ascii: "/") }
        return beforePath.lastIndex(of: UInt8(ascii: "@")).map { scheme.startIndex..<$0 }
    }

    /// Whether this looks like `user:password@host` with the scheme left out, which would otherwise
    /// read as the scheme `user`.
    var isMissingSchemeBeforeUserInfo: Bool { authority == nil && userInfoRange != nil }

    /// The reference as safe-to-print text: user information replaced by `***` and control
    /// characters written as `%XX`, so errors can quote it.
    func displayText(_ bytes: ArraySlice<UInt8>) -> String {
        var shown: [UInt8] = []
        shown.reserveCapacity(bytes.count)
        let skip = userInfoRange
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if let range = skip, index == range.lowerBound, !range.isEmpty {
                shown.append(contentsOf: "***".utf8)
                index = range.upperBound
                continue
            }
            let byte = bytes[index]
            if FieldSyntax.isControl(byte) { Self.appendPercentEncoded(byte, to: &shown) } else { shown.append(byte) }
            index += 1
        }
        return String(decoding: shown, as: UTF8.self)
    }

    /// Checks `%HH` escapes, rejects control characters and percent-encodes the bytes that may not
    /// appear raw in a request-target: space, `"<>\^`{|}` and non-ASCII (as UTF-8 bytes), like curl.
    /// Everything else, including existing escapes, is kept as given.
    static func normalizedComponent(_ bytes: ArraySlice<UInt8>) throws(URLParseError) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if FieldSyntax.isControl(byte) { throw URLParseError(.controlCharacter(byte)) }
            if byte == UInt8(ascii: "%") {
                let escapeEnd = min(index + 3, bytes.endIndex)
                guard escapeEnd - index == 3,
                      FieldSyntax.hexValue(bytes[index + 1]) != nil, FieldSyntax.hexValue(bytes[index + 2]) != nil
                else {
                    let shown = bytes[index..<escapeEnd].map { FieldSyntax.isControl($0) ? UInt8(ascii: "?") : $0 }
                    throw URLParseError(.invalidPercentEncoding(String(decoding: shown, as: UTF8.self)))
                }
            }
            if needsEncoding(byte) { appendPercentEncoded(byte, to: &result) } else { result.append(byte) }
            index += 1
        }
        return result
    }

    /// `%HH`, upper-case hex as RFC 3986 recommends.
    private static func appendPercentEncoded(_ byte: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "%"))
        out.append(FieldSyntax.upperHexDigits[Int(byte >> 4)])
        out.append(FieldSyntax.upperHexDigits[Int(byte & 0xF)])
    }

    private static func needsEncoding(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x80...0xFF, UInt8(ascii: " "), UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"),
             UInt8(ascii: "\\"), UInt8(ascii: "^"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "|"),
             UInt8(ascii: "}"):
            return true
        default:
            return false
        }
    }

    /// `remove_dot_segments` (RFC 3986 §5.2.4), written as the RFC's buffer-to-buffer loop so it can be
    /// checked against the specification line by line.
    /// Whether some segment of `path` (between slashes, or at either end) is `.` or `..`.
    static func hasDotSegment(_ path: some Sequence<UInt8>) -> Bool {
        var segmentLength = 0, dotsOnly = true
        for byte in path {
            if byte == UInt8(ascii: "/") {
                if dotsOnly, segmentLength == 1 || segmentLength == 2 { return true }
                segmentLength = 0
                dotsOnly = true
            } else {
                segmentLength += 1
                if byte != UInt8(ascii: ".") { dotsOnly = false }
            }
        }
        return dotsOnly && (segmentLength == 1 || segmentLength == 2)
    }

    static func removeDotSegments(_ path: [UInt8]) -> [UInt8] {
        // A path without a `.` or `..` segment is its own answer (rule E moves it over a segment at a time):
        // said in one pass, since every URL parsed goes through here.
        if !hasDotSegment(path) { return path }
        var input = path[...]
        var output: [UInt8] = []
        output.reserveCapacity(path.count)
        func removeLastSegment() {
            if let slash = output.lastIndex(of: UInt8(ascii: "/")) {
                output.removeSubrange(slash...)
            } else {
                output.removeAll()
            }
        }
        while !input.isEmpty {
            if input.starts(with: "../".utf8) {                                  // A
                input = input.dropFirst(3)
            } else if input.starts(with: "./".utf8) {
                input = input.dropFirst(2)
            } else if input.starts(with: "/./".utf8) {                           // B
                input = input.dropFirst(2)
            } else if input.elementsEqual("/.".utf8) {
                output.append(UInt8(ascii: "/"))
                input = []
            } else if input.starts(with: "/../".utf8) {                          // C
                input = input.dropFirst(3)
                removeLastSegment()
            } else if input.elementsEqual("/..".utf8) {
                removeLastSegment()
                output.append(UInt8(ascii: "/"))
                input = []
            } else if input.elementsEqual(".".utf8) || input.elementsEqual("..".utf8) {  // D
                input = []
            } else {                                                             // E
                let searchStart = input.first == UInt8(ascii: "/") ? input.startIndex + 1 : input.startIndex
                let end = input[searchStart...].firstIndex(of: UInt8(ascii: "/")) ?? input.endIndex
                output.append(contentsOf: input[..<end])
                input = input[end...]
            }
        }
        return output
    }

    /// `merge` (RFC 3986 §5.2.3) for a base that has an authority: the base path up to its last `/`,
    /// then the reference path.
    static func merge(basePath: [UInt8], referencePath: [UInt8]) -> [UInt8] {
        guard let slash = basePath.lastIndex(of: UInt8(ascii: "/")) else {
            return [UInt8(ascii: "/")] + referencePath
        }
        return basePath[...slash] + referencePath
    }
}
