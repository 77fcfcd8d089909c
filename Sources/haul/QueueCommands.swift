import ArgumentParser
import Haul
import HaulCommandLine
import HaulHTTP
import HaulSessions

#if canImport(Glibc)
import Glibc
import HaulIO
#endif

/// `haul queue add|list|pause|resume|cancel|remove|wait|events|stop`: a session's queue, through its daemon.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Hand downloads to a session's daemon and follow them (see docs/sessions.md).",
        discussion: """
            Each command connects to the session's daemon, starting it in the
            background when none runs. Downloads go on after the command returns,
            after the terminal closes, and across crashes of the daemon.
            """,
        subcommands: [QueueAdd.self, QueueList.self, QueuePause.self, QueueResume.self, QueueCancel.self, QueueRemove.self,
                      QueueWait.self, QueueEvents.self, QueueStop.self]
    )
}

// MARK: add

struct QueueAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Queue a download; print its task id and return at once.",
        usage: "haul queue add [options] URL [MIRROR-URL...]",
        discussion: "The first URL is the file; further URLs are mirrors of it. Relative paths are taken from the current directory."
    )

    @OptionGroup var sessionOption: SessionOption

    @Argument(help: ArgumentHelp("The URL, then mirrors of the same file. No scheme means http://.", valueName: "URL"))
    var urls: [String] = []

    /// The options `haul` has too, declared once (``DownloadArguments``), with the same meaning.
    @OptionGroup var download: DownloadArguments

    @Option(name: .long, help: ArgumentHelp("Run this shell command once when the download completes (HAUL_PATH, HAUL_DIGEST, ... in its environment).", valueName: "command"))
    var onComplete: String?

    @Flag(name: .long, help: "Print the task as a JSON object instead of its id.")
    var json = false

    /// The task: the request and options `haul` would make of the same flags (``DownloadArguments``), its
    /// headers moved from the client's options into the request (a task's are its own).
    func spec() throws(UsageError) -> TaskSpec {
        let given = try DownloadArguments.checkedURLs(urls, parallel: false, command: "haul queue add")
        if download.output.output == "-" {
            throw UsageError("-o - cannot be queued: the daemon outlives this command's standard output")
        }
        let options = try download.downloadOptions(urlsPerDownload: given.count)
        var request = try download.requests().download(given[0], mirrors: Array(given.dropFirst()), output: download.output.output,
                                                       dir: download.output.dir, source: .commandLine).request
        request.headers = options.headers + request.headers
        // Relative paths are taken from here, not from the daemon's directory.
        var spec = TaskSpec(request, options: TaskOptions(options), hook: onComplete).resolvingRelativePaths()
        spec.urlCommand = try download.urlCommand()
        if let problem = spec.problem() { throw UsageError(problem) }
        return spec
    }

    func run() async throws {
        let command = self
        // spec() may read a netrc file: off the cooperative pool.
        let made = await BlockingWork.run { () -> Result<TaskSpec, CommandFailure> in
            do { return .success(try command.spec()) } catch { return .failure(CommandFailure(.usage, String(describing: error))) }
        }
        let spec = try made.get()
        // The daemon's engine would refuse it anyway; saying so now spares a queued task that can only fail.
        if let path = spec.filePath, !spec.replacesExisting, OutputFile.exists(path), !OutputFile.exists(WorkingFileNames.partial(of: path)) {
            throw CommandFailure(.output, "\(path) already exists (use --allow-overwrite to replace it)")
        }
        let session = try await sessionOption.connect()
        let task: SessionTask
        do { task = try await session.add(spec) } catch { throw CommandFailure(error) }
        print(json ? task.info.json.serialized : String(task.id))
        await session.close()
    }
}

// MARK: list

struct QueueList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "One line per task: id, state, bytes, path (a JSON object each with --json)."
    )

    @OptionGroup var sessionOption: SessionOption

    @Flag(name: .long, help: "One JSON object per line: id, state, url, path, bytes, total, and error when failed.")
    var json = false

    func run() async throws {
        let session = try await sessionOption.connect()
        for task in session.allTasks() { print(QueueText.line(task.info, json: json)) }
        await session.close()
    }
}

