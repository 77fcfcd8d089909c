import Haul

/// curl's `-z/--time-cond EXPRESSION`, read the way haul can keep its promise: the expression is a date, or
/// a file whose time is the date, or the output file itself (then it is `-N`: the file is asked about with
/// the validators stored with it).
///
/// A date is an HTTP-date in any of its three forms (RFC 9110 §5.6.7): IMF-fixdate
/// (`Wed, 01 Sep 2021 12:00:00 GMT`), RFC 850 (`Wednesday, 01-Sep-21 12:00:00 GMT`) and asctime
/// (`Wed Sep  1 12:00:00 2021`), names of days and months in any case. curl's own date parser takes many more
/// (`20210901`, `1 Sep 2021`, time zones); those are refused with the form to use, never guessed. A leading
/// `-` means "if unmodified since" in curl (`If-Unmodified-Since`, a 412 when it was); haul refuses it:
/// a download that fails because the file changed is what `--on-change fail` already is.
public enum TimeCondition: Equatable, Sendable {
    /// Fetch only when modified after this date: `If-Modified-Since`.
    case modifiedSince(HTTPDate)
    /// The expression names the output file: ask about it as `-N` does.
    case outputFile

    /// The longest expression read: an HTTP-date is 29 bytes, a path at most `PATH_MAX`.
    public static let maximumLength = 4096

    /// - Parameters:
    ///   - text: `-z`'s argument as given.
    ///   - outputPaths: the paths that name the output file (`-o FILE`, and it joined to `--dir`); empty without `-o`.
    ///   - modificationTime: the modification time of an existing file at a path, in seconds since 1970
    ///     (`stat`; nil when there is none), so that this stays a pure function in tests.
    public static func parse(_ text: String, outputPaths: [String],
                             modificationTime: (String) -> Int64?) throws(TimeConditionError) -> TimeCondition {
        guard !text.isEmpty else { throw TimeConditionError("-z/--time-cond needs a date or a file, not an empty argument") }
        guard text.utf8.count <= maximumLength else {
            throw TimeConditionError("-z/--time-cond: an argument of \(text.utf8.count) bytes is neither a date nor a file name")
        }
        if text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw TimeConditionError("-z/--time-cond: the argument contains a control character")
        }
        if text.hasPrefix("-") {
            throw TimeConditionError("-z/--time-cond -DATE (only if unmodified since) is not supported: use a date to fetch only a newer file, or --on-change fail to refuse a file that changes")
        }
        if let date = HTTPDate(text) { return .modifiedSince(date) }
        if outputPaths.contains(text) { return .outputFile }
        if let seconds = modificationTime(text) { return .modifiedSince(HTTPDate(secondsSinceEpoch: seconds)) }
        throw TimeConditionError("-z/--time-cond \"\(TerminalText.sanitized(text))\" is neither an HTTP date (as \"Wed, 01 Sep 2021 12:00:00 GMT\", RFC 850 or asctime) nor an existing file")
    }
}

/// A `-z` argument haul does not read.
public struct TimeConditionError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
