import Foundation
import Synchronization
import Testing
@testable import Haul  // DownloadResult's memberwise initializer
@testable import HaulCommandLine
import HaulJournal

/// Everything a reporter wrote, in order.
private final class CapturedOutput: Sendable {
    private let texts = Mutex<[String]>([])

    func write(_ text: String) { texts.withLock { $0.append(text) } }

    /// What was written since the last call.
    func take() -> [String] { texts.withLock { texts in defer { texts.removeAll() }; return texts } }
}

/// A reporter whose output is captured, on a terminal `columns` wide.
private func capturedReporter(_ style: ProgressStyle, messages: MessageFormat = .text, count: Int = 1,
                              columns: Int = 100) -> (ProgressReporter, CapturedOutput) {
    let output = CapturedOutput()
    let reporter = ProgressReporter(style: style, messages: messages, count: count,
                                    output: { output.write($0) }, columns: { columns })
    return (reporter, output)
}

private func snapshot(_ phase: DownloadProgress.Phase = .downloading, done: Int64, total: Int64? = 1000,
                      elapsed: Duration = .seconds(1), checkpointFailure: JournalError? = nil,
                      notices: [String] = [], canResume: Bool = true) -> DownloadProgress {
    var progress = DownloadProgress(
        phase: phase, bytesDone: done, total: total, bytesPerSecond: 100, estimatedTimeRemaining: .seconds(5),
        activeConnections: 2, completedRanges: [0..<done], segments: [], elapsed: elapsed,
        partialPath: "/downloads/a.iso.part", checkpointFailure: checkpointFailure)
    progress.notices = notices
    progress.canResume = canResume
    return progress
}

private func download(_ progress: DownloadProgress, name: String = "a.iso", url: String = "http://h/a.iso") -> ReportedDownload {
    ReportedDownload(name: name, url: url, progress: progress)
}

private let erase = "\r\u{1B}[K"

/// ``ProgressReporter`` with its output captured: what a run shows on stderr, and in which order.
@Suite struct ProgressReporterTests {
    @Test func theBarIsRedrawnInPlaceAndErasedBeforeAMessage() {
        let (reporter, output) = capturedReporter(.bar, columns: 100)
        let progress = snapshot(done: 420)
        reporter.tick([0: download(progress)])
        // One column short of the terminal, so that the cursor never wraps.
        let bar = ProgressBar(name: "a.iso").line(for: progress, columns: 99)
        #expect(output.take() == ["\r" + bar + "\u{1B}[K"])
        reporter.note(name: "a.iso", "the server does not support ranges; used one connection")
        #expect(output.take() == [erase, "haul: note: a.iso: the server does not support ranges; used one connection\n"])
        // The bar is gone: the next message has nothing to erase, and neither has the end of the run.
        reporter.warning("something odd")
        reporter.close()
        #expect(output.take() == ["haul: warning: something odd\n"])
        reporter.tick([0: download(progress)])
        reporter.close()
        #expect(output.take().last == erase)
    }

    @Test func severalDownloadsShareOneLineThatCountsThem() {
        let (reporter, output) = capturedReporter(.bar, count: 3, columns: 200)
        reporter.failed(index: 2, name: "c.iso", error: HaulError(.cancelled), source: .commandLine)
        reporter.tick([0: download(snapshot(done: 1024)), 1: download(snapshot(done: 1024), name: "b.iso")])
        let written = output.take()
        #expect(written.count == 1)
        #expect(written.first?.hasPrefix("\r[1/3 done, 2 running] 2.0 KiB  ") == true, "\(written)")
        #expect(written.first?.hasSuffix("  4 conn\u{1B}[K") == true, "\(written)")
    }

