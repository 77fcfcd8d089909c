import Haul
import HaulCommandLine
import HaulSessions
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
    /// Finished by a stop that found nothing left to interrupt (one that did exits the process with
    /// ``ExitStatus/interrupted`` instead): a run loop that ends while a stop is under way waits for it.
    private let stopSettled = AsyncStream<Never>.makeStream()
    /// How many of the plan's downloads have been started.
    private let started = Mutex(0)
    /// The client, once made, so that a stop can shut its loop down before exiting.
    private let clientBox = Mutex<HaulClient?>(nil)
    private let reporter: ProgressReporter
    /// How the downloads tell the run loop their ends (``run()``).
    private let inbox = EventInbox<Event>()
    /// The next index for a download of a followed Metalink's file: after the plan's own.
    private let nextFollowedIndex: Mutex<Int>
    /// The destination directory's names before the first download started, for a run of several
    /// downloads that looks for earlier runs' files (nil: each is looked for on its own).
    private let snapshot: DirectorySnapshot?
    /// Which downloads are told that nothing of their file was there (``ListedAbsenceHints``).
    private let listedAbsence: ListedAbsenceHints

    init(plan: CommandPlan) {
        self.plan = plan
        reporter = ProgressReporter(style: plan.progress, messages: plan.messages, count: plan.downloads.count)
        nextFollowedIndex = Mutex(plan.downloads.count)
        // Read once here, before any download creates a file in it: a list into a fresh directory then
        // makes no `stat` per file (``DirectorySnapshot``). Bounded, so that a list of a few files into a
        // directory of millions does not read them all.
        let looksForEarlierRuns = plan.skipsExisting || plan.downloads.source == .inputFile
        snapshot = plan.downloads.count > 1 && looksForEarlierRuns && !plan.habits.isSingleExchange
            ? DirectoryListing.snapshot(of: plan.destinationDirectory, limit: max(4096, 2 * plan.downloads.count))
            : nil
        listedAbsence = ListedAbsenceHints(snapshot: snapshot, count: plan.downloads.count)
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
        let downloads = plan.downloads
        // The downloads tell their ends through one inbox, from the thread that ends them: no Swift task per
        // download, and ends that come while this loop is busy are taken together, with one wake-up. An end
        // with nothing to show (`-q`, a success) does not wake this loop at all: it is taken with the next
        // one that does, or with a full batch (``EventInbox/quietLimit``).
        // The next download starts on the thread that freed its slot (the event loop, mostly), not after a
        // hop to this task and back (``RunSlots``).
        // `-j` bounds the downloads transferring at once. A download whose bytes are all in waits for its
        // durable commit without holding a slot (commits are grouped: many files share one wait for the
        // disk), up to `finishingLimit` of them, which bounds open files and memory; the more may wait, the
        // larger the commit's next batch grows while one is on the disk (``RunSlots/finishingLimit(jobs:maximumConnections:openFileLimit:)``).
        let slots = RunSlots(jobs: plan.jobs, finishingLimit: RunSlots.finishingLimit(
            jobs: plan.jobs, maximumConnections: plan.options.maximumConnections, openFileLimit: openFileLimit()))
        let quietEnds = plan.progress == .none && plan.messages == .text && plan.habits.writeOut == nil
        /// Starts downloads while slots are free and the list has more; each already complete is handed to
        /// this loop to report (it is not reported here: this may run on the event loop).
        @Sendable func fill() {
            while let (index, download) = slots.reserve(stopping: stopping.withLock({ $0 }), downloads.next) {
                started.withLock { $0 = max($0, index + 1) }
                // Predicted once (for a directory download it is made from the URL): both questions below ask it.
                let path = download.expectedPath
                if alreadyComplete(download, path: path, listed: snapshot) {
                    slots.release(transferring: true)
                    inbox.post(.skipped(index, download))
                    continue
                }
                // The engine then does not look for the file and its `.part` (``ListedAbsenceHints``).
                let listed = listedAbsence.tell(path) ? path : nil
                let task = start(download.request, listedAbsent: listed, on: client)
                running.withLock { $0[index] = task }
                task.whenTransferEnds { [unowned task] in
                    // Ended already (no durable commit to wait for, or it failed): one event for both.
                    if let result = task.endResult { return ended(index, task, download, result, transferring: true) }
                    slots.transferEnded()
                    fill()
                    task.whenEnded { [unowned task] result in ended(index, task, download, result, transferring: false) }
                }
            }
        }
        /// A download ended (on the thread that ended it): its slot goes to the next one, and this loop hears
        /// of it — at once when it has something to show or when it was the run's last.
        @Sendable func ended(_ index: Int, _ task: DownloadTask, _ download: CommandPlan.Download,
                             _ result: Result<DownloadResult, HaulError>, transferring: Bool) {
            slots.release(transferring: transferring)
            fill()
            let succeeded: Bool, isMetalinkDocument: Bool
            switch result {
            case .success(let result): (succeeded, isMetalinkDocument) = (true, result.isMetalink)
            case .failure: (succeeded, isMetalinkDocument) = (false, false)
            }
            let quiet = QuietEnd.isQuiet(runShowsNothing: quietEnds, succeeded: succeeded,
                                         isMetalinkDocument: isMetalinkDocument, stopping: stopping.withLock { $0 })
            inbox.post(.ended(index, task, download, result), wake: !quiet)
            // Asked after posting: of two downloads that end at once on two threads, the one that asks last
            // has posted, and it finds the run idle (it stays so: nothing starts once the list is exhausted).
            if quiet && slots.isIdle { inbox.flush() }
        }
        /// Metalink documents whose listed files are being downloaded (``follow(_:index:download:)``).
        var following = 0
        // Downloads made ahead here, between batches: enough for the ends that may come before this loop
        // is woken again (a batch of quiet ones, and a slot's worth more).
        let ahead = EventInbox<Event>.defaultQuietLimit + 2 * plan.jobs
        downloads.prepare(upTo: ahead)
        fill()
        // Every reserved download is `open` until its end (or skip) is taken here.
        while !slots.isDone || following > 0 {
            for event in await inbox.take() {
                switch event {
                case .skipped(let index, let download):
                    slots.reported()
                    reporter.alreadyComplete(index: index, path: download.expectedPath, url: download.request.url)
                case .ended(let index, let task, let download, let result):
                    slots.reported()
                    if case .success(let document) = result, document.isMetalink {
                        running.withLock { _ = $0.removeValue(forKey: index) }
                        reporter.forget(index: index)
                        following += 1
                        Task { [self] in inbox.post(.followed(await follow(document, index: index, download: download))) }
                        continue
                    }
                    let status = report(result, index: index, task: task, download: download)
                    // The first failure decides the exit status; later ones are reported but do not override it.
                    if worst == .success { worst = status }
                case .followed(let status):
                    following -= 1
                    if worst == .success { worst = status }
                }
            }
            downloads.prepare(upTo: ahead)
        }
        if let error = downloads.error {
            reporter.failed(index: nil, name: "haul", error: error, source: .commandLine)
            if worst == .success { worst = ExitStatus(classifying: error) }
        }
        // A stop makes the list end early (no download starts once it began): the loop can end before the
        // stop has paused what ran and said what is left, and returning now would exit 0 over its exit 130.
        // Only the stop knows whether anything was left; it exits the process if so.
        if stopping.withLock({ $0 }) { for await _ in stopSettled.stream {} }
        ticker.cancel()
        reporter.close()
        await client.shutdown()
        return worst
    }

    /// Starts `request`, with `--url-command` as its refresher when given: why it gave up is a warning
    /// (shown with `-q` too), a URL it gave a note. `listedAbsent`: the path the run's listing of the
    /// directory did not hold (``DownloadRequest/listedAbsentPath``).
    private func start(_ request: DownloadRequest, listedAbsent: String? = nil, on client: HaulClient) -> DownloadTask {
        if let listedAbsent {
            var told = request
            told.listedAbsentPath = listedAbsent
            return start(told, on: client)
        }
        guard let command = plan.urlCommand else { return client.start(request) }
        let name = URLText.fileName(forURL: request.url) ?? request.url
        return client.start(request, refreshingURL: command.refresher { [reporter] line, gaveUp in
            if gaveUp { reporter.warning(line) } else { reporter.note(name: name, line) }
        })
    }

    /// What the run loop hears from a download (by its index in the run): it ended (with the task and the
    /// download, to report it), or it was not started since its file is already complete.
    ///
    /// Indirect: a payload of a request, a task and a result is one reference to move around, not a dozen
    /// fields to retain at each copy (posting, batching and taking cost that per file).
    private indirect enum Event: Sendable {
        case ended(Int, DownloadTask, CommandPlan.Download, Result<DownloadResult, HaulError>)
        case skipped(Int, CommandPlan.Download)
        /// The files of a followed Metalink document all ended, with this status for the lot.
        case followed(ExitStatus)
    }

    /// Waits for the end of `task` (a file of a followed Metalink), reports it, and says how it went.
    private func outcome(index: Int, task: DownloadTask, download: CommandPlan.Download) async -> ExitStatus {
        let result: Result<DownloadResult, HaulError>
        do { result = .success(try await task.value) } catch { result = .failure(error) }
        return report(result, index: index, task: task, download: download)
    }

    /// Reports how `task` ended and says what that means for the exit status.
    private func report(_ outcome: Result<DownloadResult, HaulError>, index: Int, task: DownloadTask,
                        download: CommandPlan.Download) -> ExitStatus {
        // A stop's own `client.shutdown()` ends the downloads it paused (`clientShutDown`): the stop has
        // reported them already ("paused at ..."), and the process is exiting with its own status.
        if case .failure(let error) = outcome, case .clientShutDown = error.reason, stopping.withLock({ $0 }) { return .interrupted }
        let status: ExitStatus
        switch outcome {
        case .success(let result):
            reporter.showRemainingNotices(index: index, task: task)
            if plan.usedOneConnectionForLackOfRanges(result) {
                reporter.note(name: ProgressReporter.fileName(result.path),
                              "the server does not support ranges; used one connection")
            }
            if result.upToDate {
                reporter.upToDate(index: index, path: result.path, url: download.request.url)
            } else {
                reporter.finished(index: index, result: result, url: download.request.url)
            }
            if let writeOut = plan.habits.writeOut {
                StandardOutput.write(writeOut.render(OutputHabits.facts(for: result, url: download.request.url)))
            }
            status = .success
        case .failure(let error):
            if case .destinationExists(let path) = error.reason, alreadyComplete(download, path: path, foundTakenAfterFetching: true) {
                // Named by the server after all, and that file is there: an earlier run's.
                reporter.alreadyComplete(index: index, path: path, url: download.request.url)
                status = .success
            } else {
                reporter.showRemainingNotices(index: index, task: task)
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

    /// Downloads the files of the Metalink document `download` was answered with (``DownloadResult/metalink``),
    /// as `-M` would: each into `--dir` under its Metalink name, from its mirrors, checked against its hash
    /// and size; at most `-j` at a time. The worst of their statuses is the download's.
    private func follow(_ result: DownloadResult, index: Int, download: CommandPlan.Download) async -> ExitStatus {
        let name = OutputHabits.shownURL(download.request.url)
        guard let following = plan.followedMetalinks, let metalink = result.metalink,
              let client = clientBox.withLock({ $0 }) else {
            let error = UsageError("\(name) answered with a Metalink document that cannot be followed here")
            reporter.failed(index: index, name: name, error: error, source: download.source)
            return ExitStatus(classifying: error)
        }
        var files: [CommandPlan.Download] = []
        do {
            // Credentials were given for the URL that answered, not for the origins its document names.
            let document = try HTTPURL(download.request.url)
            for file in metalink.files {
                files.append(try following.maker.download(metalinkFile: file, dir: following.dir, followedFrom: document,
                                                          credentialHeaders: plan.options.headersCarryCredentials))
            }
        } catch {
            reporter.failed(index: index, name: name, error: error, source: download.source)
            return ExitStatus(classifying: error)
        }
        reporter.note(name: name, "a Metalink document: downloading the \(files.count == 1 ? "file" : "\(files.count) files") it lists")
        return await withTaskGroup(of: ExitStatus.self) { group in
            var pending = files.makeIterator()
            func startNext() -> Bool {
                guard !stopping.withLock({ $0 }), let file = pending.next() else { return false }
                let fileIndex = nextFollowedIndex.withLock { next in
                    defer { next += 1 }
                    return next
                }
                let task = start(file.request, on: client)
                running.withLock { $0[fileIndex] = task }
                group.addTask { [self] in await outcome(index: fileIndex, task: task, download: file) }
                return true
            }
            var worst = ExitStatus.success
            var started = 0
            while started < plan.jobs, startNext() { started += 1 }
            for await status in group {
                if worst == .success { worst = status }
                _ = startNext()
            }
            return worst
        }
    }

    /// Whether the file at `path` counts as already complete (``ExistingDestination``): with
    /// `--skip-existing` whenever it exists, with `-i` when it exists without an interrupted download (a
    /// journal) beside it. `listed`: the destination directory as the run found it; a name it did not hold is
    /// not looked for. `foundTakenAfterFetching`: asked because the download itself found the name taken (the
    /// engine's `destinationExists`): a `NAME.part` beside it is then most likely its own bytes, kept because
    /// the name appeared while it fetched (another program, another run) — not an earlier run's file (exit 9).
    private func alreadyComplete(_ download: CommandPlan.Download, path: String, listed: DirectorySnapshot? = nil,
                                 foundTakenAfterFetching: Bool = false) -> Bool {
        if case .stream = download.request.destination { return false }
        // With -N an existing file is not complete by its name: the conditional request asks the server.
        if download.request.onlyIfChanged && !plan.skipsExisting { return false }
        let skipExisting = plan.skipsExisting, fromInputFile = download.source == .inputFile
        let allowOverwrite = download.request.replacesExisting
        // Only the checks the verdict can depend on: with a list of thousands of small files, two `stat`
        // calls per file that cannot change the answer are a measurable share of the work.
        let destinationExists = !allowOverwrite && (skipExisting || fromInputFile)
            && listed?.mayHold(path) != false && OutputFile.exists(path)
        let interrupted = destinationExists && !skipExisting
            && OutputFile.exists(foundTakenAfterFetching ? WorkingFileNames.partial(of: path) : WorkingFileNames.journal(of: path))
        let verdict = ExistingDestination.verdict(
            destinationExists: destinationExists, interruptedDownloadExists: interrupted,
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
            // The run loop (`report(_:index:task:download:)`) reports it, then forgets it; woken for an end
            // posted quietly before the stop.
            while running.withLock({ $0[index] != nil }) {
                inbox.flush()
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        let paused = tasks.sorted { $0.key < $1.key }.filter { $0.value.currentProgress.phase == .paused }
        let notStarted = plan.downloads.count - started.withLock { $0 }
        // Everything had finished (or failed) before the pause could take hold: the normal ending reports it.
        guard !paused.isEmpty || notStarted > 0 else { stopSettled.continuation.finish(); return }
        reporter.interrupted(paused, notStarted: notStarted)
        // exit() runs OpenSSL's cleanup: the loop thread must not be inside OpenSSL then.
        if let client = clientBox.withLock({ $0 }) { await client.shutdown() }
        Glibc.exit(ExitStatus.interrupted.code)
    }
}
