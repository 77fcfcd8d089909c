/// The spellings that users of curl, wget and aria2 type out of habit, and what haul makes of them.
///
/// Three kinds, all decided here so that the command's run code has no branches for them:
///
/// - **Accepted no-ops** (hidden options of the `haul` command, listed in `--help`'s compatibility line):
///   they ask for what haul does anyway, so they are accepted and change nothing.
/// - **Answers** (``answer(for:)``): spellings the argument parser would misread — wget's `-c URL` read as
///   a number of connections, aria2's `-x 4` read as a proxy `http://4` — are stopped before parsing
///   with one line saying the haul way.
/// - **Aliases** (``alias(forUnknownOption:)``): an option haul does not know but another tool does gets
///   the haul option that does its job, instead of the parser's nearest spelling (`--retry` → `--netrc`).
public enum CommandLineHabits {
    /// The accepted no-ops, as the compatibility line of `--help` and the README list them.
    public static let compatibilityText = """
        Compatibility: curl's -L/--location, -O/--remote-name, -J/--remote-header-name,
        -C -/--continue-at -, -f/--fail, -S/--show-error, --create-dirs and
        --compressed, and wget's and aria2's --continue, are accepted and change
        nothing: haul follows redirects, names the file, resumes, fails on an HTTP
        error, creates directories, and saves the file as the server stores it (it
        asks for no compression, so there is nothing to decompress). curl's -w, -r,
        -I and --max-filesize work as in curl. curl's -s/--silent is -q; wget's
        -P/--directory-prefix is -d. wget's -c URL, -w SECONDS and -r URL, aria2's
        -x N and options haul spells otherwise (--retry: --retries) are answered with
        the haul way.
        """

