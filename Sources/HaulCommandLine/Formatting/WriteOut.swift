/// curl's `-w/--write-out FORMAT`: text with `%{variable}`s, printed to standard output after each
/// transfer. Pure: parsed once (``init(_:)``, which refuses what it cannot print), rendered from plain
/// facts (``render(_:)``).
///
/// - `%{name}` is one of ``Variable``; `%%` is `%`; any other `%` stays as it is (as in curl).
/// - `\n`, `\r`, `\t` and `\\` are a newline, a carriage return, a tab and a backslash (the shell does not
///   turn them into those inside quotes, so curl does); any other `\x` stays as it is.
/// - An unknown `%{name}`, or a `%{` with no `}`, is an error naming it and the known names (curl warns
///   and prints the rest; a format that prints something else than was meant is worse than none).
public struct WriteOutFormat: Sendable, Equatable {
    /// The variables, named as curl names them.
    public enum Variable: String, Sendable, CaseIterable {
        /// The status of the response the file came from; `000` when there was none.
        case httpCode = "http_code"
        /// The same as `http_code` (curl has both names).
        case responseCode = "response_code"
        /// Body bytes fetched by this run.
        case sizeDownload = "size_download"
        /// `size_download` per second of `time_total`, a whole number.
        case speedDownload = "speed_download"
        /// Seconds the download took, with six decimals.
        case timeTotal = "time_total"
        /// The URL that answered last, after redirects.
        case urlEffective = "url_effective"
        /// The URL as it was given.
        case url = "url"
        /// The file written (`-` for standard output); empty when there is none.
        case filenameEffective = "filename_effective"
        /// The response's `Content-Type`, as sent; empty when none.
        case contentType = "content_type"
        /// Redirects followed.
        case numRedirects = "num_redirects"
        /// The exit status this download alone would give.
        case exitcode = "exitcode"
        /// The error message (as on stderr, without `haul: `); empty on success.
        case errormsg = "errormsg"
        /// Every other variable as one JSON object, in name order; a missing value is `null`.
        case json = "json"
    }

    public enum Piece: Sendable, Equatable {
        case text(String)
        case variable(Variable)
    }

    public let pieces: [Piece]

