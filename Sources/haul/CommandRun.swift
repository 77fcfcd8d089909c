import Haul
import HaulCommandLine
import Synchronization

#if canImport(Glibc)
import Glibc
import HaulIO
#endif

/// Runs a ``CommandPlan``: starts the downloads (at most `jobs` at once), reports progress, turns the first
/// SIGINT/SIGTERM into a clean pause, and decides the exit status.
final class CommandRun: Sendable {
    let plan: CommandPlan
    /// Downloads started and not yet ended, so that a stop signal can pause them.
    private let running = Mutex<[Int: DownloadTask]>([:])
    /// Set by the first stop signal: no further download starts.
    private let stopping = Mutex(false)
    /// How many of the plan's downloads have been started.
    private let started = Mutex(0)
    /// The client, once made, so that a stop can shut its loop down before exiting.
    private let clientBox = Mutex<HaulClient?>(nil)
    private let reporter: ProgressReporter

    init(plan: CommandPlan) {
        self.plan = plan
        reporter = ProgressReporter(style: plan.progress, messages: plan.messages, count: plan.downloads.count)
    }

    func run() async -> ExitStatus {
        if plan.habits.isSingleExchange { return await SingleExchangeRun(plan: plan, reporter: reporter).run() }
        let client: HaulClient
        do {
            client = try HaulClient(options: plan.options, logger: plan.verbose ? StandardErrorLogHandler.logger() : nil)
        } catch {
            reporter.failed(index: nil, name: "haul", error: error, source: .commandLine)
            return ExitStatus(classifying: error)
        }
        clientBox.withLock { $0 = client }
        let secondInterrupt: SecondInterrupt.Form = plan.messages == .json ? .json : plan.progress == .bar ? .terminal : .text
        do {
            try StopSignals.install(immediateExitStatus: ExitStatus.interrupted.code) { [self] signal in
                Task { await stop(signal: signal, secondInterrupt: secondInterrupt) }
            }
        } catch {
            reporter.warning("cannot handle SIGINT/SIGTERM/SIGHUP (\(error)); Ctrl-C will not save progress")
        }

        let ticker = Task { [self] in
            while !Task.isCancelled {
                reporter.tick(running.withLock { $0 })
                try? await Task.sleep(for: plan.progress == .bar ? .milliseconds(100) : .milliseconds(250))
            }
        }
        var worst = ExitStatus.success
        // `-j` bounds the downloads transferring at once. A download whose bytes are all in waits for its
        // durable commit without holding a slot (commits are grouped: many files share one wait for the
        // disk), up to `finishingLimit` of them, which bounds open files and memory.
        let finishingLimit = min(256, max(16, plan.jobs * 8))
        let downloads = plan.downloads
        await withTaskGroup(of: Event.self) { group in
            var transferring = 0
            var finishing = 0
            /// Starts the next download that is not already complete; false when none is left.
            func startNext() -> Bool {
                while !stopping.withLock({ $0 }), let (index, download) = downloads.next() {
                    started.withLock { $0 = index + 1 }
                    if alreadyComplete(download, path: download.expectedPath) {
                        reporter.alreadyComplete(index: index, path: download.expectedPath, url: download.request.url)
                        continue
                    }
                    let task = client.start(download.request)
                    running.withLock { $0[index] = task }
                    group.addTask { [self] in
                        await task.transferEnded()
                        // Ended already (no durable commit to wait for, or it failed): report it here rather
                        // than in a second task.
                        switch task.currentProgress.phase {
                        case .completed, .failed, .cancelled:
                            return .transferAndFinishEnded(await outcome(index: index, task: task, download: download))
                        default:
                            return .transferEnded(index, task, download)
                        }
                    }
                    return true
                }
                return false
            }
            func fill() {
                while transferring < plan.jobs, finishing < finishingLimit, startNext() { transferring += 1 }
            }
            fill()
            for await event in group {
                switch event {
                case .transferEnded(let index, let task, let download):
                    transferring -= 1
                    finishing += 1
                    group.addTask { [self] in .ended(await outcome(index: index, task: task, download: download)) }
                case .ended(let status):
                    finishing -= 1
                    // The first failure decides the exit status; later ones are reported but do not override it.
                    if worst == .success { worst = status }
                case .transferAndFinishEnded(let status):
                    transferring -= 1
                    if worst == .success { worst = status }
                }
                fill()
            }
            if let error = downloads.error {
                reporter.failed(index: nil, name: "haul", error: error, source: .commandLine)
                if worst == .success { worst = ExitStatus(classifying: error) }
            }
        }
        ticker.cancel()
        reporter.close()
        await client.shutdown()
        return worst
    }