    @Test func aStopRetiresTheBarForGoodAndSaysHowToGoOn() {
        let (reporter, output) = capturedReporter(.bar)
        let paused = snapshot(.paused, done: 500)
        reporter.tick([0: download(snapshot(done: 400))])
        _ = output.take()
        reporter.interrupting()
        #expect(output.take() == [erase, "haul: interrupted; saving progress (press Ctrl-C again to quit at once)\n"])
        reporter.tick([0: download(snapshot(done: 450))])
        #expect(output.take().isEmpty, "no bar after the stop began")
        let streamed = snapshot(.paused, done: 7, total: nil, canResume: false)
        var toStandardOutput = download(streamed, name: "o.bin")
        toStandardOutput.isStream = true
        reporter.interrupted([(0, download(paused)), (1, download(streamed, name: "s.bin")), (2, toStandardOutput)], notStarted: 2)
        #expect(output.take() == [
            "haul: a.iso: paused at \(UnitFormatting.bytes(500)) of \(UnitFormatting.bytes(1000)); run the same command again to resume\n",
            "haul: s.bin: paused at \(UnitFormatting.bytes(7)); the server does not support resuming, so running the same command again starts over\n",
            // `-o -` with a server that supports ranges: the stream, not the server, is why it starts over.
            "haul: o.bin: paused at \(UnitFormatting.bytes(7)); standard output keeps no partial file, so running the same command again starts over\n",
            "haul: 2 downloads not started\n",
        ])
    }

    /// A stop whose checkpoint failed (say, a name too long for the journal's) said "run the same command
    /// again to resume" with no journal on disk: the next run started over.
    @Test func aStopWhoseCheckpointFailedSaysWhatTheNextRunDoes() {
        #expect(ProgressReporter.resumeAdvice(canResume: true, isStream: false) == "run the same command again to resume")
        #expect(ProgressReporter.resumeAdvice(canResume: true, isStream: false, checkpointFailed: true, hasJournal: false)
            == "its progress could not be recorded, so running the same command again starts over")
        #expect(ProgressReporter.resumeAdvice(canResume: true, isStream: false, checkpointFailed: true, hasJournal: true)
            .hasSuffix("run the same command again to resume from that checkpoint"))
        #expect(ProgressReporter.resumeAdvice(canResume: false, isStream: true, checkpointFailed: true, hasJournal: false)
            .hasPrefix("standard output keeps no partial file"))
    }

    @Test func plainLinesComeWhenTheThrottleSaysAndOnlyWhileDownloading() {
        let (reporter, output) = capturedReporter(.plain)
        reporter.tick([0: download(snapshot(done: 50, elapsed: .seconds(1)))])
        #expect(output.take().isEmpty, "the first snapshot says only 5%")
        let tenPercentLater = snapshot(done: 150, elapsed: .seconds(2))
        reporter.tick([0: download(tenPercentLater), 1: download(snapshot(.connecting, done: 0), name: "b.iso")])
        #expect(output.take() == [PlainProgressLine.line(name: "a.iso", progress: tenPercentLater) + "\n"])
        reporter.tick([0: download(snapshot(done: 160, elapsed: .seconds(3)))])
        #expect(output.take().isEmpty, "same band, within the interval")
        // A download that ended is forgotten: the same index starts over with a quiet first snapshot.
        reporter.forget(index: 0)
        reporter.tick([0: download(snapshot(done: 900, elapsed: .seconds(4)))])
        #expect(output.take().isEmpty)
    }

    @Test func jsonLinesAreInTheRunsOrderWithIdAndURLAndOnlyForRunningDownloads() throws {
        let (reporter, output) = capturedReporter(.json, messages: .json, count: 3)
        let running = snapshot(done: 10), connecting = snapshot(.connecting, done: 0)
        reporter.tick([
            0: download(running, name: "b.iso", url: "http://h/b.iso"),
            1: download(connecting, name: "a.iso", url: "http://h/a.iso"),
            2: download(snapshot(.paused, done: 5), name: "c.iso", url: "http://h/c.iso"),
        ])
        #expect(output.take() == [
            JSONProgress.progressLine(file: "b.iso", progress: running, id: 1, url: "http://h/b.iso") + "\n",
            JSONProgress.progressLine(file: "a.iso", progress: connecting, id: 2, url: "http://h/a.iso") + "\n",
        ])
    }

    @Test func checkpointFailuresAndNoticesAreToldOnceEvenWhenQuiet() {
        let (reporter, output) = capturedReporter(.none)
        let failure = JournalError.io(call: "pwrite", errno: .noSpace, path: "/downloads/a.iso.part.haul")
        let failing = snapshot(done: 10, checkpointFailure: failure, notices: ["resumed from http://old/a.iso"])
        reporter.tick([0: download(failing)])
        #expect(output.take() == [
            "haul: warning: a.iso: cannot update the resume journal (\(failure)); the download goes on, but after a crash more would be fetched again\n",
            "haul: note: a.iso: resumed from http://old/a.iso\n",
        ])
        reporter.tick([0: download(failing)])
        #expect(output.take().isEmpty, "each told once")
        var more = failing
        more.notices.append("second notice")
        reporter.tick([0: download(more)])
        #expect(output.take() == ["haul: note: a.iso: second notice\n"])

        // In JSON the warning is an error object, and notices are not shown.
        let (json, jsonOutput) = capturedReporter(.none, messages: .json)
        json.tick([0: download(failing)])
        #expect(jsonOutput.take() == [JSONProgress.errorLine(file: "a.iso", status: .output, message:
            "cannot update the resume journal (\(failure)); the download goes on, but after a crash more would be fetched again",
            transient: true, id: 1) + "\n"])
    }

    @Test func outcomesAreOneLineEachInTheChosenForm() throws {
        let result = DownloadResult(path: "/downloads/a.iso", bytes: 1000, duration: .seconds(2),
                                    finalURL: try HTTPURL("http://h/a.iso"), entityTag: nil, lastModified: nil,
                                    redirects: 0, connections: 1, bytesRequested: 400, retries: 0)
        let (text, textOutput) = capturedReporter(.plain)
        text.finished(index: 0, result: result, url: "http://h/a.iso")
        #expect(textOutput.take() == ["haul: saved /downloads/a.iso (\(UnitFormatting.bytes(1000)); \(UnitFormatting.bytes(400)) fetched in 2.0 s, \(UnitFormatting.rate(200)))\n"])
        let refused = HaulError(.httpStatus(status: 404, reason: "Not Found", url: "http://h/a.iso"), url: "http://h/a.iso")
        text.failed(index: 1, name: "a.iso", error: refused, source: .commandLine)
        #expect(textOutput.take() == [ErrorText.line(ErrorText.message(for: refused, source: .commandLine)) + "\n"])
        text.failed(index: 2, name: "a.iso", error: HaulError(.outputClosed), source: .commandLine)
        #expect(textOutput.take().isEmpty, "a reader that went away is not an error worth a line")
        text.alreadyComplete(index: 3, path: "/downloads/b.iso", url: "http://h/b.iso")
        #expect(textOutput.take() == ["haul: /downloads/b.iso: already complete\n"])

        let (json, jsonOutput) = capturedReporter(.json, messages: .json)
        json.finished(index: 0, result: result, url: "http://h/a.iso")
        json.failed(index: 1, name: "a.iso", error: refused, source: .commandLine)
        json.note(name: "a.iso", "not shown in JSON")
        #expect(jsonOutput.take() == [
            JSONProgress.doneLine(file: "a.iso", path: "/downloads/a.iso", bytes: 1000, duration: .seconds(2), id: 1, url: "http://h/a.iso") + "\n",
            JSONProgress.errorLine(file: "a.iso", error: refused, message: ErrorText.message(for: refused, source: .commandLine), id: 2) + "\n",
        ])
        // A skipped file's line carries its size on disk.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("haul-reporter-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("done.bin").path
        try Data(repeating: 7, count: 1234).write(to: URL(fileURLWithPath: path))
        json.alreadyComplete(index: 2, path: path, url: "http://h/done.bin")
        #expect(jsonOutput.take() == [JSONProgress.skippedLine(file: "done.bin", path: path, bytes: 1234, id: 3, url: "http://h/done.bin") + "\n"])

        let (quiet, quietOutput) = capturedReporter(.none)
        quiet.finished(index: 0, result: result, url: "http://h/a.iso")
        quiet.note(name: "a.iso", "quiet")
        quiet.failed(index: 1, name: "a.iso", error: refused, source: .commandLine)
        #expect(quietOutput.take().count == 1, "with -q only the error is shown")
    }

    @Test func aPathsFileNameIsItsLastComponent() {
        #expect(ProgressReporter.fileName("/downloads/a.iso") == "a.iso")
        #expect(ProgressReporter.fileName("a.iso") == "a.iso")
        #expect(ProgressReporter.fileName("dir/sub//") == "sub", "trailing slashes are not a component")
        #expect(ProgressReporter.fileName("a//b") == "b")
        #expect(ProgressReporter.fileName("/") == "/", "only slashes: the path itself")
        #expect(ProgressReporter.fileName("") == "")
        #expect(ProgressReporter.fileName("/tmp/caf\u{E9}/r\u{E9}sum\u{E9} \u{1F600}.txt") == "r\u{E9}sum\u{E9} \u{1F600}.txt")
        #expect(ProgressReporter.fileName("http://h/x/y.bin") == "y.bin")
    }

    @Test func terminalTextReplacesControlCharactersAndKeepsPrintableText() {
        #expect(TerminalText.sanitized("plain name.bin") == "plain name.bin")
        #expect(TerminalText.sanitized("a\u{1B}[2Jb\nc\u{7F}") == "a?[2Jb?c?")
        #expect(TerminalText.sanitized("caf\u{E9}\u{85}x") == "caf\u{E9}?x", "C1 controls too")
    }

    @Test func aQuietTickNamesNothingWithoutANoticeOrAFailedCheckpoint() {
        // Through the public entry point for tasks: a `-q` tick over downloads with nothing to tell writes
        // nothing (and, since the snapshot is checked first, makes no name).
        #expect(!ProgressReporter.hasMessages(snapshot(done: 10)))
        #expect(ProgressReporter.hasMessages(snapshot(done: 10, notices: ["n"])))
        let failure = JournalError.io(call: "pwrite", errno: .noSpace, path: "/d/a.part.haul")
        #expect(ProgressReporter.hasMessages(snapshot(done: 10, checkpointFailure: failure)))
    }
}
