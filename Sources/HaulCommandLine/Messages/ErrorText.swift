import Haul

/// How the CLI words a failure: the engine's own description, except where the CLI knows which option or
/// habit to name (the engine's words are for any caller of its API; these are for someone at a shell).
public enum ErrorText {
    /// Where the URLs of a failed download came from, for the advice that goes with a mirror mismatch.
    public enum Source: Sendable, Hashable {
        /// The command line without `-Z`: the extra URLs are mirrors of the first.
        case commandLine
        /// The command line with `-Z`: every URL is its own download.
        case parallel
        /// A line of an input file (`-i`), whose TAB-separated URLs are mirrors.
        case inputFile
    }

    /// The message for `error` (without the `haul: ` prefix).
    ///
    /// - `destinationExists` names the CLI's options, not the API's `replacesExisting`.
    /// - `mirrorMismatch` adds how to download different files instead: `-Z` or `-i` on the command
    ///   line, separate lines in an input file.
    public static func message(for error: any Error, source: Source) -> String {
        switch error as? HaulError {
        case .destinationExists(let path)?:
            return "\(path) already exists (use --allow-overwrite to replace it, or --skip-existing)"
        case .mirrorMismatch?:
            switch source {
            case .commandLine: return "\(error); if these are different files, use -Z (or -i)"
            case .inputFile: return "\(error); if these are different files, put each on its own line of the input file"
            case .parallel: return String(describing: error)
            }
        default:
            return String(describing: error)
        }
    }

    /// One line for stderr, without its newline: `haul: ` exactly once, then `message` with control
    /// characters (newlines too) shown as `?`, so that every error line starts the same way whatever it quotes.
    public static func line(_ message: String) -> String {
        var text = Substring(message)
        while text.hasPrefix("haul: ") { text = text.dropFirst(6) }
        return "haul: " + TerminalText.sanitized(String(text))
    }

    /// An argument parser's message as one line: its lines joined, a leading `Error: ` dropped, the first
    /// letter lowercased like the CLI's other messages (`The value 'x' is invalid` → `the value ...`).
    public static func parserMessage(_ message: String) -> String {
        var lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        if let first = lines.first, first.hasPrefix("Error: ") { lines[0] = first.dropFirst(7) }
        var text = lines.joined(separator: "; ")
        if let first = text.first, first.isUppercase, text.dropFirst().first?.isLowercase == true {
            text = first.lowercased() + text.dropFirst()
        }
        return text
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