    /// What the run loop hears from a download: its bytes are all in (the next one may start), or it ended.
    private enum Event: Sendable {
        case transferEnded(Int, DownloadTask, CommandPlan.Download)
        case ended(ExitStatus)
        /// Both at once.
        case transferAndFinishEnded(ExitStatus)
    }

    /// Waits for the end of `task`, reports it, and says how it went.
    private func outcome(index: Int, task: DownloadTask, download: CommandPlan.Download) async -> ExitStatus {
        let status: ExitStatus
        do {
            let result = try await task.value
            if plan.usedOneConnectionForLackOfRanges(result) {
                reporter.note(name: ProgressReporter.fileName(result.path),
                              "the server does not support ranges; used one connection")
            }
            reporter.finished(index: index, result: result, url: download.request.url)
            if let writeOut = plan.habits.writeOut {
                StandardOutput.write(writeOut.render(OutputHabits.facts(for: result, url: download.request.url)))
            }
            status = .success
        } catch {
            if case .destinationExists(let path) = error.reason, alreadyComplete(download, path: path) {
                // Named by the server after all, and that file is there: an earlier run's.
                reporter.alreadyComplete(index: index, path: path, url: download.request.url)
                status = .success
            } else {
                reporter.failed(index: index, name: ProgressReporter.name(of: task), error: error,
                                source: download.source)
                if let writeOut = plan.habits.writeOut {
                    StandardOutput.write(writeOut.render(OutputHabits.facts(
                        for: error, url: download.request.url, path: download.expectedPath, progress: task.currentProgress,
                        source: download.source)))
                }
                status = ExitStatus(classifying: error)
            }
        }
        running.withLock { _ = $0.removeValue(forKey: index) }
        reporter.forget(index: index)
        return status
    }

    /// Whether the file at `path` counts as already complete (``ExistingDestination``): with
    /// `--skip-existing` whenever it exists, with `-i` when it exists without a `.part` beside it.
    private func alreadyComplete(_ download: CommandPlan.Download, path: String) -> Bool {
        if case .stream = download.request.destination { return false }
        let skipExisting = plan.skipsExisting, fromInputFile = download.source == .inputFile
        let allowOverwrite = download.request.replacesExisting
        // Only the checks the verdict can depend on: with a list of thousands of small files, two `stat`
        // calls per file that cannot change the answer are a measurable share of the work.
        let destinationExists = !allowOverwrite && (skipExisting || fromInputFile) && OutputFile.exists(path)
        let partialExists = destinationExists && !skipExisting && OutputFile.exists(WorkingFileNames.partial(of: path))
        let verdict = ExistingDestination.verdict(
            destinationExists: destinationExists, partialExists: partialExists,
            skipExisting: skipExisting, fromInputFile: fromInputFile, allowOverwrite: allowOverwrite)
        return verdict == .alreadyComplete
    }

