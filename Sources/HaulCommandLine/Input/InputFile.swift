import Haul

/// One download listed in an input file (`haul -i FILE`).
public struct InputEntry: Sendable, Hashable {
    /// The URL to download, as written with `http://` added when it names no scheme (checked to be an
    /// http/https URL).
    public var url: String
    /// Further URLs of the same file, tried alongside ``url``.
    public var mirrors: [String]
    /// The output file name from `out=NAME`, or nil to derive it from the URL or the server.
    public var outputName: String?
    /// The 1-based line the entry's URL is on, for messages about it.
    public var line: Int
    /// ``url`` as the list's parser parsed it when it checked it, so that it is not parsed again for the
    /// file's name and the request; nil for an entry made with ``init(url:mirrors:outputName:line:)``, or once
    /// ``url`` was changed. Derived from ``url``: not part of the entry's value (`==` and the hash leave it out).
    public var parsedURL: HTTPURL? {
        guard let parsed, parsed.text == url else { return nil }
        return parsed.url
    }

    private var parsed: (text: String, url: HTTPURL)?

    public init(url: String, mirrors: [String] = [], outputName: String? = nil, line: Int) {
        self.url = url
        self.mirrors = mirrors
        self.outputName = outputName
        self.line = line
    }

    /// An entry whose `url` is `parsed` (its text as given, with `http://` added when it names no scheme).
    init(url: String, parsedAs parsed: HTTPURL, line: Int) {
        // Each field set once: made through the other initializer and then changed, the entry was copied
        // whole twice (once per line of a list, on each of its two readings).
        self.url = url
        mirrors = []
        outputName = nil
        self.line = line
        self.parsed = (url, parsed)
    }

    public static func == (lhs: InputEntry, rhs: InputEntry) -> Bool {
        lhs.url == rhs.url && lhs.mirrors == rhs.mirrors && lhs.outputName == rhs.outputName && lhs.line == rhs.line
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(mirrors)
        hasher.combine(outputName)
        hasher.combine(line)
    }
}

/// The input file format: one download per line, like aria2's `-i`, so existing lists keep working.
///
/// ```
/// # comments and blank lines are skipped
/// https://a.example/file.iso<TAB>https://b.example/file.iso<TAB>out=debian.iso
/// https://c.example/other.tar
///   out=renamed.tar
/// ```
///
/// - The first TAB-separated field is the URL; later fields are mirror URLs or `out=NAME`, in any order.
///   A URL without a scheme means `http://` (as on the command line); a field is an option when what
///   comes before its `=` is a bare name (letters, digits, `-`), so `example.org/x?a=b` is a URL.
/// - Fields are separated by TABs only, as in aria2. A space inside a field is an error naming its column
///   (the engine would percent-encode it into a URL nobody meant): `URL out=NAME` with a space is refused
///   with the hint to use a TAB, since aria2 too reads only TABs there. Spaces around fields are trimmed.
/// - A line starting with a space or TAB continues the previous entry; it holds one `out=NAME` (aria2's
///   option lines). Other aria2 options are refused by name rather than silently ignored.
/// - CRLF line ends and a leading UTF-8 byte order mark are accepted.
/// - Two entries may not name the same output file: the second would overwrite the first.
public enum InputFile {
    /// Parses the text of an input file. Throws on the first problem, naming its line.
    public static func parse(_ text: String) throws(InputFileError) -> [InputEntry] {
        var parser = Parser()
        var entries: [InputEntry] = []
        var content = Substring(text)
        if content.first == "\u{FEFF}" { content.removeFirst() }

        // Split on "\n" only (a Character of "\r\n" is one grapheme; split on scalars to see both ends).
        let lines = content.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        for scalars in lines {
            if let entry = try parser.add(line: String(String.UnicodeScalarView(scalars))) { entries.append(entry) }
        }
        if let entry = parser.finish() { entries.append(entry) }
        return entries
    }

    /// Parses an input file line by line, so that a long list is never held whole: each entry comes out
    /// once the line after it shows that no option line continues it (or at ``finish()``).
    ///
    /// What it keeps grows only with the `out=NAME` names given (to refuse a name used twice).
    public struct Parser: Sendable {
        private var pending: InputEntry?
        private var outputLines: [String: Int] = [:]
        /// The number of the last line added (1-based).
        public private(set) var lineNumber = 0

