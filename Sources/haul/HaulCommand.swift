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
        usage: """
            haul [options] URL [MIRROR-URL...]
            haul [options] -Z URL...
            haul [options] -i FILE
            haul [options] -M FILE.meta4
            haul queue <subcommand> [options]
            haul daemon [options]
            """,
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

    @Argument(help: ArgumentHelp("The URL to download, then other URLs of the same file (mirrors); with -Z, each URL its own download. No scheme means http://.", valueName: "URL"))
    var urls: [String] = []

    /// The options `haul queue add` shares: Output, Connections, Network, TLS, Retries and timeouts.
    @OptionGroup var download: DownloadArguments
    @OptionGroup(title: "Output") var localOutput: LocalOutputOptions
    @OptionGroup(title: "Network") var proxy: ProxyOptions
    @OptionGroup(title: "Progress") var report: ProgressOptions
    @OptionGroup(title: "Lists") var list: ListOptions
    @OptionGroup(title: "Lists") var metalinkList: MetalinkOptions

    @Flag(name: [.customShort("V"), .long], help: "Print the version and exit.")
    var version = false

    /// curl's -w, --max-filesize, -r, -I and --compressed.
    @OptionGroup(title: "Fetch and report") var outputHabits: OutputHabitOptions

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

    /// Parses the command line and runs it; every path ends the process with `exit`.
    ///
    /// Usage errors exit with ``ExitStatus/usage`` (ArgumentParser's own would be 64), as one line with one
    /// `haul: ` prefix, or one JSON object when `--progress json` was asked for.
    static func start() async -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // `haul --version` alone is answered before ArgumentParser: building the parser's view of haul's
        // options (reflecting ~130 of them, the runtime resolving each wrapper type and its conformances
        // on first use) is ~30 M instructions, 80% of such a run, for a line that depends on nothing parsed.
        if arguments == ["--version"] || arguments == ["-V"] {
            print(HaulVersion.versionText)
            Glibc.exit(0)
        }
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
        var metalink: Metalink?
        if let source = command.metalinkList.metalink {
            do {
                try command.checkMetalinkAlone()
                metalink = try await MetalinkDocument.load(source, options: try command.clientOptions())
            } catch let error as UsageError {
                usageError(error.message, json: command.report.progress == .json)
            } catch {
                metalinkFetchFailed(error, json: command.report.progress == .json)
            }
        }
        let plan: CommandPlan
        do {
            plan = try command.plan(metalink: metalink)
        } catch {
            usageError(String(describing: error), json: command.report.progress == .json)
        }
        let status = await CommandRun(plan: plan).run()
        Glibc.exit(status.code)
    }

    /// A `-M URL` that could not be fetched: the error as a download's, with its exit status.
    static func metalinkFetchFailed(_ error: any Error, json: Bool) -> Never {
        let status = ExitStatus(classifying: error)
        let message = "--metalink: " + ErrorText.message(for: error, source: .commandLine)
        if json {
            StandardError.write(JSONProgress.errorLine(file: nil, status: status, message: message) + "\n")
        } else {
            StandardError.write(ErrorText.line(message) + "\n")
        }
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