    /// The first SIGINT, SIGTERM or SIGHUP: pause every download (each writes its journal), say how to resume, stop
    /// the event loop, exit with ``ExitStatus/interrupted``. A download that had already finished when the
    /// signal came is reported as finished, and when nothing was left to interrupt the run ends as usual.
    /// A second SIGINT or SIGTERM after the "saving progress" line exits at once (handled in C).
    private func stop(signal: Int32, secondInterrupt: SecondInterrupt.Form) async {
        stopping.withLock { $0 = true }
        let tasks = running.withLock { $0 }
        reporter.interrupting()
        // Only now that the user has been told does a second signal quit at once; one that came before this
        // was the same stop delivered twice (`timeout` signals haul and its process group).
        SecondInterrupt.acknowledge(secondInterrupt)
        await withTaskGroup(of: Void.self) { group in
            for (index, task) in tasks {
                group.addTask { [self] in
                    do {
                        try await task.pause()
                    } catch {
                        reporter.failed(index: index, name: ProgressReporter.name(of: task), error: error,
                                        source: plan.downloads.source)
                    }
                }
            }
        }
        // A download whose bytes were all in is being committed (synced, renamed, its journal removed): it
        // is let finish and be reported, since exiting half-way could leave a complete file that the next
        // run cannot recognise (a `.part` with no journal saying it is whole starts over).
        for (index, task) in tasks where task.currentProgress.phase == .finishing {
            _ = try? await task.value
            // `outcome(index:task:download:)` reports it, then forgets it.
            while running.withLock({ $0[index] != nil }) { try? await Task.sleep(for: .milliseconds(2)) }
        }
        let paused = tasks.sorted { $0.key < $1.key }.filter { $0.value.currentProgress.phase == .paused }
        let notStarted = plan.downloads.count - started.withLock { $0 }
        // Everything had finished (or failed) before the pause could take hold: the normal ending reports it.
        guard !paused.isEmpty || notStarted > 0 else { return }
        reporter.interrupted(paused, notStarted: notStarted)
        // exit() runs OpenSSL's cleanup: the loop thread must not be inside OpenSSL then.
        if let client = clientBox.withLock({ $0 }) { await client.shutdown() }
        Glibc.exit(ExitStatus.interrupted.code)
    }
}

/// Prints progress and outcomes on stderr in the chosen style; safe to call from any task.
final class ProgressReporter: Sendable {
    let style: CommandPlan.ProgressStyle
    /// Text lines, or JSON objects (`--progress json`, with or without `-q`).
    let messages: CommandPlan.MessageFormat
    let count: Int
    private let state = Mutex(State())

    private struct State {
        var throttles: [Int: PlainProgressThrottle] = [:]
        var bar = BarLineState()
        var completed = 0
        var warned: Set<Int> = []
        /// How many of each download's notices were printed.
        var noticesShown: [Int: Int] = [:]
    }

    /// Drops what was kept about a download that has ended, so that a long list costs no more memory than
    /// a short one.
    func forget(index: Int) {
        state.withLock { state in
            state.throttles[index] = nil
            state.warned.remove(index)
            state.noticesShown[index] = nil
        }
    }

    init(style: CommandPlan.ProgressStyle, messages: CommandPlan.MessageFormat, count: Int) {
        self.style = style
        self.messages = messages
        self.count = count
    }

    /// The name a download is shown under: its file name once known, else the URL's last segment.
    static func name(of task: DownloadTask) -> String {
        var path = task.currentProgress.partialPath
        if let destination = WorkingFileNames.destination(ofPartial: path) { path = destination }
        if path.isEmpty {
            switch task.request.destination {
            case .file(let file): path = file
            case .stream, .memory, .directory: path = task.request.url
            }
        }
        let last = path.split(separator: "/").last.map(String.init) ?? path
        return TerminalText.sanitized(last)
    }

    static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    func tick(_ tasks: [Int: DownloadTask]) {
        guard !tasks.isEmpty else { return }
        warnAboutFailedCheckpoints(tasks)
        showNotices(tasks)
        switch style {
        case .none:
            return
        case .bar:
            let columns = Terminal.columns()
            let line: String
            if count == 1, let task = tasks.values.first {
                // One column short of the width, so the cursor never lands in the last column and wraps.
                line = ProgressBar(name: Self.name(of: task)).line(for: task.currentProgress, columns: columns - 1)
            } else {
                line = aggregateLine(tasks, columns: columns)
            }
            // Under the lock: a stop that retired the bar meanwhile wins (``BarLineState``).
            state.withLock { if $0.bar.draw() { StandardError.write(ProgressBar.redraw(line: line)) } }
        case .plain:
            for (index, task) in tasks.sorted(by: { $0.key < $1.key }) {
                let progress = task.currentProgress
                guard progress.phase == .downloading else { continue }
                let due = state.withLock { state in
                    var throttle = state.throttles[index] ?? PlainProgressThrottle()
                    defer { state.throttles[index] = throttle }
                    return throttle.shouldPrint(progress)
                }
                if due { StandardError.write(PlainProgressLine.line(name: Self.name(of: task), progress: progress) + "\n") }
            }
        case .json:
            for (index, task) in tasks.sorted(by: { $0.key < $1.key }) {
                let progress = task.currentProgress
                guard progress.phase == .downloading || progress.phase == .connecting else { continue }
                StandardError.write(JSONProgress.progressLine(file: Self.name(of: task), progress: progress, id: index + 1,
                                                              url: OutputHabits.shownURL(task.request.url)) + "\n")
            }
        }
    }

