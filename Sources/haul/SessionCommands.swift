import ArgumentParser
import Haul
import HaulCommandLine
import HaulSessions

#if canImport(Glibc)
import Glibc
#endif

/// `haul daemon ...` and `haul queue ...`: background sessions (`docs/sessions.md`).
///
/// `haul URL...` stays the root command exactly as it was; `main` sends a command line whose first word is
/// `daemon` or `queue` here instead, so that the download options of the root never compete with the
/// subcommands' own. ``HaulCommand`` lists the same subcommands too, for `--help`, the man page and the
/// completion scripts.
struct SessionCommands: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        subcommands: [DaemonCommand.self, QueueCommand.self]
    )

    /// Whether `arguments` (without the program name) are a session command.
    static func handles(_ arguments: [String]) -> Bool {
        guard let first = arguments.first else { return false }
        if first == "daemon" || first == "queue" { return true }
        return first == "help" && (arguments.dropFirst().first == "daemon" || arguments.dropFirst().first == "queue")
    }

    /// Parses and runs a session command, then exits: 0, the failure's exit code, or 2 for a usage error
    /// (one `haul: ` line, as everywhere in haul).
    static func main(_ arguments: [String]) async -> Never {
        do {
            var command = try parseAsRoot(arguments)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
            Glibc.exit(0)
        } catch let failure as CommandFailure {
            StandardError.write(ErrorText.line(failure.message) + "\n")
            Glibc.exit(failure.status.code)
        } catch let code as ExitCode {
            Glibc.exit(code.rawValue)
        } catch {
            StandardError.write(ErrorText.line(parseFailureMessage(error, command: "haul \(arguments.first ?? "queue")")) + "\n")
            Glibc.exit(ExitStatus.usage.code)
        }
    }
}

/// A session command that failed: a message (one `haul: ` line) and the exit status.
struct CommandFailure: Error {
    var status: ExitStatus
    var message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A session error, classified: the state or the daemon is unusable (9), or unreachable (1).
    init(_ error: SessionError) {
        switch error {
        case .invalidIdentifier, .rejected(code: "bad-request", _), .rejected(code: "unknown-task", _), .rejected(code: "not-ended", _):
            self.init(.usage, error.description)
        case .corruptState, .unsupportedFormat, .unusableDirectory, .io, .daemonAlreadyRunning, .noStateDirectory:
            self.init(.output, error.description)
        default:
            self.init(.unexpected, error.description)
        }
    }
}

/// `--session ID`, shared by every session command.
struct SessionOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The session (its state is in $HAUL_STATE_DIR/sessions/ID).", valueName: "id"))
    var session: String = SessionPaths.defaultIdentifier

    func paths(stateDirectory: String? = nil) throws -> SessionPaths {
        do { return try SessionPaths(identifier: session, stateDirectory: stateDirectory) } catch { throw CommandFailure(error) }
    }

    /// How the CLI connects: starting the daemon with this very binary when none runs.
    func configuration(consumer: String? = nil, progress: Bool = false, startsDaemon: Bool = true) -> SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.daemonExecutable = SessionConfiguration.currentExecutable()
        configuration.consumer = consumer
        configuration.receivesProgress = progress
        configuration.startsDaemon = startsDaemon
        return configuration
    }

    func connect(progress: Bool = false, eventsAfter: UInt64? = nil, startsDaemon: Bool = true) async throws -> HaulSession {
        var configuration = configuration(progress: progress, startsDaemon: startsDaemon)
        configuration.eventsAfter = eventsAfter
        do {
            return try await HaulSession.connect(session, configuration: configuration)
        } catch {
            throw CommandFailure(error)
        }
    }
}
