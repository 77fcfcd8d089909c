import Haul
import HaulCommandLine
import Synchronization

/// `-I` and `-r`: one request to one URL, not a download (``HaulClient/responseHeads(_:logger:)``,
/// ``HaulClient/download(_:range:logger:)``). No progress bar and no pause: nothing resumes a range, so the
/// first Ctrl-C (SIGTERM, SIGHUP) cancels the request, removes the range's `.part`, and exits 130.
struct SingleExchangeRun {
    let plan: CommandPlan
    let reporter: ProgressReporter

    func run() async -> ExitStatus {
        guard let (index, download) = plan.downloads.next() else { return .usage }
        let client: HaulClient
        do {
            client = try HaulClient(options: plan.options, logger: plan.verbose ? StandardErrorLogHandler.logger() : nil)
        } catch {
            reporter.failed(index: nil, name: "haul", error: error, source: .commandLine)
            return ExitStatus(classifying: error)
        }
        // The handlers go in before the request starts: a signal in between met the default action (the
        // process died of it, exit 128+N, the range's .part left behind), which a test saw on a loaded machine.
        let stop = StopForwarding()
        do {
            try StopSignals.install(immediateExitStatus: ExitStatus.interrupted.code) { _ in stop.request() }
        } catch {
            reporter.warning("cannot handle SIGINT/SIGTERM/SIGHUP (\(error)); Ctrl-C will leave the range's .part behind")
        }
        let work = Task { [self] in
            if let range = plan.habits.range { return await fetch(range, download: download, index: index, client: client) }
            return await head(download, index: index, client: client)
        }
        stop.attach(work)
        let status = await work.value
        reporter.close()
        await client.shutdown()
        return status
    }

    /// `-r`: the range into the output, then the usual summary line (or JSON `done`), and `-w`.
    private func fetch(_ range: ByteRange, download: CommandPlan.Download, index: Int, client: HaulClient) async -> ExitStatus {
        let url = download.request.url
        do {
            let result = try await client.download(download.request, range: range)
            reporter.finished(index: index, result: result, url: url)
            if let writeOut = plan.habits.writeOut { StandardOutput.write(writeOut.render(OutputHabits.facts(for: result, url: url))) }
            return .success
        } catch {
            fail(error, download: download, index: index)
            return ExitStatus(classifying: error)
        }
    }

    /// `-I`: every head of the redirect chain on stdout, as curl `-I -L` prints them. A final error status is
    /// printed, then failed like any download's (exit 5), as haul always fails on one (curl's `-f`).
    private func head(_ download: CommandPlan.Download, index: Int, client: HaulClient) async -> ExitStatus {
        let url = download.request.url
        do {
            let heads = try await client.responseHeads(download.request)
            for head in heads { StandardOutput.write(head.text) }
            guard let last = heads.last else { throw HaulError.unexpected("no response head") }
            if last.status >= 400 {
                throw HaulError(.httpStatus(status: last.status, reason: last.reason, url: last.url.description), url: last.url.description)
            }
            if let writeOut = plan.habits.writeOut {
                let contentType = last.headers.first { $0.name.lowercased() == "content-type" }?.value
                StandardOutput.write(writeOut.render(WriteOutFacts(
                    httpCode: last.status, sizeDownload: 0, timeTotal: 0, urlEffective: last.url.description,
                    url: OutputHabits.shownURL(url), filenameEffective: nil, contentType: contentType,
                    numRedirects: heads.count - 1, exitCode: 0, errorMessage: nil)))
            }
            return .success
        } catch {
            fail(error, download: download, index: index)
            return ExitStatus(classifying: error)
        }
    }

    private func fail(_ error: any Error, download: CommandPlan.Download, index: Int) {
        let name = ProgressReporter.fileName(download.expectedPath)
        reporter.failed(index: index, name: name, error: error, source: download.source)
        if let writeOut = plan.habits.writeOut {
            StandardOutput.write(writeOut.render(OutputHabits.facts(
                for: error, url: download.request.url, path: download.expectedPath, progress: nil, source: download.source)))
        }
    }
}

/// Hands a stop signal to the request's task, also one that came before the task existed.
private final class StopForwarding: Sendable {
    private let state = Mutex<(requested: Bool, task: Task<ExitStatus, Never>?)>((false, nil))

    /// A stop signal came: cancels the task, or the task to come.
    func request() {
        state.withLock { state -> Task<ExitStatus, Never>? in
            state.requested = true
            return state.task
        }?.cancel()
    }

    /// The request's task, cancelled at once if a stop came before it.
    func attach(_ task: Task<ExitStatus, Never>) {
        let requested = state.withLock { state -> Bool in
            state.task = task
            return state.requested
        }
        if requested { task.cancel() }
    }
}
