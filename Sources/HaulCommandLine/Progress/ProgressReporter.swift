import Haul
import HaulHTTP
import HaulIO
import Synchronization
import SystemPackage

/// How progress is shown: what `--progress`, `-q` and a terminal on stderr decide.
public enum ProgressStyle: Sendable, Equatable {
    /// A live bar, redrawn in place (stderr is a terminal).
    case bar
    /// An occasional plain line (stderr is a file or pipe).
    case plain
    case json
    case none
}

/// How errors and outcomes are written: text lines, or (`--progress json`, even with `-q`) JSON objects.
public enum MessageFormat: Sendable, Equatable {
    case text
    case json
}

/// One running download as ``ProgressReporter`` shows it at a tick: the name it is shown under, its URL (JSON
/// lines are in URL order) and one snapshot of its progress.
public struct ReportedDownload: Sendable {
    public var name: String
    public var url: String
    public var progress: DownloadProgress
    /// Whether its bytes go to a stream (`-o -`): no file to resume into, whatever the server supports.
    public var isStream: Bool
    /// Whether its resume journal is on disk (asked when a checkpoint failed: an earlier one may be there).
    public var hasJournal: Bool

    public init(name: String, url: String, progress: DownloadProgress, isStream: Bool = false, hasJournal: Bool = true) {
        self.name = name
        self.url = url
        self.progress = progress
        self.isStream = isStream
        self.hasJournal = hasJournal
    }

    /// `task` now: one snapshot of its progress, and the name that snapshot gives it.
    public init(_ task: DownloadTask) {
        let progress = task.currentProgress
        let isStream: Bool
        if case .stream = task.request.destination { isStream = true } else { isStream = false }
        let journal = WorkingFileNames.destination(ofPartial: progress.partialPath).map(WorkingFileNames.journal(of:))
        let hasJournal = progress.checkpointFailure == nil || journal.map(OutputFile.hasEntry) == true
        self.init(name: ProgressReporter.name(of: task, progress: progress), url: task.request.url, progress: progress,
                  isStream: isStream, hasJournal: hasJournal)
    }
}

/// Prints progress and outcomes in the chosen style; safe to call from any task.
///
/// Every byte goes through `output` (the CLI's is ``StandardError/write(_:)``), so tests capture what a run
/// would show. The bar and the message lines share one lock (``BarLineState``): a message erases the bar first,
/// and no tick draws between the erase and the line.
public final class ProgressReporter: Sendable {
    public let style: ProgressStyle
    /// Text lines, or JSON objects (`--progress json`, with or without `-q`).
    public let messages: MessageFormat
    /// Downloads in the run, for the line that sums several up.
    public let count: Int
    private let output: @Sendable (String) -> Void
    private let columns: @Sendable () -> Int
    private let state = Mutex(State())

    private struct State {
        var throttles: [Int: PlainProgressThrottle] = [:]
        var bar = BarLineState()
        var completed = 0
        var warned: Set<Int> = []
        /// How many of each download's notices were printed.
        var noticesShown: [Int: Int] = [:]
    }

    /// `output` receives every text written, newlines included; `columns` is the terminal's width when a bar
    /// is drawn.
    public init(style: ProgressStyle, messages: MessageFormat, count: Int,
                output: @escaping @Sendable (String) -> Void = StandardError.write,
                columns: @escaping @Sendable () -> Int = Terminal.columns) {
        self.style = style
        self.messages = messages
        self.count = count
        self.output = output
        self.columns = columns
    }

    /// Drops what was kept about a download that has ended, so that a long list costs no more memory than
    /// a short one.
    public func forget(index: Int) {
        state.withLock { state in
            state.throttles[index] = nil
            state.warned.remove(index)
            state.noticesShown[index] = nil
        }
    }

    /// The name a download is shown under: its file name once known, else the URL's last segment.
    public static func name(of task: DownloadTask) -> String {
        name(of: task, progress: task.currentProgress)
    }

    static func name(of task: DownloadTask, progress: DownloadProgress) -> String {
        var path = progress.partialPath
        if let destination = WorkingFileNames.destination(ofPartial: path) { path = destination }
        if path.isEmpty {
            switch task.request.destination {
            case .file(let file): path = file
            case .stream, .memory, .directory: path = task.request.url
            }
        }
        return TerminalText.sanitized(fileName(path))
    }