enum QueueText {
    /// `3  running    12.0 MiB/64.0 MiB  /data/big.iso`, or the task's JSON object.
    static func line(_ info: TaskInfo, json: Bool) -> String {
        if json { return info.json.serialized }
        let size = UnitFormatting.bytes(info.bytes) + (info.total.map { "/" + UnitFormatting.bytes($0) } ?? "")
        var text = "\(info.id)  \(info.state.rawValue.padding(9))  \(size.padding(21))  \(TerminalText.sanitized(info.path ?? (info.directory.map { $0 + "/" } ?? "")))"
        if let failure = info.failure { text += "  (\(TerminalText.sanitized(failure.message)))" }
        return text
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

// MARK: pause, resume, cancel

/// What pause, resume and cancel share: task ids, a request, the tasks' lines after it.
protocol QueueTaskChange: AsyncParsableCommand {
    var sessionOption: SessionOption { get }
    var ids: [Int] { get }
    static func change(_ task: SessionTask) async throws(SessionError)
}

extension QueueTaskChange {
    func run() async throws {
        guard !ids.isEmpty else { throw CommandFailure(.usage, "no task id given") }
        let session = try await sessionOption.connect()
        for id in ids {
            guard let task = session.task(id) else {
                await session.close()
                throw CommandFailure(.usage, "no task \(id) in session \(session.identifier)")
            }
            do { try await Self.change(task) } catch { throw CommandFailure(error) }
            print(QueueText.line(task.info, json: false))
        }
        await session.close()
    }
}

struct QueuePause: QueueTaskChange {
    static let configuration = CommandConfiguration(commandName: "pause", abstract: "Pause tasks (their journals are written first).")
    @OptionGroup var sessionOption: SessionOption
    @Argument(help: "Task ids.") var ids: [Int] = []
    static func change(_ task: SessionTask) async throws(SessionError) { try await task.pause() }
}

struct QueueResume: QueueTaskChange {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Queue paused or failed tasks again.")
    @OptionGroup var sessionOption: SessionOption
    @Argument(help: "Task ids.") var ids: [Int] = []
    static func change(_ task: SessionTask) async throws(SessionError) { try await task.resume() }
}

struct QueueCancel: QueueTaskChange {
    static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Cancel tasks and remove their partial files.")
    @OptionGroup var sessionOption: SessionOption
    @Argument(help: "Task ids.") var ids: [Int] = []
    static func change(_ task: SessionTask) async throws(SessionError) { try await task.cancel() }
}

// MARK: remove

/// `haul queue remove ID… | --ended`: ended tasks off the list (as aria2's removeDownloadResult and
/// purgeDownloadResult), so that `list` and `wait ID` no longer show them; the event log keeps their history.
struct QueueRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove ended tasks (completed, failed, cancelled) from the list; their files stay, their events stay in the log."
    )

    @OptionGroup var sessionOption: SessionOption

    @Argument(help: "Task ids.") var ids: [Int] = []

    @Flag(name: .long, help: "Remove every ended task.")
    var ended = false

    func run() async throws {
        guard ids.isEmpty != !ended else { throw CommandFailure(.usage, "give task ids or --ended, not both nor neither") }
        let session = try await sessionOption.connect()
        var chosen = ids
        if ended { chosen = session.allTasks().filter { $0.info.state.hasEnded }.map(\.id) }
        if let unknown = chosen.first(where: { session.task($0) == nil }) {
            await session.close()
            throw CommandFailure(.usage, "no task \(unknown) in session \(session.identifier)")
        }
        if !chosen.isEmpty {
            do { try await session.remove(chosen) } catch {
                await session.close()
                throw CommandFailure(error)
            }
        }
        await session.close()
    }
}

// MARK: wait

