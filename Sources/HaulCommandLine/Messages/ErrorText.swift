import Haul

/// How the CLI words a failure: the engine's own description (which names the URL and the tries), plus a
/// hint where the CLI knows which option or habit helps (the engine's words are for any caller of its API;
/// the hints are for someone at a shell).
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

    /// The message for `error` (without the `haul: ` prefix): the engine's description — what failed, the
    /// URL, the tries — and, where the CLI knows which option or habit helps, a hint naming it (the engine's
    /// words are for any caller of its API; the hints are for someone at a shell):
    ///
    /// - `destinationExists`: `--allow-overwrite` or `--skip-existing`.
    /// - `journal`, `partialDownloadMismatch`: `--restart` discards the partial download.
    /// - `belowSpeedLimit`: `--speed-limit`/`--speed-time` set the limit, `--speed-limit 0` turns it off.
    /// - `retryAfterTooLong`: the server asked for a longer wait on every try; the command can be run again then.
    /// - `mirrorMismatch`: how to download different files instead: `-Z` or `-i` on the command line,
    ///   separate lines in an input file.
    /// - a `401`: credentials, with `-u USER` (the password is asked for) or `--netrc`.
    /// - `changedOnServer` (exit 7): `--on-change restart` starts over with the new file.
    /// - `responseTooLarge`: the CLI makes it only for `--max-filesize`, so it is worded with the option.
    public static func message(for error: any Error, source: Source) -> String {
        guard let error = error as? HaulError else { return String(describing: error) }
        switch error.reason {
        case .destinationExists:
            return "\(error) (use --allow-overwrite to replace it, or --skip-existing)"
        case .journal:
            return "\(error) (pass --restart to discard the partial download)"
        case .partialDownloadMismatch:
            return "\(error) (pass --restart to discard it)"
        case .belowSpeedLimit:
            return "\(error) (--speed-limit and --speed-time set the limit; --speed-limit 0 turns it off)"
        case .httpStatus(401, _, _):
            return "\(error) (the server wants credentials: give them with -u USER, which asks for the password, or --netrc)"
        case .changedOnServer:
            return "\(error) (run it again with --on-change restart to start over with the new version)"
        case .responseTooLarge(let url, let limit, let length?):
            return "\(url) is \(length) bytes, more than --max-filesize \(limit); nothing was saved"
        case .responseTooLarge(let url, let limit, nil):
            return "\(url) sent more than --max-filesize \(limit) bytes without announcing its length; stopped there, nothing was saved"
        case .retryAfterTooLong:
            return "\(error) (run the same command again once the server is back: it resumes)"
        case .mirrorMismatch:
            switch source {
            case .commandLine: return "\(error); if these are different files, use -Z (or -i)"
            case .inputFile: return "\(error); if these are different files, put each on its own line of the input file"
            case .parallel: return error.description
            }
        default:
            return error.description
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