    /// The last component of `path` (`path` itself when it has none: empty, or only slashes).
    public static func fileName(_ path: String) -> String {
        // Found by bytes: splitting the path into Characters cost more than the rest of a tick.
        let utf8 = path.utf8
        guard let last = utf8.lastIndex(where: { $0 != UInt8(ascii: "/") }) else { return path }
        let start = utf8[..<last].lastIndex(of: UInt8(ascii: "/")).map(utf8.index(after:)) ?? utf8.startIndex
        // Both bounds are next to a `/` (or an end of the text): on scalar boundaries.
        return String(Substring(path.unicodeScalars[start..<utf8.index(after: last)]))
    }

    /// A tick for the running tasks as they are now (one snapshot each).
    public func tick(_ tasks: [Int: DownloadTask]) {
        guard !tasks.isEmpty else { return }
        guard style == .none else { return tick(tasks.mapValues(ReportedDownload.init)) }
        // Nothing is drawn: only a notice or a failed checkpoint is shown, and only the downloads with one
        // need a name (a `-q` list of thousands of small files names none).
        var shown: [Int: ReportedDownload] = [:]
        for (index, task) in tasks {
            let progress = task.currentProgress
            guard Self.hasMessages(progress) else { continue }
            shown[index] = ReportedDownload(name: Self.name(of: task, progress: progress), url: task.request.url,
                                            progress: progress)
        }
        tick(shown)
    }

    /// Whether `progress` carries something shown whatever the style: a notice or a failed checkpoint.
    static func hasMessages(_ progress: DownloadProgress) -> Bool {
        !progress.notices.isEmpty || progress.checkpointFailure != nil
    }

    /// One beat of the display, for the running downloads by their index in the run: warnings and notices
    /// not shown yet, then the bar, the plain lines that are due, or a JSON line each.
    public func tick(_ downloads: [Int: ReportedDownload]) {
        guard !downloads.isEmpty else { return }
        warnAboutFailedCheckpoints(downloads)
        showNotices(downloads)
        switch style {
        case .none:
            return
        case .bar:
            let columns = columns()
            let line: String
            if count == 1, let download = downloads.values.first {
                // One column short of the width, so the cursor never lands in the last column and wraps.
                line = ProgressBar(name: download.name).line(for: download.progress, columns: columns - 1)
            } else {
                line = aggregateLine(downloads, columns: columns)
            }
            // Under the lock: a stop that retired the bar meanwhile wins (``BarLineState``).
            state.withLock { if $0.bar.draw() { output(ProgressBar.redraw(line: line)) } }
        case .plain:
            for (index, download) in downloads.sorted(by: { $0.key < $1.key }) {
                let progress = download.progress
                guard progress.phase == .downloading else { continue }
                let due = state.withLock { state in
                    var throttle = state.throttles[index] ?? PlainProgressThrottle()
                    defer { state.throttles[index] = throttle }
                    return throttle.shouldPrint(progress)
                }
                if due { output(PlainProgressLine.line(name: download.name, progress: progress) + "\n") }
            }
        case .json:
            for (index, download) in downloads.sorted(by: { $0.key < $1.key }) {
                let progress = download.progress
                guard progress.phase == .downloading || progress.phase == .connecting else { continue }
                output(JSONProgress.progressLine(file: download.name, progress: progress, id: index + 1,
                                                 url: HTTPURL.displayText(of: download.url)) + "\n")
            }
        }
    }

    /// The notices of a download that has ended and that no beat showed yet (a download quicker than the
    /// beat: a piece fetched again, a mirror dropped), before its end is reported.
    public func showRemainingNotices(index: Int, task: DownloadTask) {
        let progress = task.currentProgress
        // Most downloads end with no notice: then no name is made for one.
        guard !progress.notices.isEmpty else { return }
        showNotices([index: ReportedDownload(name: Self.name(of: task, progress: progress), url: task.request.url,
                                             progress: progress)])
    }

