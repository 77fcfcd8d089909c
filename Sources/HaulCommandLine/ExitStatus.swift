import Haul
import HaulSessions

/// The `haul` command's exit status: one code per class of failure, so a script can tell "try again later"
/// (network) from "the file is wrong" (checksum) from "fix the command line" (usage) without parsing
/// messages. ``table`` lists them for the README and `--help`; ``init(_:)-(HaulError)`` classifies errors.
///
/// The codes are a public interface: never renumber one, only add new ones.
public enum ExitStatus: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// Every download finished.
    case success = 0
    /// A failure with no better class (a bug in Haul if it is ever seen).
    case unexpected = 1
    /// The command line or input file is wrong: bad option, invalid URL or header, unreadable input file.
    case usage = 2
    /// The network failed: DNS, connect, reset, stall or time limit, a body cut short, truncated TLS.
    case network = 3
    /// TLS failed: handshake, certificate, or setting TLS up locally (CA file).
    case tls = 4
    /// The server answered with an error status, or a redirect could not be followed.
    case http = 5
    /// The server broke HTTP: malformed response, wrong Content-Range, mirrors that disagree.
    case protocolViolation = 6
    /// The file changed on the server, or the partial download on disk belongs to something else.
    case changedOnServer = 7
    /// The finished file's checksum is not the expected one (it is left as `.part`).
    case checksumMismatch = 8
    /// Writing the output failed: disk error, no space, destination exists, resume journal unusable.
    case output = 9
    /// The file is larger than `--max-filesize` (announced, or grown past it without a length); nothing is
    /// kept. The number is curl's for the same (`CURLE_FILESIZE_EXCEEDED`), so a script written for curl's
    /// `--max-filesize` reads it the same way.
    case tooLarge = 63
    /// Interrupted (SIGINT, SIGTERM or SIGHUP) or cancelled; the partial download is kept, run again to resume.
    case interrupted = 130

    /// The code passed to `exit`.
    public var code: Int32 { rawValue }

    /// A short machine-readable name, used as `"class"` in JSON error lines.
    public var className: String {
        switch self {
        case .success: "success"
        case .unexpected: "unexpected"
        case .usage: "usage"
        case .network: "network"
        case .tls: "tls"
        case .http: "http"
        case .protocolViolation: "protocol"
        case .changedOnServer: "changed"
        case .checksumMismatch: "checksum"
        case .output: "disk"
        case .tooLarge: "too-large"
        case .interrupted: "interrupted"
        }
    }

    /// One line for a person: what the code means and, where it helps, what to do.
    public var meaning: String {
        switch self {
        case .success: "every download finished"
        case .unexpected: "unexpected failure (please report it)"
        case .usage: "usage: bad option, invalid URL or header, bad input file"
        case .network: "network: DNS, connect, reset, stall, timeout or low speed, incomplete body, truncated TLS"
        case .tls: "TLS: handshake, certificate, or local TLS setup (CA file)"
        case .http: "HTTP error status, or a redirect that could not be followed"
        case .protocolViolation: "protocol: malformed or faulty responses that persist, wrong Content-Range, mirror mismatch"
        case .changedOnServer: "the file changed on the server, or the partial download belongs to another file"
        case .checksumMismatch: "checksum mismatch (the file is left as .part)"
        case .output: "disk or output: write error, no space, destination exists or busy, resume journal"
        case .tooLarge: "the file is larger than --max-filesize; nothing is kept"
        case .interrupted: "interrupted or cancelled; run the same command again to resume"
        }
    }

    public var description: String { "\(code) (\(className))" }

    /// Every exit status in code order, as `(code, class, meaning)` rows for documentation and `--help`.
    public static let table: [(code: Int32, class: String, meaning: String)] =
        allCases.map { ($0.code, $0.className, $0.meaning) }

    /// ``table`` as aligned text for `--help`: `    3  network      network: DNS, ...`, a meaning too long for
    /// `width` columns continuing on lines indented to its column, so that the code and class columns stay
    /// clear. The default width, 72, fits an 80-column terminal (the argument parser re-wraps any line of
    /// 80 or more) and the man page generated from `--help`, which indents it by 5 more columns.
    public static func tableText(width: Int = 72) -> String {
        let classWidth = allCases.map(\.className.count).max() ?? 0
        let indent = 5 + 2 + classWidth + 2
        return allCases.map { status in
            let code = String(status.code)
            let name = status.className
            let head = String(repeating: " ", count: 5 - code.count) + code + "  " + name
                + String(repeating: " ", count: classWidth - name.count) + "  "
            let lines = wrapped(status.meaning, columns: max(20, width - indent))
            return ([head + lines[0]] + lines.dropFirst().map { String(repeating: " ", count: indent) + $0 })
                .joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// ``tableText(width:)`` at 72 columns.
    public static var tableText: String { tableText() }

    /// `text` broken at spaces into lines of at most `columns` characters (a longer word gets its own line).
    static func wrapped(_ text: String, columns: Int) -> [String] {
        // This table is part of haul's command configuration, which is built at every start. Split and
        // measured by Characters it cost ~0.7 M instructions (grapheme breaking, appending Substrings);
        // ASCII text, every row of it, is split and measured in bytes, which gives the same lines.
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return wrappedCharacters(text, columns: columns) }
        var lines: [String] = []
        var line = ""
        for word in text.utf8.split(separator: UInt8(ascii: " ")) {
            if line.isEmpty {
                line = String(Substring(word))
            } else if line.utf8.count + 1 + word.count <= columns {
                line += " "
                line += String(Substring(word))
            } else {
                lines.append(line)
                line = String(Substring(word))
            }
        }
        lines.append(line)
        return lines
    }

    /// ``wrapped(_:columns:)`` by Characters, for text that is not ASCII.
    static func wrappedCharacters(_ text: String, columns: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= columns {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        lines.append(line)
        return lines
    }

    /// The class of a download failure.
    ///
    /// A `malformedResponse` that is only a connection closing early (`connectionClosedBeforeResponse`,
    /// `incompleteMessage`) counts as ``network``: nothing the server sent was wrong, the connection just
    /// ended, and trying again may well succeed (``HaulError/isTransient`` agrees).
    public init(_ error: HaulError) {
        // One classification for direct downloads and queued tasks (HaulSessions' `FailureClass`).
        self.init(FailureClass(error))
    }

    /// The exit status of a failure of class `failureClass`.
    public init(_ failureClass: FailureClass) {
        switch failureClass {
        case .usage: self = .usage
        case .network: self = .network
        case .tls: self = .tls
        case .http: self = .http
        case .protocol: self = .protocolViolation
        case .changed: self = .changedOnServer
        case .checksum: self = .checksumMismatch
        case .disk: self = .output
        case .tooLarge: self = .tooLarge
        case .interrupted: self = .interrupted
        case .unexpected: self = .unexpected
        }
    }

    /// The class of any error the CLI may end with: engine errors by ``init(_:)-(HaulError)``, the
    /// command-line pieces' own errors (``UsageError``, ``InputFileError``, ``ByteSizeError``, URL and header
    /// errors) as ``usage``, Swift task cancellation as ``interrupted``, anything else as ``unexpected``.
    public init(classifying error: any Error) {
        switch error {
        case let error as HaulError: self.init(error)
        case is UsageError, is InputFileError, is ByteSizeError, is URLParseError, is RequestHeadError:
            self = .usage
        case let error as ConnectionError:
            switch error.kind {
            case .tlsHandshakeFailed, .tlsHandshakeTimedOut, .tlsFailure: self = .tls
            default: self = .network
            }
        case is TLSSetupError: self = .tls
        case is CancellationError: self = .interrupted
        default: self = .unexpected
        }
    }
}

/// A mistake on the command line that the argument parser itself cannot see (say, `-o` with several URLs,
/// or a header without a colon). Exits with ``ExitStatus/usage``.
public struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