    /// Parses `format`; throws a ``WriteOutFormatError`` for an unknown variable or an unterminated `%{`.
    public init(_ format: String) throws(WriteOutFormatError) {
        var pieces: [Piece] = []
        var text = ""
        var characters = Substring(format)
        while let character = characters.popFirst() {
            switch character {
            case "%":
                if characters.first == "%" {
                    characters.removeFirst()
                    text.append("%")
                } else if characters.first == "{" {
                    characters.removeFirst()
                    guard let close = characters.firstIndex(of: "}") else {
                        throw WriteOutFormatError(kind: .unterminated, text: "%{" + String(characters))
                    }
                    let name = String(characters[..<close])
                    guard let variable = Variable(rawValue: name) else {
                        throw WriteOutFormatError(kind: .unknownVariable, text: name)
                    }
                    characters = characters[characters.index(after: close)...]
                    if !text.isEmpty { pieces.append(.text(text)) }
                    text = ""
                    pieces.append(.variable(variable))
                } else {
                    text.append("%")
                }
            case "\\":
                switch characters.first {
                case "n": characters.removeFirst(); text.append("\n")
                case "r": characters.removeFirst(); text.append("\r")
                case "t": characters.removeFirst(); text.append("\t")
                case "\\": characters.removeFirst(); text.append("\\")
                default: text.append("\\")
                }
            default:
                text.append(character)
            }
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
    }

    /// The text for one transfer.
    public func render(_ facts: WriteOutFacts) -> String {
        var output = ""
        for piece in pieces {
            switch piece {
            case .text(let text): output += text
            case .variable(let variable): output += Self.value(of: variable, facts)
            }
        }
        return output
    }

    static func value(of variable: Variable, _ facts: WriteOutFacts) -> String {
        switch variable {
        case .httpCode, .responseCode:
            let code = String(facts.httpCode ?? 0)
            return String(repeating: "0", count: max(0, 3 - code.count)) + code
        case .sizeDownload: return String(facts.sizeDownload)
        case .speedDownload: return String(facts.speedDownload)
        case .timeTotal: return UnitFormatting.fixedPoint(facts.timeTotal, fractionDigits: 6)
        case .urlEffective: return facts.urlEffective
        case .url: return facts.url
        case .filenameEffective: return facts.filenameEffective ?? ""
        case .contentType: return facts.contentType ?? ""
        case .numRedirects: return String(facts.numRedirects)
        case .exitcode: return String(facts.exitCode)
        case .errormsg: return facts.errorMessage ?? ""
        case .json: return json(facts)
        }
    }

    /// `%{json}`: every variable but itself, keys in name order as curl writes them.
    static func json(_ facts: WriteOutFacts) -> String {
        var object = JSONObjectWriter()
        for variable in Variable.allCases.filter({ $0 != .json }).sorted(by: { $0.rawValue < $1.rawValue }) {
            switch variable {
            case .httpCode, .responseCode: object.add(variable.rawValue, facts.httpCode ?? 0)
            case .sizeDownload: object.add(variable.rawValue, facts.sizeDownload)
            case .speedDownload: object.add(variable.rawValue, facts.speedDownload)
            case .timeTotal: object.add(variable.rawValue, facts.timeTotal, fractionDigits: 6)
            case .urlEffective: object.add(variable.rawValue, facts.urlEffective)
            case .url: object.add(variable.rawValue, facts.url)
            case .filenameEffective: object.add(variable.rawValue, facts.filenameEffective)
            case .contentType: object.add(variable.rawValue, facts.contentType)
            case .numRedirects: object.add(variable.rawValue, facts.numRedirects)
            case .exitcode: object.add(variable.rawValue, Int(facts.exitCode))
            case .errormsg: object.add(variable.rawValue, facts.errorMessage)
            case .json: break
            }
        }
        return object.json
    }
}

/// What `-w` prints about one transfer, gathered by the command from its result or its error.
public struct WriteOutFacts: Sendable, Equatable {
    /// The response's status; nil when no response was had (`000`).
    public var httpCode: Int?
    public var sizeDownload: Int64
    /// Bytes per second, whole.
    public var speedDownload: Int64
    /// Seconds.
    public var timeTotal: Double
    public var urlEffective: String
    public var url: String
    public var filenameEffective: String?
    public var contentType: String?
    public var numRedirects: Int
    public var exitCode: Int32
    /// nil on success.
    public var errorMessage: String?

    public init(httpCode: Int?, sizeDownload: Int64, timeTotal: Double, urlEffective: String, url: String,
                filenameEffective: String?, contentType: String?, numRedirects: Int, exitCode: Int32, errorMessage: String?) {
        self.httpCode = httpCode
        self.sizeDownload = sizeDownload
        self.timeTotal = timeTotal
        self.speedDownload = timeTotal > 0 ? Int64((Double(sizeDownload) / timeTotal).rounded()) : 0
        self.urlEffective = urlEffective
        self.url = url
        self.filenameEffective = filenameEffective
        self.contentType = contentType
        self.numRedirects = numRedirects
        self.exitCode = exitCode
        self.errorMessage = errorMessage
    }
}

/// Why a `--write-out` format cannot be used.
public struct WriteOutFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case unknownVariable
        case unterminated
    }

    public let kind: Kind
    /// The unknown name, or the text from the `%{` that is not closed.
    public let text: String

    public init(kind: Kind, text: String) {
        self.kind = kind
        self.text = text
    }

    public var description: String {
        switch kind {
        case .unknownVariable:
            let known = WriteOutFormat.Variable.allCases.map { "%{\($0.rawValue)}" }.joined(separator: " ")
            return "--write-out: unknown variable %{\(text)}; known: \(known)"
        case .unterminated:
            return "--write-out: \"\(text)\" has no closing }"
        }
    }
}
