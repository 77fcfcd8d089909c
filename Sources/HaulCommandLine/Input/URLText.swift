import Haul

/// What the CLI does to a URL as typed before the engine sees it.
public enum URLText {
    /// `text` with `http://` in front when it names no scheme, as curl does: `127.0.0.1:8765/f.bin` and
    /// `example.org/x` mean `http://…`. Anything with `://` is left alone, so `ftp://…` still fails as an
    /// unsupported scheme; surrounding spaces and TABs are trimmed.
    public static func withDefaultScheme(_ text: String) -> String {
        var trimmed = Substring(text)
        while let first = trimmed.first, first == " " || first == "\t" { trimmed.removeFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
        guard !trimmed.isEmpty, !trimmed.contains("://") else { return text }
        if trimmed.hasPrefix("//") { return "http:" + trimmed }
        return "http://" + trimmed
    }

    /// The file name a download into a directory gets from its URL when the server suggests none: the
    /// last path segment, percent-decoded and made safe as one path component, else `index.html`.
    ///
    /// This mirrors the engine's rule for a URL (the server's `Content-Disposition` and redirects can still
    /// change the name); the CLI uses it to look for an existing file before it downloads anything.
    public static func fileName(forURL text: String) -> String? {
        guard let url = try? HTTPURL(text) else { return nil }
        let last = url.path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        return sanitizedFileName(percentDecoded(last)) ?? "index.html"
    }

    /// `raw` as one safe path component (no `/`, `\`, control or bidi characters, no leading dots or
    /// spaces), or nil when nothing usable is left. Long names are left long: the engine cuts them, and
    /// such a name is then simply not found beforehand.
    static func sanitizedFileName(_ raw: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            switch scalar.value {
            case 0x2F, 0x5C: scalars.append("_")
            case 0..<0x20, 0x7F, 0x80..<0xA0: continue
            case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: continue
            default: scalars.append(scalar)
            }
        }
        var name = String(scalars)
        while let first = name.first, first == "." || first == " " { name.removeFirst() }
        while let last = name.last, last == " " { name.removeLast() }
        return name.isEmpty ? nil : name
    }

    /// Decodes `%XX` escapes; invalid escapes stay as they are, invalid UTF-8 becomes U+FFFD.
    static func percentDecoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let high = hexValue(utf8[utf8.startIndex]),
               let low = hexValue(utf8[utf8.startIndex + 1]) {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