struct QueueWait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until tasks (default: every one not yet ended) have ended; exit as a download would (0 when all completed).",
        discussion: """
            Without ids, the tasks queued, running or paused when wait starts: one that
            ended before (an old failure) no longer decides the exit status; name it to
            wait for it. The exit status is that of the first waited-for task that did
            not complete, named on the last line. Progress is shown on a terminal. A
            daemon that dies meanwhile is started again, and the wait goes on.
            """
    )

    @OptionGroup var sessionOption: SessionOption

    @Argument(help: "Task ids (default: every task of the session).")
    var ids: [Int] = []

    @Flag(name: [.short, .long], help: "Print nothing but errors.")
    var quiet = false

    func run() async throws {
        let terminal = !quiet && isatty(2) == 1
        let session = try await sessionOption.connect(progress: terminal)
        var tasks: [SessionTask] = []
        for id in ids {
            guard let task = session.task(id) else {
                await session.close()
                throw CommandFailure(.usage, "no task \(id) in session \(session.identifier)")
            }
            tasks.append(task)
        }
        if ids.isEmpty {
            tasks = session.allTasks().filter { !$0.info.state.hasEnded }
            if tasks.isEmpty {
                if !quiet { StandardError.write(ErrorText.line("no task of session \(session.identifier) is queued, running or paused") + "\n") }
                await session.close()
                return
            }
        }
        let ticker = terminal ? Task { await Self.showProgress(tasks) } : nil
        var status = ExitStatus.success
        /// The task that decided `status`, and how many did not complete.
        var decidedBy: Int?
        var notCompleted = 0
        for task in tasks {
            let line: String?
            do {
                let result = try await task.value
                line = quiet ? nil : "haul: task \(task.id): saved \(TerminalText.sanitized(result.path)) (\(UnitFormatting.bytes(result.bytes)), \(result.digest))"
            } catch {
                switch error {
                case .taskFailed(let failure):
                    notCompleted += 1
                    if status == .success { (status, decidedBy) = (ExitStatus(rawValue: failure.exitCode) ?? .unexpected, task.id) }
                    line = ErrorText.line("task \(task.id): \(failure.message)")
                case .taskCancelled:
                    notCompleted += 1
                    if status == .success { (status, decidedBy) = (.interrupted, task.id) }
                    line = ErrorText.line("task \(task.id): cancelled")
                default:
                    ticker?.cancel()
                    throw CommandFailure(error)
                }
            }
            if let line {
                if terminal { StandardError.write("\r\u{1B}[K") }
                StandardError.write(line + "\n")
            }
        }
        ticker?.cancel()
        if terminal { StandardError.write("\r\u{1B}[K") }
        await session.close()
        if status != .success {
            if let decidedBy {
                StandardError.write(ErrorText.line("exit \(status.code): task \(decidedBy)'s; \(notCompleted) of the \(tasks.count) tasks waited for did not complete") + "\n")
            }
            throw ExitCode(status.code)
        }
    }

    /// One line, redrawn: tasks done, percent, bytes, rate, connections.
    static func showProgress(_ tasks: [SessionTask]) async {
        while !Task.isCancelled {
            StandardError.write(ProgressBar.redraw(line: progressLine(tasks.map(\.info), columns: Terminal.columns())))
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// `[1/3 done] 42% 80.0 MiB/192.0 MiB  12.0 MiB/s  8 conn`, cut to one column less than the terminal.
    static func progressLine(_ infos: [TaskInfo], columns: Int) -> String {
        let done = infos.filter { $0.state.hasEnded }.count
        let bytes = infos.reduce(Int64(0)) { $0 + $1.bytes }
        let totals = infos.compactMap(\.total)
        let total = totals.reduce(Int64(0), +)
        let rate = infos.reduce(Int64(0)) { $0 + $1.bytesPerSecond }
        let connections = infos.reduce(0) { $0 + $1.connections }
        var text = "[\(done)/\(infos.count) done]"
        if totals.count == infos.count, total > 0 { text += " \(min(100, bytes * 100 / total))%" }
        text += " \(UnitFormatting.bytes(bytes))" + (totals.count == infos.count ? "/" + UnitFormatting.bytes(total) : "")
        text += "  \(UnitFormatting.rate(Double(rate)))  \(connections) conn"
        return TerminalText.prefix(text, columns: max(1, columns - 1))
    }
}

// MARK: events

struct QueueEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print the session's event log: added, started, paused, resumed, completed, failed, cancelled, hook."
    )

    @OptionGroup var sessionOption: SessionOption

    @Option(name: .long, help: ArgumentHelp("Only events after this sequence number.", valueName: "seq"))
    var after: UInt64 = 0

    @Flag(name: .long, help: "Keep printing new events as they happen.")
    var follow = false

    @Flag(name: .long, help: "One JSON object per line.")
    var json = false

    func run() async throws {
        let session = try await sessionOption.connect(eventsAfter: follow ? after : nil)
        if follow {
            for await event in session.events { print(Self.text(event, json: json)); fflush(nil) }
            throw CommandFailure(.unexpected, "the session daemon went away")
        }
        let events: [SessionEvent]
        do { events = try await session.history(after: after) } catch { throw CommandFailure(error) }
        for event in events { print(Self.text(event, json: json)) }
        await session.close()
    }

    /// `12  2026-05-01T10:00:00.123Z  task 3  completed  /data/a.iso 64.0 MiB sha256=...`
    static func text(_ event: SessionEvent, json: Bool) -> String {
        if json { return event.json.serialized }
        var detail: String
        switch event.kind {
        case .added(let url, let path, let directory): detail = "\(url) -> \(path ?? (directory ?? "") + "/")"
        case .started(let bytes, let total), .paused(let bytes, let total):
            detail = UnitFormatting.bytes(bytes) + (total.map { "/" + UnitFormatting.bytes($0) } ?? "")
        case .resumed, .cancelled, .removed: detail = ""
        case .completed(let path, let bytes, let digest, let recovered):
            detail = "\(path) \(UnitFormatting.bytes(bytes)) \(digest)" + (recovered ? " (recovered)" : "")
        case .failed(let failure): detail = "\(failure.failureClass.rawValue) (\(failure.exitCode)): \(failure.message)"
        case .hook(let status): detail = "exit status \(status)"
        }
        return TerminalText.sanitized("\(event.sequence)  \(Timestamp.iso8601(milliseconds: event.time))  task \(event.task)  \(event.type)  \(detail)")
    }
}

enum Timestamp {
    /// `2026-05-01T10:00:00.123Z` (UTC), without Foundation.
    static func iso8601(milliseconds: Int64) -> String {
        let seconds = milliseconds / 1000
        let days = seconds / 86_400
        let secondOfDay = seconds % 86_400
        let (year, month, day) = HTTPDate.civilFromDays(days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = milliseconds % 1000
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)).\(fraction)Z"
    }
}

// MARK: stop

struct QueueStop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop",
        abstract: "Stop the session's daemon cleanly (every running download checkpointed); tasks continue with the next daemon."
    )

    @OptionGroup var sessionOption: SessionOption

    func run() async throws {
        let session: HaulSession
        do {
            session = try await sessionOption.connect(startsDaemon: false)
        } catch let failure as CommandFailure {
            // Nothing to stop.
            if failure.message.contains("cannot reach the session daemon") { return }
            throw failure
        }
        do { try await session.stopDaemon() } catch { throw CommandFailure(error) }
        await session.close()
    }
}
