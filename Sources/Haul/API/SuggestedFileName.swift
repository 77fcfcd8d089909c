import HaulHTTP
import HaulIO

/// The name a download into a directory is saved under: the server's suggestion (`Content-Disposition`),
/// else the last segment of the final URL's path, else `index.html` — always made safe to use as one path
/// component.
///
/// A suggestion comes from the network, so it is hostile until proven otherwise: path separators would
/// write outside the directory, `..` would climb out of it, control characters would garble terminals and
/// logs, and a leading `.` would hide the file. And a name ending in one of Haul's working suffixes
/// (`.part`, `.part.haul`, `.part.haul.tmp`, in any case) would be a working file of another download — a
/// server naming its file `victim.bin.part` would replace the partial file of `victim.bin` — so its last
/// `.` becomes `_`: `victim.bin_part`, `x.part_haul`, `x.part.haul_tmp`. Stripping the suffix instead would
/// give `victim.bin`, the other download's own name.
public enum SuggestedFileName {
    /// Longest working suffix the engine appends to a destination name (`NAME.part.haul.tmp`).
    static let longestWorkingSuffix = WorkingFileNames.journalTemporarySuffix
    /// Longest name, in UTF-8 bytes: what common Linux filesystems accept (255) less the longest working
    /// suffix, so that every file the download creates beside the destination can be named too.
    static let maximumBytes = 255 - longestWorkingSuffix.utf8.count
    static let fallback = "index.html"

    static func forResponse(_ head: ResponseHead, url: HTTPURL) -> String {
        if let field = head.fields.first("content-disposition"), let disposition = ContentDisposition(field),
           let suggested = disposition.filename, let name = sanitized(suggested) {
            return name
        }
        return forURL(url)
    }

    /// The name for `url` when the server suggests none: its last path segment, percent-decoded and made
    /// safe, else `index.html`.
    public static func forURL(_ url: HTTPURL) -> String {
        let path = url.path
        let last: String
        if path.withUTF8Bytes({ $0.allSatisfy { $0 < 0x80 } }) {
            // ASCII (a path as sent, percent-encoded): its last segment found by bytes, not by splitting the
            // whole path into Characters, which was a measurable part of starting each of many small downloads.
            last = String(path[(path.lastSlashByteIndex.map { path.utf8.index(after: $0) } ?? path.startIndex)...])
        } else {
            last = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        }
        return sanitized(percentDecoded(last)) ?? fallback
    }

    /// `raw` as a single safe path component, or nil when nothing usable is left.
    static func sanitized(_ raw: String) -> String? {
        // Printable ASCII without a slash or backslash, short enough and not starting with a dot or a space
        // nor ending in one: nothing below would change it but the working-suffix rule.
        let plain = raw.withUTF8Bytes { bytes in
            guard let first = bytes.first, let last = bytes.last, bytes.count <= maximumBytes,
                  first != UInt8(ascii: "."), first != UInt8(ascii: " "), last != UInt8(ascii: " ") else { return false }
            return bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "\\") }
        }
        if plain { return outsideWorkingNames(raw) }
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            switch scalar.value {
            case 0x2F, 0x5C: scalars.append("_")                      // `/` and `\`: never a path
            case 0..<0x20, 0x7F, 0x80..<0xA0: continue                 // C0 and C1 control characters
            case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: continue  // bidi overrides that disguise a name
            default: scalars.append(scalar)
            }
        }
        var name = String(scalars)
        // Leading dots would hide the file, or make `.` and `..`; surrounding spaces are invisible.
        while let first = name.first, first == "." || first == " " { name.removeFirst() }
        while let last = name.last, last == " " { name.removeLast() }
        guard !name.isEmpty else { return nil }
        return outsideWorkingNames(truncated(name))
    }

    /// `name` with its last `.` changed to `_` when it ends in a working suffix (see the type's
    /// description); the same length, so a truncated name stays short enough.
    static func outsideWorkingNames(_ name: String) -> String {
        guard WorkingFileNames.endsInWorkingSuffix(ignoringCase: name), let dot = name.lastIndex(of: ".") else { return name }
        var changed = name
        changed.replaceSubrange(dot...dot, with: "_")
        return changed
    }

    /// Cuts `name` to ``maximumBytes`` on a character boundary, keeping its extension — a compound one
    /// like `.tar.gz` too — when it is short enough to be one.
    private static func truncated(_ name: String) -> String {
        guard name.utf8.count > maximumBytes else { return name }
        let suffix = extensionToKeep(name)
        var stem = String(name.dropLast(suffix.count))
        while stem.utf8.count + suffix.utf8.count > maximumBytes { stem.removeLast() }
        return stem + suffix
    }

    /// The last one or two dot-separated parts of `name` that look like an extension (`.gz`, `.tar.gz`,
    /// `.iso`): each at most 8 bytes of letters and digits, 16 bytes in all.
    static func extensionToKeep(_ name: String) -> String {
        var kept = ""
        var rest = Substring(name)
        for _ in 0..<2 {
            guard let dot = rest.lastIndex(of: ".") else { break }
            let part = rest[rest.index(after: dot)...]
            guard !part.isEmpty, part.utf8.count <= 8, part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }),
                  part.utf8.count + 1 + kept.utf8.count <= 16 else { break }
            kept = "." + part + kept
            rest = rest[..<dot]
        }
        return kept
    }

    /// Decodes `%XX` escapes; invalid escapes stay as they are, invalid UTF-8 becomes U+FFFD.
    static func percentDecoded(_ text: String) -> String {
        // No escape (most names): the text as it is, which is what decoding its bytes would give.
        guard text.withUTF8Bytes({ $0.contains(UInt8(ascii: "%")) }) else { return text }
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
