import Haul

/// What the CLI does to a URL as typed before the engine sees it.
public enum URLText {
    /// `text` with `http://` in front when it names no scheme, as curl does: `127.0.0.1:8765/f.bin` and
    /// `example.org/x` mean `http://…`. Anything with `://` is left alone, so `ftp://…` still fails as an
    /// unsupported scheme; surrounding spaces and TABs are trimmed.
    public static func withDefaultScheme(_ text: String) -> String {
        // The common case, said without walking Characters: a URL that starts with its scheme (`hasPrefix`
        // compares the bytes of ASCII text at once; the generic `utf8.starts(with:)` walked them one by one,
        // some 600 instructions for each line of a list, read twice).
        if text.hasPrefix("http://") || text.hasPrefix("https://") { return text }
        var trimmed = Substring(text)
        while let first = trimmed.first, first == " " || first == "\t" { trimmed.removeFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
        guard !trimmed.isEmpty, !trimmed.contains("://") else { return text }
        if trimmed.hasPrefix("//") { return "http:" + trimmed }
        return "http://" + trimmed
    }

    /// The 1-based column (in characters of `text`) of the first space or TAB inside a URL as typed — not
    /// before or after it, which copy and paste leave and which are trimmed — or nil when there is none.
    ///
    /// The engine percent-encodes a space in a URL, as it must for a server's `Location`; a URL typed with
    /// one is refused instead (curl refuses it too): it is most often two words that were meant apart, such
    /// as a URL and aria2's `out=NAME` written with a space rather than a TAB.
    public static func interiorSpaceColumn(in text: Substring) -> Int? {
        // Bytes first: a list of thousands of URLs is checked line by line, and walking Characters (grapheme
        // breaking) cost more than parsing the URL. Only a field with a space or tab inside is walked below.
        let utf8 = text.utf8
        let isSpaceByte: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let firstByte = utf8.firstIndex(where: { !isSpaceByte($0) }),
              let lastByte = utf8.lastIndex(where: { !isSpaceByte($0) }),
              utf8[firstByte...lastByte].contains(where: isSpaceByte) else { return nil }
        func isSpace(_ character: Character) -> Bool { character == " " || character == "\t" }
        guard let first = text.firstIndex(where: { !isSpace($0) }),
              let last = text.lastIndex(where: { !isSpace($0) }),
              let space = text[first...last].firstIndex(where: isSpace) else { return nil }
        return text.distance(from: text.startIndex, to: space) + 1
    }

    /// The file name a download into a directory gets from its URL when the server suggests none — the
    /// engine's own rule (``SuggestedFileName/forURL(_:)``); the server's `Content-Disposition` and redirects
    /// can still change it. The CLI uses it to look for an existing file before it downloads anything.
    public static func fileName(forURL text: String) -> String? {
        guard let url = try? HTTPURL(text) else { return nil }
        return SuggestedFileName.forURL(url)
    }
}