    /// A checkpoint that failed (say, no space for the journal) does not stop the download, but a crash
    /// would then re-fetch more than usual: say so once per download, even with `--quiet`.
    private func warnAboutFailedCheckpoints(_ tasks: [Int: DownloadTask]) {
        for (index, task) in tasks {
            guard let failure = task.currentProgress.checkpointFailure else { continue }
            let first = state.withLock { $0.warned.insert(index).inserted }
            guard first else { continue }
            let message = "cannot update the resume journal (\(failure)); the download goes on, but after a crash more would be fetched again"
            if messages == .json {
                StandardError.write(JSONProgress.errorLine(file: Self.name(of: task), status: .output, message: message, transient: true,
                                                           id: index + 1) + "\n")
            } else {
                writeLine(ErrorText.line("warning: \(Self.name(of: task)): \(message)"))
            }
        }
    }

    /// What the engine says the user should know (a resume from another URL): each once, even with
    /// `--quiet`, since it explains what happens to their file.
    private func showNotices(_ tasks: [Int: DownloadTask]) {
        for (index, task) in tasks.sorted(by: { $0.key < $1.key }) {
            let notices = task.currentProgress.notices
            guard !notices.isEmpty else { continue }
            let fresh = state.withLock { state -> ArraySlice<String> in
                let shown = state.noticesShown[index] ?? 0
                state.noticesShown[index] = notices.count
                return notices.dropFirst(shown)
            }
            guard !fresh.isEmpty else { continue }
            for notice in fresh where messages != .json {
                writeLine(ErrorText.line("note: \(Self.name(of: task)): \(notice)"))
            }
        }
    }

    /// One line for many downloads: how many are done, and the bytes and rate of those running.
    private func aggregateLine(_ tasks: [Int: DownloadTask], columns: Int) -> String {
        let progresses = tasks.values.map(\.currentProgress)
        let done = state.withLock { $0.completed }
        let bytes = progresses.reduce(Int64(0)) { $0 + $1.bytesDone }
        let rate = progresses.reduce(0.0) { $0 + $1.bytesPerSecond }
        let connections = progresses.reduce(0) { $0 + $1.activeConnections }
        let text = "[\(done)/\(count) done, \(tasks.count) running] \(UnitFormatting.bytes(bytes))  \(UnitFormatting.rate(rate))  \(connections) conn"
        return TerminalText.prefix(text, columns: max(1, columns - 1))
    }

    func finished(index: Int, result: DownloadResult, url: String) {
        state.withLock { $0.completed += 1 }
        let seconds = UnitFormatting.seconds(result.duration)
        let name = TerminalText.sanitized(result.path)
        switch style {
        case .none:
            return
        case .json:
            StandardError.write(JSONProgress.doneLine(file: Self.fileName(result.path), path: result.path, bytes: result.bytes, duration: result.duration,
                                                      id: index + 1, url: OutputHabits.shownURL(url)) + "\n")
        case .bar, .plain:
            let place = result.path == "-" ? "to standard output" : name
            writeLine("haul: saved \(place) (\(Self.transferSummary(result, seconds: seconds)))")
        }
    }

    /// A download skipped because its file is already there and complete (`--skip-existing`, or a rerun
    /// of an input file): `haul: PATH: already complete`, or a `done` JSON line with `"skipped":true`.
    func alreadyComplete(index: Int, path: String, url: String) {
        state.withLock { $0.completed += 1 }
        switch style {
        case .none:
            return
        case .json:
            var info = stat()
            let bytes = stat(path, &info) == 0 ? Int64(info.st_size) : 0
            StandardError.write(JSONProgress.skippedLine(file: Self.fileName(path), path: path, bytes: bytes, id: index + 1,
                                                         url: OutputHabits.shownURL(url)) + "\n")
        case .bar, .plain:
            writeLine(ErrorText.line("\(path): already complete"))
        }
    }

