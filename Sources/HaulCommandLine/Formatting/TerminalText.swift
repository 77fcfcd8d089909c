/// Measuring and cutting text for a terminal line, where what counts is columns, not characters.
///
/// The width rules are an approximation of `wcwidth` that needs no locale: combining marks and zero-width
/// characters take no column, East Asian wide and fullwidth characters and most emoji take two, everything
/// else one. Glibc's `wcwidth` answers -1 for every non-ASCII character in the C locale, which is what a CLI
/// usually runs in, so it cannot be used here.
public enum TerminalText {
    /// Columns `text` takes on a terminal.
    public static func width(_ text: some StringProtocol) -> Int {
        text.reduce(0) { $0 + width(of: $1) }
    }

    /// Columns one character takes: that of its first scalar (the rest are combining or joined to it).
    public static func width(of character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        return width(of: first)
    }

    static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x20 || (0x7F..<0xA0).contains(value) { return 0 }
        if value < 0x300 { return 1 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if scalar.properties.isEmojiPresentation { return 2 }
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// `text` with every control character (C0, DEL, C1: newline, escape, ...) replaced by `?`, so a file
    /// name cannot move the cursor, clear the screen or break the line it is printed on.
    public static func sanitized(_ text: String) -> String {
        // Most names are printable ASCII: nothing to replace, no copy.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let value = scalar.value
            result.append(value < 0x20 || (0x7F..<0xA0).contains(value) ? "?" : scalar)
        }
        return String(result)
    }

    /// The longest prefix of `text` that fits in `columns`.
    public static func prefix(_ text: String, columns: Int) -> String {
        var used = 0
        var result = ""
        for character in text {
            let width = width(of: character)
            if used + width > columns { break }
            used += width
            result.append(character)
        }
        return result
    }

    /// The longest suffix of `text` that fits in `columns`.
    static func suffix(_ text: String, columns: Int) -> String {
        var used = 0
        var result: [Character] = []
        for character in text.reversed() {
            let width = width(of: character)
            if used + width > columns { break }
            used += width
            result.append(character)
        }
        return String(result.reversed())
    }

    /// `text` cut to fit `columns` by replacing its middle with `…`, keeping both ends (a file name's
    /// start and its extension): `ubuntu-24.04-desktop-amd64.iso` in 16 columns is `ubuntu-…amd64.iso`.
    public static func truncatedMiddle(_ text: String, columns: Int) -> String {
        if width(text) <= columns { return text }
        if columns <= 0 { return "" }
        if columns == 1 { return "…" }
        // The head gets the odd column; whatever a wide character leaves unused there goes to the tail.
        let head = prefix(text, columns: columns - 1 - (columns - 1) / 2)
        return head + "…" + suffix(text, columns: columns - 1 - width(head))
    }

    /// `text` padded with spaces on the left to `columns` (unchanged if already that wide).
    static func padLeft(_ text: String, to columns: Int) -> String {
        String(repeating: " ", count: max(0, columns - width(text))) + text
    }

    /// `text` padded with spaces on the right to `columns` (unchanged if already that wide).
    static func padRight(_ text: String, to columns: Int) -> String {
        text + String(repeating: " ", count: max(0, columns - width(text)))
    }
}
