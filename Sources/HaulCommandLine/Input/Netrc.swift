/// A `.netrc` file, read as curl reads it: `machine HOST login USER password PASSWORD` entries (in any
/// order, across any line breaks), a `default` entry for every other host, `account` ignored, `macdef` bodies
/// skipped up to the next empty line; tokens may be double-quoted with `\"` and `\\` escapes.
public struct Netrc: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// nil for the `default` entry.
        public var machine: String?
        public var login: String?
        public var password: String?
    }

    public var entries: [Entry]

    /// The login and password for `host`: the first `machine` entry for it (case-insensitive) whose login
    /// is `user` when a user is given, else the `default` entry. nil when none fits or it has no password.
    public func credentials(forHost host: String, user: String? = nil) -> (login: String, password: String)? {
        let fits = { (entry: Entry) in user == nil || entry.login == nil || entry.login == user }
        let entry = entries.first { $0.machine?.lowercased() == host.lowercased() && fits($0) }
            ?? entries.first { $0.machine == nil && fits($0) }
        guard let entry, let password = entry.password, let login = entry.login ?? user else { return nil }
        return (login, password)
    }

    public init(entries: [Entry]) {
        self.entries = entries
    }

    /// Parses the text of a netrc file; errors name the line.
    public init(parsing text: String) throws(NetrcError) {
        var tokens = NetrcTokens(text)
        var entries: [Entry] = []
        while let (token, line) = try tokens.next() {
            switch token {
            case "machine":
                guard let (name, _) = try tokens.next() else { throw NetrcError(line: line, "\"machine\" without a host name") }
                entries.append(Entry(machine: name))
            case "default":
                entries.append(Entry(machine: nil))
            case "login", "password", "account":
                guard let (value, _) = try tokens.next() else { throw NetrcError(line: line, "\"\(token)\" without a value") }
                guard !entries.isEmpty else { throw NetrcError(line: line, "\"\(token)\" before any \"machine\" or \"default\"") }
                if token == "login" { entries[entries.count - 1].login = value }
                if token == "password" { entries[entries.count - 1].password = value }
            case "macdef":
                guard try tokens.next() != nil else { throw NetrcError(line: line, "\"macdef\" without a name") }
                tokens.skipMacroBody()
            default:
                throw NetrcError(line: line, "unexpected \"\(token)\"")
            }
        }
        self.entries = entries
    }
}

/// Why a netrc file cannot be read, with its line.
public struct NetrcError: Error, Sendable, Equatable, CustomStringConvertible {
    public let line: Int
    public let message: String

    init(line: Int, _ message: String) {
        self.line = line
        self.message = message
    }

    public var description: String { "netrc line \(line): \(message)" }
}

/// Whitespace-separated tokens, double-quoted ones unescaped, each with its line number.
private struct NetrcTokens {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    mutating func next() throws(NetrcError) -> (String, Int)? {
        while index < scalars.count, scalars[index].properties.isWhitespace {
            if scalars[index] == "\n" { line += 1 }
            index += 1
        }
        guard index < scalars.count else { return nil }
        let start = line
        var token = String.UnicodeScalarView()
        if scalars[index] == "\"" {
            index += 1
            while true {
                guard index < scalars.count, scalars[index] != "\n" else { throw NetrcError(line: start, "unterminated quoted string") }
                let scalar = scalars[index]
                index += 1
                if scalar == "\"" { break }
                // A backslash before the line break escapes nothing: a quoted token ends on its line (a
                // CRLF file would otherwise read differently from the same file with LF).
                if scalar == "\\", index < scalars.count, scalars[index] != "\n" {
                    let escaped = scalars[index]
                    index += 1
                    switch escaped {
                    case "n": token.append("\n")
                    case "r": token.append("\r")
                    case "t": token.append("\t")
                    default: token.append(escaped)
                    }
                } else {
                    token.append(scalar)
                }
            }
        } else {
            while index < scalars.count, !scalars[index].properties.isWhitespace {
                token.append(scalars[index])
                index += 1
            }
        }
        return (String(token), start)
    }

    /// A macro body runs to the first empty line.
    mutating func skipMacroBody() {
        var previousWasNewline = false
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            if scalar == "\n" {
                line += 1
                if previousWasNewline { return }
                previousWasNewline = true
            } else if scalar != "\r" {
                previousWasNewline = false
            }
        }
    }
}