        /// A parser of a list from its start, or (`lineNumber`) of what follows that many lines of it.
        public init(lineNumber: Int = 0) {
            self.lineNumber = lineNumber
        }

        /// Adds the next line (without its `\n`; a trailing `\r` is dropped) and returns the entry it
        /// completed, if any. The caller removes a byte order mark at the start of the file.
        public mutating func add(line text: String) throws(InputFileError) -> InputEntry? {
            lineNumber += 1
            // Most lines of a long list are a URL alone: no byte at or below a space (so no TAB, CR, space to
            // trim or refuse) and no `#`. One pass over the bytes says so; the general rules below, which walk
            // the line several times, give the same entry for such a line.
            if InputFile.isBareURL(text) {
                let (url, parsed) = try InputFile.parsedURL(Substring(text), line: lineNumber)
                // Moved, not copied: the entry taken out, the new one put in (a `defer` copied both whole).
                let completed = pending.take()
                pending = InputEntry(url: url, parsedAs: consume parsed, line: lineNumber)
                return completed
            }
            var line = text
            if line.hasSuffix("\r") { line.removeLast() }
            let trimmed = InputFile.trimmed(line[...])
            if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }

            if line.first == " " || line.first == "\t" {
                guard pending != nil else {
                    throw InputFileError(line: lineNumber, reason: .continuationWithoutEntry(String(trimmed)))
                }
                for field in trimmed.split(separator: "\t") where !InputFile.trimmed(field).isEmpty {
                    let name = try InputFile.outputName(in: InputFile.trimmed(field), line: lineNumber, continuation: true)
                    try InputFile.setOutput(name, of: &pending!, line: lineNumber, used: &outputLines)
                }
                return nil
            }

            // Fields are TAB-separated, as in aria2; a space inside one is refused, naming its column.
            // Most lines are one URL: without a TAB byte the line is its one field, and splitting it (by
            // Characters, which breaks graphemes) cost more per line than parsing its URL.
            let hasTab = line.utf8.contains(UInt8(ascii: "\t"))
            var fieldStart = line.startIndex
            for field in hasTab ? line.split(separator: "\t", omittingEmptySubsequences: false) : [line[...]] {
                if let column = URLText.interiorSpaceColumn(in: field) {
                    let at = line.distance(from: line.startIndex, to: fieldStart) + column
                    let rest = InputFile.trimmed(field[field.index(field.startIndex, offsetBy: column)...])
                    throw InputFileError(line: lineNumber, reason: .spaceInURL(column: at, beforeOption: InputFile.isOption(rest)))
                }
                fieldStart = field.endIndex < line.endIndex ? line.index(after: field.endIndex) : line.endIndex
            }
            let fields = hasTab ? line.split(separator: "\t").map { InputFile.trimmed($0) }.filter { !$0.isEmpty } : [trimmed]
            let (url, parsed) = try InputFile.parsedURL(fields[0], line: lineNumber)
            var entry = InputEntry(url: url, parsedAs: parsed, line: lineNumber)
            for field in fields.dropFirst() {
                if InputFile.isOption(field) {
                    let name = try InputFile.outputName(in: field, line: lineNumber, continuation: false)
                    try InputFile.setOutput(name, of: &entry, line: lineNumber, used: &outputLines)
                } else {
                    entry.mirrors.append(try InputFile.checkedURL(field, line: lineNumber))
                }
            }
            defer { pending = entry }
            return pending
        }