    /// A checkpoint that failed (say, no space for the journal) does not stop the download, but a crash
    /// would then re-fetch more than usual: say so once per download, even with `--quiet`.
    private func warnAboutFailedCheckpoints(_ downloads: [Int: ReportedDownload]) {
        for (index, download) in downloads {
            guard let failure = download.progress.checkpointFailure else { continue }
            let first = state.withLock { $0.warned.insert(index).inserted }
            guard first else { continue }
            let message = "cannot update the resume journal (\(failure)); the download goes on, but after a crash more would be fetched again"
            if messages == .json {
                output(JSONProgress.errorLine(file: download.name, status: .output, message: message, transient: true,
                                              id: index + 1) + "\n")
            } else {
                writeLine(ErrorText.line("warning: \(download.name): \(message)"))
            }
        }
    }

    /// What the engine says the user should know (a resume from another URL): each once, even with
    /// `--quiet`, since it explains what happens to their file.
    private func showNotices(_ downloads: [Int: ReportedDownload]) {
        for (index, download) in downloads.sorted(by: { $0.key < $1.key }) {
            let notices = download.progress.notices
            guard !notices.isEmpty else { continue }
            let fresh = state.withLock { state -> ArraySlice<String> in
                let shown = state.noticesShown[index] ?? 0
                state.noticesShown[index] = notices.count
                return notices.dropFirst(shown)
            }
            guard !fresh.isEmpty else { continue }
            for notice in fresh where messages != .json {
                writeLine(ErrorText.line("note: \(download.name): \(notice)"))
            }
        }
    }

    /// One line for many downloads: how many are done, and the bytes and rate of those running.
    private func aggregateLine(_ downloads: [Int: ReportedDownload], columns: Int) -> String {
        let progresses = downloads.values.map(\.progress)
        let done = state.withLock { $0.completed }
        let bytes = progresses.reduce(Int64(0)) { $0 + $1.bytesDone }
        let rate = progresses.reduce(0.0) { $0 + $1.bytesPerSecond }
        let connections = progresses.reduce(0) { $0 + $1.activeConnections }
        let text = "[\(done)/\(count) done, \(downloads.count) running] \(UnitFormatting.bytes(bytes))  \(UnitFormatting.rate(rate))  \(connections) conn"
        return TerminalText.prefix(text, columns: max(1, columns - 1))
    }

    /// A download that finished: `haul: saved PATH (...)`, or a `done` JSON line.
    public func finished(index: Int, result: DownloadResult, url: String) {
        state.withLock { $0.completed += 1 }
        switch style {
        case .none:
            // Nothing shown: nothing formatted either (a `-q` list of thousands of files).
            return
        case .json:
            output(JSONProgress.doneLine(file: Self.fileName(result.path), path: result.path, bytes: result.bytes, duration: result.duration,
                                         id: index + 1, url: HTTPURL.displayText(of: url)) + "\n")
        case .bar, .plain:
            let seconds = UnitFormatting.seconds(result.duration)
            let place = result.path == "-" ? "to standard output" : TerminalText.sanitized(result.path)
            writeLine("haul: saved \(place) (\(Self.transferSummary(result, seconds: seconds)))")
        }
    }

    /// A download skipped because its file is already there and complete (`--skip-existing`, or a rerun
    /// of an input file): `haul: PATH: already complete`, or a `done` JSON line with `"skipped":true` and the
    /// file's size (0 if it cannot be read).
    public func alreadyComplete(index: Int, path: String, url: String) {
        kept(index: index, path: path, url: url, saying: "already complete")
    }

    /// A download whose file at `path` is the server's (`-N` and a 304): nothing fetched, the file kept.
    public func upToDate(index: Int, path: String, url: String) {
        kept(index: index, path: path, url: url, saying: "up to date")
    }

    /// A download that fetched nothing and kept the file there: `haul: PATH: <what>`, or a `done` JSON line
    /// with `"skipped":true`.
    private func kept(index: Int, path: String, url: String, saying what: String) {
        state.withLock { $0.completed += 1 }
        switch style {
        case .none:
            return
        case .json:
            let bytes = FilePath(path).existingStatus()?.size ?? 0
            output(JSONProgress.skippedLine(file: Self.fileName(path), path: path, bytes: bytes, id: index + 1,
                                            url: HTTPURL.displayText(of: url)) + "\n")
        case .bar, .plain:
            writeLine(ErrorText.line("\(path): \(what)"))
        }
    }

