import ArgumentParser
import Haul
import HaulCommandLine
import HaulSessions

#if canImport(Glibc)
import Glibc
import HaulIO
#endif

/// `haul daemon [--session ID]`: runs the session's daemon in the foreground (for a systemd user unit:
/// `docs/haul-daemon@.service`). Client commands start one in the background when none runs.
struct DaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run a session's daemon (the owner of its queue) in the foreground.",
        discussion: """
            The daemon runs the session's queued downloads, at most --jobs at once under
            one --max-connections cap, resumes unfinished ones when it starts, and
            serves `haul queue` commands on the session's Unix socket. One daemon per
            session: a second one exits with 9. SIGINT or SIGTERM (or `haul queue
            stop`) pauses every download and exits 0. -j, --max-connections and
            --on-complete are stored in the session and apply to later daemons too.
            """
    )

    @OptionGroup var sessionOption: SessionOption

    @Option(name: .long, help: ArgumentHelp("The state directory (default: $HAUL_STATE_DIR, $XDG_STATE_HOME/haul, ~/.local/state/haul).", valueName: "dir"))
    var stateDir: String?

    @Option(name: [.customShort("j", allowingJoined: true), .long], help: "Downloads running at once (stored in the session; default 4).")
    var jobs: Int?

    @Option(name: .long, help: "Connections all downloads may have open at once (stored; default 64).")
    var maxConnections: Int?

    @Option(name: .long, help: ArgumentHelp("Run this shell command once for each completed task without a hook of its own (stored; '' removes it).", valueName: "command"))
    var onComplete: String?

    @Option(name: .long, help: ArgumentHelp("Exit after this many seconds with nothing to do and no client (default: never; 60 with --detach).", valueName: "seconds"))
    var idleExit: Int?

    @Flag(name: .long, help: "Start the daemon in the background (output to the session's daemon.log) and return at once.")
    var detach = false

    func run() async throws {
        guard jobs.map({ (1...256).contains($0) }) ?? true else { throw CommandFailure(.usage, "--jobs must be between 1 and 256") }
        guard maxConnections.map({ (1...4096).contains($0) }) ?? true else {
            throw CommandFailure(.usage, "--max-connections must be between 1 and 4096")
        }
        guard idleExit.map({ $0 >= 1 }) ?? true else { throw CommandFailure(.usage, "--idle-exit must be at least 1 second") }
        let paths = try sessionOption.paths(stateDirectory: stateDir.map(SessionPaths.absolute))
        if detach {
            guard let executable = SessionConfiguration.currentExecutable() else {
                throw CommandFailure(.unexpected, "cannot find this program's executable (/proc/self/exe)")
            }
            var arguments = [executable, "daemon", "--session", paths.identifier, "--state-dir", paths.stateDirectory,
                             "--idle-exit", String(idleExit ?? 60)]
            if let jobs { arguments += ["--jobs", String(jobs)] }
            if let maxConnections { arguments += ["--max-connections", String(maxConnections)] }
            if let onComplete { arguments += ["--on-complete", onComplete] }
            let launch = arguments
            // Spawning is a blocking system call: never on the cooperative pool.
            let started = await BlockingWork.run { () -> Result<Int32, SessionError> in
                do throws(SessionError) { return .success(try SessionDaemon.startDetached(launch, paths: paths)) } catch { return .failure(error) }
            }
            if case .failure(let error) = started { throw CommandFailure(error) }
            return
        }
        var configuration = DaemonConfiguration(paths: paths)
        configuration.idleExit = idleExit.map { .seconds($0) }
        // Signals are the program's: the first SIGINT/SIGTERM/SIGHUP stops the daemon cleanly (every download
        // paused), a second one exits at once.
        configuration.installStopHandler = { stop in
            try StopSignals.install(immediateExitStatus: 130) { _ in
                StopSignals.acknowledge(exitLine: "haul daemon: second stop signal: exiting now; each journal keeps its last checkpoint\n")
                stop("stop signal: pausing every download")
            }
        }
        if jobs != nil || maxConnections != nil || onComplete != nil {
            let jobs = self.jobs, maxConnections = self.maxConnections, onComplete = self.onComplete
            configuration.updateSettings = { settings in
                if let jobs { settings.jobs = jobs }
                if let maxConnections { settings.maximumConnections = maxConnections }
                if let onComplete { settings.hook = onComplete.isEmpty ? nil : onComplete }
            }
        }
        let status: Int32
        do { status = try await SessionDaemon.run(configuration) } catch { throw CommandFailure(error) }
        throw ExitCode(status)
    }
}