    /// Something worth knowing about how a download went (not shown with `-q` or in JSON).
    func note(name: String, _ text: String) {
        guard style == .bar || style == .plain else { return }
        writeLine(ErrorText.line("note: \(name): \(text)"))
    }

    /// A problem that does not fail the run; shown even with `-q`.
    func warning(_ text: String) {
        if messages == .json {
            StandardError.write(JSONProgress.errorLine(file: nil, status: .unexpected, message: text, transient: true) + "\n")
        } else {
            writeLine(ErrorText.line("warning: " + text))
        }
    }

    /// "1.0 GiB in 2.5 s, 409.6 MiB/s"; after a resume, what this run fetched and its rate:
    /// "1.0 GiB; 512.0 MiB fetched in 1.3 s, 393.8 MiB/s".
    static func transferSummary(_ result: DownloadResult, seconds: Double) -> String {
        let fetched = min(result.bytesRequested, result.bytes)
        let rate = UnitFormatting.rate(seconds > 0 ? Double(fetched) / seconds : 0)
        let time = UnitFormatting.fixedPoint(seconds, fractionDigits: 1)
        if fetched < result.bytes {
            return "\(UnitFormatting.bytes(result.bytes)); \(UnitFormatting.bytes(fetched)) fetched in \(time) s, \(rate)"
        }
        return "\(UnitFormatting.bytes(result.bytes)) in \(time) s, \(rate)"
    }

    /// Errors are always printed, even with `--quiet`: one line, or one JSON object, in the CLI's words
    /// (``ErrorText``).
    /// `index` is nil for a failure that concerns no one download (the client could not start).
    func failed(index: Int?, name: String, error: any Error, source: ErrorText.Source) {
        state.withLock { $0.completed += 1 }
        let message = ErrorText.message(for: error, source: source)
        if messages == .json {
            StandardError.write(JSONProgress.errorLine(file: name, error: error, message: message, id: index.map { $0 + 1 }) + "\n")
            return
        }
        switch (error as? HaulError)?.reason {
        // `haul -o - URL | head`: the reader had what it wanted; that is no error worth a line (exit 9 says it).
        case .cancelled?, .outputClosed?: clearBar(); return
        default: break
        }
        writeLine(ErrorText.line(message))
    }

    /// The first stop signal: the bar is retired for good, so that no tick draws it between this line and
    /// the "paused at" lines that follow.
    func interrupting() {
        state.withLock { state in
            let mustErase = state.bar.retire()
            guard style != .none && style != .json else { return }
            if mustErase && style == .bar { StandardError.write(Self.eraseLine) }
            StandardError.write("haul: interrupted; saving progress (press Ctrl-C again to quit at once)\n")
        }
    }

    /// `tasks`: each paused download with its index in the run.
    func interrupted(_ tasks: [(key: Int, value: DownloadTask)], notStarted: Int) {
        for (index, task) in tasks {
            let progress = task.currentProgress
            let name = Self.name(of: task)
            let advice = progress.canResume
                ? "run the same command again to resume"
                : "the server does not support resuming, so running the same command again starts over"
            if messages == .json {
                StandardError.write(JSONProgress.errorLine(file: name, status: .interrupted, message: "interrupted; " + advice,
                                                           transient: true, id: index + 1) + "\n")
            } else {
                let total = progress.total.map { " of " + UnitFormatting.bytes($0) } ?? ""
                writeLine(ErrorText.line("\(name): paused at \(UnitFormatting.bytes(progress.bytesDone))\(total); \(advice)"))
            }
        }
        if notStarted > 0, messages != .json {
            writeLine("haul: \(notStarted) download\(notStarted == 1 ? "" : "s") not started")
        }
    }

    func close() {
        clearBar()
    }

    private static let eraseLine = "\r\u{1B}[K"

    private func clearBar() {
        state.withLock { state in
            if state.bar.clear() && style == .bar { StandardError.write(Self.eraseLine) }
        }
    }

    /// Writes one message line, erasing the bar first, under the lock the bar is drawn under: no tick can
    /// draw between the erase and the line.
    private func writeLine(_ line: String) {
        state.withLock { state in
            if state.bar.clear() && style == .bar { StandardError.write(Self.eraseLine) }
            StandardError.write(line + "\n")
        }
    }
}