    /// Something worth knowing about how a download went (not shown with `-q` or in JSON).
    public func note(name: String, _ text: String) {
        guard style == .bar || style == .plain else { return }
        writeLine(ErrorText.line("note: \(name): \(text)"))
    }

    /// A problem that does not fail the run; shown even with `-q`.
    public func warning(_ text: String) {
        if messages == .json {
            output(JSONProgress.errorLine(file: nil, status: .unexpected, message: text, transient: true) + "\n")
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
    /// (``ErrorText``). `index` is nil for a failure that concerns no one download (the client could not start).
    public func failed(index: Int?, name: String, error: any Error, source: ErrorText.Source) {
        state.withLock { $0.completed += 1 }
        let message = ErrorText.message(for: error, source: source)
        if messages == .json {
            output(JSONProgress.errorLine(file: name, error: error, message: message, id: index.map { $0 + 1 }) + "\n")
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
    public func interrupting() {
        state.withLock { state in
            let mustErase = state.bar.retire()
            guard style != .none && style != .json else { return }
            if mustErase && style == .bar { output(Self.eraseLine) }
            output("haul: interrupted; saving progress (press Ctrl-C again to quit at once)\n")
        }
    }

    /// The run stopped on a signal, for the paused tasks (each with its index in the run) as they are now.
    public func interrupted(_ tasks: [(key: Int, value: DownloadTask)], notStarted: Int) {
        interrupted(tasks.map { ($0.key, ReportedDownload($0.value)) }, notStarted: notStarted)
    }

    /// The run stopped on a signal: where each paused download stands and how to go on, and how many never
    /// started.
    public func interrupted(_ downloads: [(index: Int, download: ReportedDownload)], notStarted: Int) {
        for (index, download) in downloads {
            let progress = download.progress
            let advice = Self.resumeAdvice(canResume: progress.canResume, isStream: download.isStream,
                                           checkpointFailed: progress.checkpointFailure != nil, hasJournal: download.hasJournal)
            if messages == .json {
                output(JSONProgress.errorLine(file: download.name, status: .interrupted, message: "interrupted; " + advice,
                                              transient: true, id: index + 1) + "\n")
            } else {
                let total = progress.total.map { " of " + UnitFormatting.bytes($0) } ?? ""
                writeLine(ErrorText.line("\(download.name): paused at \(UnitFormatting.bytes(progress.bytesDone))\(total); \(advice)"))
            }
        }
        if notStarted > 0, messages != .json {
            writeLine("haul: \(notStarted) download\(notStarted == 1 ? "" : "s") not started")
        }
    }

    /// How a paused download goes on: resumed, or started over — because its bytes went to a stream (`-o -`
    /// keeps no file, whatever the server supports; it used to blame the server), or because the server
    /// supports no ranges or sends no validator.
    /// A checkpoint that failed (a name too long for the journal's, a full disk) leaves the last one written,
    /// or none: the next run then starts over, which "run the same command again to resume" did not say.
    static func resumeAdvice(canResume: Bool, isStream: Bool, checkpointFailed: Bool = false, hasJournal: Bool = true) -> String {
        if canResume && checkpointFailed {
            return hasJournal ? "its progress since the last checkpoint could not be recorded; run the same command again to resume from that checkpoint"
                              : "its progress could not be recorded, so running the same command again starts over"
        }
        if canResume { return "run the same command again to resume" }
        if isStream { return "standard output keeps no partial file, so running the same command again starts over" }
        return "the server does not support resuming, so running the same command again starts over"
    }

    /// The run is over: the bar, if shown, is erased.
    public func close() {
        clearBar()
    }

    static let eraseLine = "\r\u{1B}[K"

    private func clearBar() {
        state.withLock { state in
            if state.bar.clear() && style == .bar { output(Self.eraseLine) }
        }
    }

    /// Writes one message line, erasing the bar first, under the lock the bar is drawn under: no tick can
    /// draw between the erase and the line.
    private func writeLine(_ line: String) {
        state.withLock { state in
            if state.bar.clear() && style == .bar { output(Self.eraseLine) }
            output(line + "\n")
        }
    }
}