        /// The last entry, once every line is added.
        public mutating func finish() -> InputEntry? {
            defer { pending = nil }
            return pending
        }
    }

    /// Whether `line` is one field and nothing else could be read from it: not empty, not a comment, no
    /// space, TAB, CR or other control byte.
    static func isBareURL(_ line: String) -> Bool {
        func isBare(_ bytes: some Collection<UInt8>) -> Bool {
            guard let first = bytes.first, first != UInt8(ascii: "#") else { return false }
            return !bytes.contains { $0 <= 0x20 }
        }
        return line.utf8.withContiguousStorageIfAvailable(isBare) ?? isBare(line.utf8)
    }

    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }

    private static func checkedURL(_ text: Substring, line: Int) throws(InputFileError) -> String {
        try parsedURL(text, line: line).text
    }

    /// `text` with `http://` added when it names no scheme, and that parsed.
    private static func parsedURL(_ text: Substring, line: Int) throws(InputFileError) -> (text: String, url: HTTPURL) {
        let url = URLText.withDefaultScheme(String(text))
        do {
            return (url, try HTTPURL(url))
        } catch {
            throw InputFileError(line: line, reason: .invalidURL(error))
        }
    }

    /// `key=value` with a bare option name before the `=` (aria2's option lines), not a URL.
    private static func isOption(_ field: Substring) -> Bool {
        guard let equals = field.firstIndex(of: "="), equals != field.startIndex else { return false }
        return field[..<equals].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    /// The NAME of an `out=NAME` field; any other `key=value` is an error naming the key.
    private static func outputName(in field: Substring, line: Int, continuation: Bool) throws(InputFileError) -> String {
        guard let equals = field.firstIndex(of: "=") else {
            throw InputFileError(line: line, reason: continuation ? .notAnOption(String(field)) : .invalidURL(
                URLParseError(.missingScheme, input: String(field))))
        }
        let key = field[..<equals].lowercased()
        let value = String(field[field.index(after: equals)...])
        guard key == "out" else { throw InputFileError(line: line, reason: .unknownOption(key)) }
        guard !value.isEmpty, value != ".", value != "..", !value.hasSuffix("/") else {
            throw InputFileError(line: line, reason: .invalidOutputName(value))
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw InputFileError(line: line, reason: .invalidOutputName(value))
        }
        return value
    }

    private static func setOutput(_ name: String, of entry: inout InputEntry, line: Int,
                                  used: inout [String: Int]) throws(InputFileError) {
        if let previous = entry.outputName {
            throw InputFileError(line: line, reason: .duplicateOutput(name, previous: previous))
        }
        if let firstLine = used[name] {
            throw InputFileError(line: line, reason: .outputAlreadyUsed(name, firstLine: firstLine))
        }
        used[name] = line
        entry.outputName = name
    }
}

/// A problem in an input file, with the 1-based line it is on: `input file line 3: invalid URL ...`.
public struct InputFileError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// The URL or a mirror is not an http/https URL.
        case invalidURL(URLParseError)
        /// An option line (starting with whitespace) before any URL.
        case continuationWithoutEntry(String)
        /// An option line that is not `key=value`.
        case notAnOption(String)
        /// A `key=value` other than `out=`.
        case unknownOption(String)
        /// A space inside a URL field, at a 1-based column of the line; `beforeOption` when what follows it
        /// is `key=value` (aria2's `out=NAME` written after a space instead of a TAB).
        case spaceInURL(column: Int, beforeOption: Bool)
        /// `out=` with an empty name, `.`, `..`, a trailing `/`, or control characters.
        case invalidOutputName(String)
        /// A second `out=` for the same entry.
        case duplicateOutput(String, previous: String)
        /// An `out=` name an earlier entry already writes to.
        case outputAlreadyUsed(String, firstLine: Int)
    }

    /// The 1-based line number.
    public let line: Int
    public let reason: Reason

    public init(line: Int, reason: Reason) {
        self.line = line
        self.reason = reason
    }

    public var description: String {
        let problem = switch reason {
        case .invalidURL(let error): "\(error)"
        case .continuationWithoutEntry(let text): "option line \"\(text)\" comes before any URL"
        case .notAnOption(let text): "\"\(text)\" is not an option (expected out=NAME after leading whitespace)"
        case .spaceInURL(let column, let beforeOption):
            beforeOption
                ? "a space in the URL at column \(column); as in aria2, out=NAME goes after a TAB or on the next line, indented"
                : "a space in the URL at column \(column) (write it as %20; mirrors are separated by TABs)"
        case .unknownOption(let key): "unknown option \"\(key)=\" (only out=NAME is supported)"
        case .invalidOutputName(let name): "out=\"\(name)\" is not a usable file name"
        case .duplicateOutput(let name, let previous): "out=\(name) given, but this entry already has out=\(previous)"
        case .outputAlreadyUsed(let name, let firstLine): "out=\(name) is already used by the entry on line \(firstLine)"
        }
        return "input file line \(line): \(problem)"
    }
}