    /// The one-line answer for arguments that the parser would misread, or nil when there is none.
    ///
    /// Looks at the arguments before `--` only. It does not know which options take values, so a value that
    /// is itself spelled like one of these options (`-H -c`) could be mistaken; no such value is useful.
    public static func answer(for arguments: [String]) -> String? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return nil }
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            if let answer = answer(argument, next: next, later: arguments[min(index + 2, arguments.count)...]) {
                return answer
            }
            index += 1
        }
        return nil
    }

    private static func answer(_ argument: String, next: String?, later: ArraySlice<String>) -> String? {
        let (name, joined) = split(argument)
        let value = joined ?? next
        switch name {
        case "-nc":
            // The parser would read wget's -nc as -n and -c, then complain about -c's value.
            return "wget's -nc is haul's --skip-existing"
        case "-w", "--wait":
            // wget's `-w SECONDS` (wait between retrievals); haul's -w is curl's --write-out FORMAT, and a
            // format that is only a number is no format anybody means.
            if name == "--wait" || (value.map(isSeconds) ?? false) {
                return "wget's \(name) SECONDS is not haul's: -w is curl's --write-out FORMAT (haul waits between retries by itself)"
            }
        case "-r":
            // wget's `-r URL` (recursive): haul's -r is curl's --range.
            if let value, value.contains("://") || !(value.first.map { $0 == "-" || $0.isNumber } ?? false) {
                return "haul does not download recursively (wget's -r); -r is curl's --range A-B"
            }
        case "-c":
            // wget's `-c URL` (continue): haul's -c is a number of connections, and resuming is the default.
            // (`--connections x` is no wget habit: the parser's own message says what is wrong.)
            // Digits too many for an Int are a count all the same, no wget habit: the parser's message says what is wrong.
            guard let value, Int(value) != nil || (!value.isEmpty && value.allSatisfy(\.isASCIIDigit)) else {
                return "haul resumes by default; -c is the number of connections (wget's -c is not needed)"
            }
        case "-x", "--proxy":
            // aria2's `-x 4` (connections per server); haul's -x is a proxy, and "4" would become http://4.
            if let value, isCount(value) { return connectionsAnswer(option: "aria2's -x \(value)", count: value) }
        case "-s":
            // aria2's `-s 4` (split into pieces); curl's -s (silent) takes no value.
            if joined == nil, let value, isCount(value) { return connectionsAnswer(option: "aria2's -s \(value)", count: value) }
        case "--max-connection-per-server", "--split":
            return connectionsAnswer(option: "aria2's \(name)", count: value.flatMap { isCount($0) ? $0 : nil })
        case "-C", "--continue-at":
            if let value, value != "-" {
                return "haul resumes where the partial file ends by default; \(name) takes only '-' (it cannot start at an offset)"
            }
        case "-O":
            // wget's `-O FILE URL` (output document), not curl's `-O URL` (remote name, haul's default). A
            // value without `://` with a URL after it is wget's.
            if joined == nil, let value, !value.hasPrefix("-"), !value.contains("://"),
               later.contains(where: { $0.contains("://") }) {
                return "wget's -O FILE is haul's -o FILE (curl's -O needs nothing: naming the file after the URL is the default)"
            }
        default:
            break
        }
        return nil
    }

    private static func connectionsAnswer(option: String, count: String?) -> String {
        "\(option) is haul's -c \(count ?? "N") (connections per download)"
    }

    /// `5`, `1.5`: wget's seconds.
    private static func isSeconds(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }
            && text.utf8.contains { $0 != UInt8(ascii: ".") }
    }

    private static func isCount(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// `--name=value` → (`--name`, value); `-xVALUE` → (`-x`, VALUE) for the short options above that take a
    /// value joined; anything else unchanged.
    private static func split(_ argument: String) -> (name: String, value: String?) {
        if argument.hasPrefix("--") {
            guard let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
            return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
        }
        for short in ["-c", "-x", "-C", "-s", "-O", "-w", "-r"] where argument.hasPrefix(short) && argument.count > 2 {
            // -c, -x, -w and -r take joined values in haul; -C- is curl's joined form. -s and -O are flags.
            guard short != "-s" && short != "-O" else { return (argument, nil) }
            return (short, String(argument.dropFirst(2)))
        }
        return (argument, nil)
    }

    /// Other tools' option names that haul spells otherwise, and the haul answer: checked before the
    /// parser's nearest spelling, which points the wrong way (`--fail` → `--dir`, `--retry` → `--netrc`).
    public static let aliases: [String: String] = [
        // curl
        "--retry": "--retries",
        "--retry-max-time": "--max-time",
        "--output-dir": "--dir",
        "-A": "--user-agent",
        "--parallel-max": "--jobs",
        "-#": "--progress bar (the default on a terminal)",
        "--progress-bar": "--progress bar (the default on a terminal)",
        // wget
        "-t": "--retries",
        "--tries": "--retries",
        "--output-document": "--output",
        "--no-check-certificate": "--insecure",
        "-nc": "--skip-existing",
        "--no-clobber": "--skip-existing",
        "--timeout": "--connect-timeout and --stall-timeout",
        "-T": "--connect-timeout and --stall-timeout",
        "--password": "--user USER:PASSWORD",
        "--http-user": "--user USER:PASSWORD",
        "--http-password": "--user USER:PASSWORD",
        // aria2
        "--out": "--output",
        "--max-concurrent-downloads": "--jobs",
        "--max-tries": "--retries",
        "--all-proxy": "--proxy",
        "--http-proxy": "--proxy",
        "--https-proxy": "--proxy",
        "--max-download-limit": "--limit-rate",
        "--max-overall-download-limit": "--limit-rate",
        "--check-certificate": "--insecure (to not check)",
        "--ca-certificate": "--cacert",
        "--min-split-size": "--min-segment",
        "--auto-file-renaming": "--allow-overwrite or --skip-existing",
    ]

    /// The haul answer for an option the parser did not know (`--retry`, `--retry=3`, `-t`), or nil.
    public static func alias(forUnknownOption option: String) -> String? {
        aliases[split(option).name]
    }

    /// The parser's message for an unknown option that another tool knows, reworded to name haul's option
    /// instead of the parser's nearest spelling; other messages unchanged.
    public static func rewordingUnknownOption(_ message: String) -> String {
        guard let match = message.firstMatch(of: /[Uu]nknown option '([^']+)'/),
              let haulOption = alias(forUnknownOption: String(match.output.1)) else { return message }
        return "unknown option '\(match.output.1)'; haul's is \(haulOption)"
    }
}
