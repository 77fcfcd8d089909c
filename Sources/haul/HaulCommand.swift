import ArgumentParser
import Haul
import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// `haul [options] URL [MIRROR-URL...]`: parses the command line into a ``CommandPlan`` and runs it.
///
/// Exit codes are ``ExitStatus``: one per class of failure, documented in `--help` and the README.
/// The process starts in ``HaulEntry``.
struct HaulCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Download files over HTTP/1.1 with parallel ranged connections; interrupted downloads resume when run again.",
        discussion: """
            Examples:
              haul https://example.org/big.iso
              haul -c 16 -o big.iso https://a.example/big.iso https://b.example/big.iso
              haul -Z -d out https://example.org/a.iso https://example.org/b.iso
              haul -i urls.txt -j 4 -d downloads

            Several URLs are mirrors of one file; with -Z each is its own download. A
            URL without a scheme means http://. Without -o the file is named by the
            server (Content-Disposition) or the URL. An input file lists one URL per
            line, with TAB-separated mirrors and out=NAME; run it again and the files
            it finished are reported as already complete. Progress goes to stderr: a
            live bar on a terminal, plain lines otherwise, JSON lines with --progress
            json (errors too, even with -q). Ctrl-C saves progress and exits 130; run
            the same command again to resume.

            \(CommandLineHabits.compatibilityText)

            Exit codes:
            \(ExitStatus.tableText)
            """,
        subcommands: [DaemonCommand.self, QueueCommand.self]
    )

    @Argument(help: "The URL to download, then other URLs of the same file (mirrors); with -Z, each URL its own download. No scheme means http://.")
    var urls: [String] = []

    @Flag(name: [.customShort("Z"), .customLong("parallel")], help: "Download each URL on the command line as its own file (not as mirrors), --jobs at a time.")
    var parallel = false

    @Option(name: [.customShort("o", allowingJoined: true), .long], help: "Write the file here; a directory (an existing one, or any path ending in /) saves into it under the server's or the URL's name; - streams it in order to standard output over all connections (default: the server's suggested name in --dir).")
    var output: String?

    @Option(name: [.customShort("d", allowingJoined: true), .long], help: "Directory for downloaded files; created when missing (default: current).")
    var dir: String?

    @Option(name: [.customShort("i", allowingJoined: true), .customLong("input-file")], help: "Download every URL listed in FILE (URL, TAB mirrors, TAB out=NAME); - reads the list from standard input.")
    var inputFile: String?

    @Option(name: [.customShort("j", allowingJoined: true), .long], help: "Downloads at the same time with --input-file or --parallel.")
    var jobs = 4

    @Option(name: [.customShort("c", allowingJoined: true), .long], help: "Connections per download.")
    var connections = 8

    @Option(name: .long, help: "Smallest piece one connection is given or steals (e.g. 1M).")
    var minSegment: ByteSize?

    @Option(name: [.customShort("H", allowingJoined: true), .long], help: "Extra request header, 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(name: [.customShort("u", allowingJoined: true), .long], help: "USER:PASSWORD for the server of the (first) URL, sent as Basic authorization to that origin only; USER alone asks for the password on a terminal.")
    var user: String?

    @Flag(name: .long, help: "Take the login and password for each URL's host from ~/.netrc.")
    var netrc = false

    @Option(name: .long, help: "Like --netrc, from FILE.")
    var netrcFile: String?

    @Option(name: [.customShort("x", allowingJoined: true), .long], help: "Proxy for every URL: http://, https://, socks5:// or socks5h:// (names resolved by the proxy), with user:password@ for its credentials; \"\" for none. Without it, http_proxy, https_proxy/HTTPS_PROXY and all_proxy/ALL_PROXY are read as curl reads them.")
    var proxy: String?

    @Option(name: .long, help: "Hosts reached directly, not through the proxy: comma-separated domain suffixes, IP addresses, CIDR ranges, or * (default: no_proxy/NO_PROXY).")
    var noproxy: String?

    @Option(name: .long, help: "User-Agent to send.")
    var userAgent = HaulVersion.userAgent

    @Option(name: .long, help: "CA certificates to trust, one PEM file.")
    var cacert: String?

    @Option(name: .long, help: "CA certificates to trust, a hashed directory (c_rehash).")
    var capath: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify the server's TLS certificate.")
    var insecure = false

    @OptionGroup(title: "TLS client certificate") var clientCertificate: ClientCertificateOptions

    @OptionGroup(title: "Network") var network: NetworkOptions

    @Option(name: .long, help: "Expected digest of the file, ALGO=HEX (sha256, sha512, sha1, md5; aria2's sha-256=HEX too).")
    var checksum: String?

    @Option(name: .long, help: "Most bytes per second for each download (e.g. 500K, 10M; 0 for no limit).")
    var limitRate: RateLimitSetting?

    @Option(name: .long, help: ArgumentHelp(RetryPolicy.commandLineHelp + " " + WaitOptionHelp.retryAfter))
    var retries: Int?

    @Option(name: .long, help: "Seconds allowed to connect (and for the TLS handshake).")
    var connectTimeout: Double = 10

    @Option(name: .long, help: "Seconds without receiving a byte before a connection is given up.")
    var stallTimeout: Double = 30

    @Option(name: [.customShort("Y", allowingJoined: true), .long], help: ArgumentHelp(WaitOptionHelp.speedLimit))
    var speedLimit: RateLimitSetting?

    @Option(name: [.customShort("y", allowingJoined: true), .long], help: ArgumentHelp(WaitOptionHelp.speedTime))
    var speedTime: Int?

    @Option(name: .long, help: "Seconds one download may take in all.")
    var maxTime: Double?

    @Option(name: .long, help: "When the file changed on the server since the download began: fail or restart.")
    var onChange: ChangePolicyArgument = .fail

    @Flag(name: .long, help: "Discard a previous partial download of the same output instead of resuming it.")
    var restart = false

    @Flag(name: .long, help: "Replace an existing file at the destination.")
    var allowOverwrite = false

    @Flag(name: .long, help: "Skip a download whose file already exists, reporting it as complete (like wget -nc).")
    var skipExisting = false

    @Option(name: .long, help: "Progress on stderr: bar (plain lines when not a terminal), json, or none.")
    var progress: ProgressStyleArgument?

    @Flag(name: [.short, .long], help: "Print nothing but errors.")
    var quiet = false

    @Flag(name: [.short, .long], help: "Log every request (with its Range), response, redirect, retry and resume decision to stderr.")
    var verbose = false

    @Flag(name: .long, help: "Skip fdatasync (faster; survives a crash of haul, not of the machine).")
    var noSync = false

    @Option(name: .long, help: "Checkpoint the resume journal after this many bytes (e.g. 32M).")
    var checkpointBytes: ByteSize?

    @Option(name: .long, help: "Checkpoint the resume journal at least this often, in seconds.")
    var checkpointInterval: Double?

    @Flag(name: [.customShort("V"), .long], help: "Print the version and exit.")
    var version = false

    // Other tools' spellings of what haul does anyway (``CommandLineHabits``): hidden, listed in the
    // discussion's compatibility line. Real options of the parser, so that curl's `-fsSL` combines.
    @Flag(name: [.customShort("L"), .customLong("location")], help: .hidden) var curlLocation = false
    @Flag(name: [.customShort("O"), .customLong("remote-name")], help: .hidden) var curlRemoteName = false
    @Flag(name: [.customShort("J"), .customLong("remote-header-name")], help: .hidden) var curlRemoteHeaderName = false
    @Flag(name: [.customShort("f"), .customLong("fail")], help: .hidden) var curlFail = false
    @Flag(name: [.customShort("S"), .customLong("show-error")], help: .hidden) var curlShowError = false
    @Flag(name: .customLong("create-dirs"), help: .hidden) var curlCreateDirs = false
    /// curl's `-C -`; any other value was answered before parsing (``CommandLineHabits/answer(for:)``).
    @Option(name: [.customShort("C", allowingJoined: true), .customLong("continue-at")], help: .hidden) var curlContinueAt: String?
    /// wget's and aria2's `--continue` (their `-c`: haul's -c is connections).
    @Flag(name: .customLong("continue"), help: .hidden) var wgetContinue = false
    /// curl's `-s`: haul's `-q`.
    @Flag(name: [.customShort("s"), .customLong("silent")], help: .hidden) var curlSilent = false
    /// wget's `-P DIR`: haul's `-d DIR`.
    @Option(name: [.customShort("P", allowingJoined: true), .customLong("directory-prefix")], help: .hidden) var wgetDirectoryPrefix: String?

    /// Parses the command line and runs it; every path ends the process with `exit`.
    ///
    /// Usage errors exit with ``ExitStatus/usage`` (ArgumentParser's own would be 64), as one line with one
    /// `haul: ` prefix, or one JSON object when `--progress json` was asked for.
    static func start() async -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if SessionCommands.handles(arguments) { await SessionCommands.main(arguments) }
        if let answer = CommandLineHabits.answer(for: arguments) {
            usageError(answer, json: Self.asksForJSON(arguments))
        }
        let command: HaulCommand
        do {
            guard let parsed = try parseAsRoot() as? HaulCommand else {
                // `--help` and `help` parse as ArgumentParser's own help command.
                print(helpMessage())
                Glibc.exit(0)
            }
            command = parsed
        } catch {
            usageError(parseFailureMessage(error, command: "haul"), json: Self.asksForJSON(Array(CommandLine.arguments.dropFirst())))
        }
        if command.version {
            print(HaulVersion.versionText)
            Glibc.exit(0)
        }
        let plan: CommandPlan
        do {
            plan = try command.plan()
        } catch {
            usageError(String(describing: error), json: command.progress == .json)
        }
        let status = await CommandRun(plan: plan).run()
        Glibc.exit(status.code)
    }

    static func usageError(_ message: String, json: Bool) -> Never {
        if json {
            StandardError.write(JSONProgress.errorLine(file: nil, status: .usage, message: message) + "\n")
        } else {
            StandardError.write(ErrorText.line(message) + "\n")
        }
        Glibc.exit(ExitStatus.usage.code)
    }

    /// Whether raw arguments that did not parse still ask for `--progress json`, so that the usage error
    /// can be JSON like everything else such a caller reads.
    static func asksForJSON(_ arguments: [String]) -> Bool {
        for (index, argument) in arguments.enumerated() {
            if argument == "--" { return false }
            if argument == "--progress=json" { return true }
            if argument == "--progress", index + 1 < arguments.count, arguments[index + 1] == "json" { return true }
        }
        return false
    }
}

extension ParsableCommand {
    /// The one-line message for a command line that did not parse, pointing at `command --help`. `--help`,
    /// `help` and `--generate-completion-script SHELL` arrive here too, as failures with exit code 0: their
    /// text (ArgumentParser's) goes to stdout and the process exits with 0 instead.
    static func parseFailureMessage(_ error: Error, command: String) -> String {
        if exitCode(for: error) == .success {
            // The bash completion script needs a patch to reach the subcommands (``BashCompletionScript``);
            // any other text passes through unchanged.
            let subcommands = HaulCommand.configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
            print(BashCompletionScript.patched(fullMessage(for: error), subcommands: subcommands))
            Glibc.exit(0)
        }
        return ErrorText.parserMessage(CommandLineHabits.rewordingUnknownOption(message(for: error))) + " (see \(command) --help)"
    }
}
