import Testing
import HaulHTTP
@testable import HaulIO
import HaulJournal
@testable import Haul

/// The engine's decisions, driven with scripted inputs: response heads parsed from text, exchanges' ends,
/// ticks, pauses. No socket, file or clock. Each test names the decision it covers.
@Suite struct DownloadStateMachineTests {
    typealias Machine = DownloadStateMachine
    typealias Action = DownloadStateMachine.Action
    static let mib: Int64 = 1 << 20

    // MARK: Scaffolding

    /// A download of `http://a.test/f` (and `mirrors`), to `/d/f` unless into memory or a stream.
    func machine(connections: Int = 8, sink: BodyReceivePath.Sink = .file, mirrors: [String] = [], sizeLimit: Int64? = nil,
                 retry: RetryPolicy = RetryPolicy(), ifChanged: ChangePolicy = .fail, resume: JournalState? = nil,
                 created: EarlyStopCleanup.Created = .init()) throws -> Machine {
        let urls = try (["http://a.test/f"] + mirrors).map { try HTTPURL($0) }
        let options = DownloadOptions(connections: connections, retry: retry, lowSpeedLimit: LowSpeedLimit(bytesPerSecond: 100, seconds: 2))
        return Machine(options: options, mirrors: MirrorSet(urls: urls, headers: HTTPFields(), userAgent: "test"),
                       destination: sink == .file ? "/d/f" : nil, awaitingName: false, sink: sink, sizeLimit: sizeLimit,
                       ifChangedOnServer: ifChanged, resume: resume, created: created)
    }

    /// A file without a name takes its `.part` name at the end only when a failure or pause leaves written
    /// bytes; a named `.part` never needs it, and a finish, cancel or early end leaves nothing to name.
    @Test func anUnnamedWorkingFileIsNamedOnlyToKeepWrittenBytes() throws {
        let failure = HaulError.unexpected("test")
        let ends: [(Machine.Report, keeps: Bool)] = [
            (.failed(failure), true), (.paused(resumable: true), true), (.paused(resumable: false), true),
            (.finished, false), (.cancelled, false), (.upToDate, false),
        ]
        var unnamed = try machine(created: EarlyStopCleanup.Created(unnamed: true))
        for (report, _) in ends { #expect(!unnamed.namesUnnamedWorkingFile(endingWith: report), "nothing written: \(report)") }
        unnamed.bytesDone = 4096
        for (report, keeps) in ends { #expect(unnamed.namesUnnamedWorkingFile(endingWith: report) == keeps, "\(report)") }
        var named = try machine(created: EarlyStopCleanup.Created(part: true))
        named.bytesDone = 4096
        for (report, _) in ends { #expect(!named.namesUnnamedWorkingFile(endingWith: report), "a named .part: \(report)") }
    }

    func partial(_ first: Int64, _ last: Int64, of total: Int64, etag: String? = "\"v1\"", length: Int64? = nil) throws -> ResponseHead {
        var lines = ["HTTP/1.1 206 Partial Content", "Content-Range: bytes \(first)-\(last)/\(total)",
                     "Content-Length: \(length ?? (last - first + 1))"]
        if let etag { lines.append("ETag: \(etag)") }
        return try head(lines)
    }

    /// A response head parsed from its lines (CRLF added).
    func head(_ lines: [String]) throws -> ResponseHead {
        var parser = ResponseParser()
        let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        let event = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw).event }
        guard case .head(let head) = event else { throw HaulError.unexpected("not a head: \(lines)") }
        return head
    }

    func arrive(_ machine: inout Machine, _ head: ResponseHead, on id: Int = 0) -> Machine.HeadStep {
        machine.headArrived(ResponseFacts(head), head: head, on: id)
    }

    /// The exchange now running on `id` ended: complete, with `window` as it stood.
    func end(_ machine: inout Machine, on id: Int = 0, window: BodyWindow? = nil, complete: Bool = true,
             failure: HaulError? = nil) throws -> [Action] {
        let serial = try #require(machine.connections[id].exchange?.serial)
        let outcome: Result<ExchangeSummary, HTTPClientError>
        if let failure {
            outcome = .failure(.handlerFailed(failure))
        } else {
            outcome = .success(ExchangeSummary(head: try head(["HTTP/1.1 200 OK", "Content-Length: 0"]), bodyBytes: 0, complete: complete,
                                               trailers: HTTPFields(), connectionReusable: true))
        }
        return machine.exchangeEnded(ExchangeEnd(connection: id, serial: serial, outcome: outcome, window: window, retryAfter: nil))
    }

    /// Starts the download: the first connection is granted and sends the probe.
    func started(_ machine: inout Machine) -> [Action] {
        _ = machine.start()
        return machine.slotsGranted(1, wanted: 1, for: .first)
    }

    func sends(_ actions: [Action]) -> [SegmentAssignment] {
        actions.compactMap { if case .send(let assignment) = $0 { assignment } else { nil } }
    }

    func report(_ actions: [Action]) -> (Machine.Report, Machine.EndWait)? {
        for case .end(let report, let wait) in actions { return (report, wait) }
        return nil
    }

    func has(_ actions: [Action], _ test: (Action) -> Bool) -> Bool { actions.contains(where: test) }

    /// A 100 MiB file from a server with ranges: probe answered, body streaming on connection 0.
    func running(connections: Int = 8, retry: RetryPolicy = RetryPolicy(), ifChanged: ChangePolicy = .fail) throws -> Machine {
        var machine = try machine(connections: connections, retry: retry, ifChanged: ifChanged)
        _ = started(&machine)
        guard case .answer = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib)) else {
            throw HaulError.unexpected("probe not accepted")
        }
        return machine
    }

    // MARK: Ranged responses

    @Test func rangedAnswerWithChangedValidatorsIsAChange() throws {
        var machine = try running()
        _ = machine.slotsGranted(1, wanted: 7, for: .work)
        let assignment = try #require(machine.connections[1].exchange)
        let last = try #require(assignment.end) - 1
        guard case .refuse(let error) = arrive(&machine, try partial(assignment.first, last, of: 100 * Self.mib, etag: "\"v2\""), on: 1),
              case .changedOnServer = error.reason else { Issue.record("expected a change"); return }
    }

    @Test func twoHundredForARangeIsRefusedOnTheFirstTry() throws {
        var machine = try running()
        _ = machine.slotsGranted(1, wanted: 7, for: .work)
        guard case .refuse(let error) = arrive(&machine, try head(["HTTP/1.1 200 OK", "Content-Length: \(100 * Self.mib)", "ETag: \"v1\""]), on: 1),
              case .faultyResponse = error.reason else { Issue.record("expected faulty"); return }
    }

    @Test func shortBodyIsRetriedAfterADelay() throws {
        var machine = try running(connections: 2)
        _ = machine.slotsGranted(1, wanted: 1, for: .work)
        let assignment = try #require(machine.connections[1].exchange)
        let end = try #require(assignment.end)
        guard case .answer(let answer, _, _) = arrive(&machine, try partial(assignment.first, end - 1, of: 100 * Self.mib), on: 1),
              var window = answer.window else { Issue.record("expected a window"); return }
        _ = window.take(10)
        _ = machine.bodyWritten(10, on: 1)
        let actions = try self.end(&machine, on: 1, window: window)
        #expect(has(actions) { if case .retry(connection: 1, _) = $0 { true } else { false } })
        #expect(machine.retries == 1 && machine.connections[1].failuresInRow == 1 && machine.connections[1].segment == nil)
        // After the delay the same connection asks for the rest of the range (its 10 bytes stay written).
        let due = machine.retryDue(1)
        let again = try #require(sends(due).first)
        #expect(again.first == assignment.first + 10 && again.attempt == 2)
    }

    @Test func provisionalBytesCountOnlyWhenTheBodyEndsExactly() throws {
        var machine = try running()
        _ = machine.slotsGranted(1, wanted: 7, for: .work)
        let assignment = try #require(machine.connections[1].exchange)
        let end = try #require(assignment.end)
        let chunked = try head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes \(assignment.first)-\(end - 1)/\(100 * Self.mib)",
                                "Transfer-Encoding: chunked", "ETag: \"v1\""])
        guard case .answer(let answer, _, _) = arrive(&machine, chunked, on: 1), var window = answer.window else {
            Issue.record("expected a window"); return
        }
        #expect(!window.bounded)
        let before = machine.bytesDone
        _ = window.take(Int(end - assignment.first))
        _ = try self.end(&machine, on: 1, window: window)
        #expect(machine.bytesDone == before + end - assignment.first)
        // Ended short: not proven, retried.
        let next = try #require(machine.connections[1].exchange)
        let nextEnd = try #require(next.end)
        _ = arrive(&machine, try head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes \(next.first)-\(nextEnd - 1)/\(100 * Self.mib)",
                                       "Transfer-Encoding: chunked", "ETag: \"v1\""]), on: 1)
        var short = BodyWindow(start: next.first, end: nextEnd, bounded: false)
        _ = short.take(5)
        let actions = try self.end(&machine, on: 1, window: short)
        #expect(has(actions) { if case .retry = $0 { true } else { false } })
        #expect(machine.bytesDone == before + end - assignment.first)
    }

    @Test func retriesExhaustedFailTheDownload() throws {
        var machine = try running(retry: RetryPolicy(triesPerRange: 2))
        _ = machine.bodyWritten(100, on: 0)
        let probe = BodyWindow(start: 0, end: 4 * Self.mib, bounded: true)
        let first = try end(&machine, window: probe, failure: .faultyResponse(url: "u", detail: "broken"))
        #expect(has(first) { if case .retry = $0 { true } else { false } })
        _ = machine.retryDue(0)
        let second = try end(&machine, failure: .faultyResponse(url: "u", detail: "broken"))
        guard case (.failed(let error), _)? = report(second) else { Issue.record("expected failed"); return }
        #expect(error.attempts == 2 && machine.isStopped)
        // The journal (started by the probe) records what was written before the end.
        guard case (_, .checkpoint)? = report(second) else { Issue.record("expected a last checkpoint"); return }
    }

    @Test func changeOnServerRestartsFromTheProbeWhenAllowed() throws {
        var machine = try running(ifChanged: .restart)
        let actions = try end(&machine, failure: .changedOnServer(url: "u", detail: "etag"))
        #expect(has(actions) { if case .discardJournal(thenStartOver: true) = $0 { true } else { false } })
        #expect(has(actions) { if case .releaseConnections(keeping: 1) = $0 { true } else { false } })
        #expect(machine.restarts == 1 && machine.planner == nil && !machine.journaling)
        #expect(machine.notices.contains { $0.contains("changed on the server") && $0.contains("starting over") }, "said: \(machine.notices)")
        let discarded = machine.journalDiscarded()
        let probe = try #require(sends(discarded).first)
        #expect(probe.role == .probe && probe.connection == 0 && !probe.sentIfRange)
    }

    @Test func changeOnServerFailsByDefaultAfterTheRunningCheckpoint() throws {
        var machine = try running()
        _ = machine.bodyWritten(100, on: 0)
        guard case (.failed, .checkpointerIdle)? = report(try end(&machine, failure: .changedOnServer(url: "u", detail: "etag"))) else {
            Issue.record("expected failed after the checkpointer"); return
        }
    }

    @Test func redirectIsFollowedOnTheSameConnection() throws {
        var machine = try machine()
        _ = started(&machine)
        guard case .answer(let answer, _, _) = arrive(&machine, try head(["HTTP/1.1 302 Found", "Location: http://b.test/g", "Content-Length: 0"])) else {
            Issue.record("expected drained"); return
        }
        #expect(answer.window == nil)
        let ended4 = try end(&machine)
        let hop = try #require(sends(ended4).first)
        #expect(hop.url.description == "http://b.test/g" && hop.role == .probe && machine.redirects == 1)
        #expect(machine.bytesRequested == SegmentPlanner.defaultRequestChunk)
    }

    @Test func staleExchangeEndIsIgnored() throws {
        var machine = try running()
        let stale = ExchangeEnd(connection: 0, serial: 12345, outcome: .failure(.handlerFailed(HaulError.unexpected("x"))),
                                window: nil, retryAfter: nil)
        let ignored = machine.exchangeEnded(stale)
        #expect(ignored.isEmpty && machine.retries == 0)
    }

    // MARK: Mirrors

    @Test func mirrorThatDisagreesFailsBeforeAnyByte() throws {
        var machine = try machine(mirrors: ["http://m.test/f"])
        _ = started(&machine)
        guard case .answer(let answer, let prepare, let then) = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib)) else {
            Issue.record("expected an answer"); return
        }
        #expect(answer.decision == .abandon && prepare == nil && machine.phase == .checkingMirrors)
        #expect(has(then) { if case .takeSlots(1, .mirrorChecks([1])) = $0 { true } else { false } })
        let checks = machine.slotsGranted(1, wanted: 1, for: .mirrorChecks([1]))
        let check = try #require(sends(checks).first)
        #expect(check.role == .mirrorCheck && check.mirror == 1 && check.first == 0 && check.end == 1)
        guard case .refuse(let mismatch) = arrive(&machine, try partial(0, 0, of: 999), on: 1) else { Issue.record("expected a refusal"); return }
        // Nothing was written: the journal this run would have made goes again, and nothing is checkpointed.
        guard case (.failed(let error), .removing)? = report(machine.failed(mismatch, on: 1)), case .mirrorMismatch = error.reason else {
            Issue.record("expected a mismatch"); return
        }
    }

    @Test func mirrorThatAgreesLetsTheDownloadStart() throws {
        var machine = try machine(mirrors: ["http://m.test/f"])
        _ = started(&machine)
        _ = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib))
        _ = machine.slotsGranted(1, wanted: 1, for: .mirrorChecks([1]))
        let probeEnded = try end(&machine)
        #expect(probeEnded.isEmpty)   // the abandoned probe rests until the checks are back
        _ = arrive(&machine, try partial(0, 0, of: 100 * Self.mib), on: 1)
        let actions = try end(&machine, on: 1)
        #expect(has(actions) { if case .prepareFile(let p) = $0 { p.length == 100 * Self.mib } else { false } })
        #expect(sends(actions).count == 2 && machine.phase == .running)
    }

    // MARK: Pause and cancel at each phase

    @Test func pauseBeforeAnyConnectionReportsAtOnce() throws {
        var machine = try machine()
        _ = machine.start()
        guard case (.paused(resumable: true), .removing)? = report(machine.pause()) else { Issue.record("expected paused"); return }
        let late = machine.slotsGranted(1, wanted: 1, for: .first)
        #expect(late.isEmpty)
    }

    @Test func pauseWhileProbingRemovesWhatTheRunCreated() throws {
        var machine = try machine(created: .init(part: true))
        _ = started(&machine)
        guard case (.paused, .removing(let cleanup))? = report(machine.pause()) else { Issue.record("expected a cleanup"); return }
        #expect(cleanup.part == "/d/f.part")
    }

    @Test func pauseWhileRunningCheckpointsForABootThatMayEnd() throws {
        var machine = try running()
        _ = machine.bodyWritten(1000, on: 0)
        guard case (.paused(resumable: true), .checkpoint(let written, pausing: true))? = report(machine.pause()) else {
            Issue.record("expected a pausing checkpoint"); return
        }
        #expect(written.count == 1000)
        // Stopped: nothing more is decided.
        let ended = try end(&machine)
        let cancelled = machine.cancel()
        #expect(ended.isEmpty && cancelled.isEmpty)
    }

    @Test func pauseOfASmallFileStartsItsJournal() throws {
        var machine = try machine()
        _ = started(&machine)
        _ = arrive(&machine, try partial(0, 999, of: 1000))
        _ = machine.bodyWritten(10, on: 0)
        let actions = machine.pause()
        #expect(has(actions) { if case .startJournal(firstCheckpoint: false) = $0 { true } else { false } })
        guard case (.paused(resumable: true), .checkpoint(_, pausing: true))? = report(actions) else { Issue.record("expected a checkpoint"); return }
    }

    @Test func pauseOfAStreamCannotBeResumed() throws {
        var machine = try machine(sink: .stream)
        _ = started(&machine)
        _ = arrive(&machine, try partial(0, 999, of: 1000))
        _ = machine.bodyWritten(10, on: 0)
        guard case (.paused(resumable: false), .nothing)? = report(machine.pause()) else { Issue.record("expected not resumable"); return }
    }

    @Test func cancelWaitsForARunningCheckpointOnlyWhenJournaling() throws {
        var quiet = try machine()
        _ = started(&quiet)
        guard case (.cancelled, .nothing)? = report(quiet.cancel()) else { Issue.record("expected cancelled"); return }
        var journaled = try running()
        guard case (.cancelled, .checkpointerIdle)? = report(journaled.cancel()) else { Issue.record("expected to wait"); return }
    }

    // MARK: Durability, speed, the end

    @Test func readsWaitWhenTwoWindowsAreNotDurable() throws {
        var machine = try running()
        _ = machine.slotsGranted(7, wanted: 7, for: .work)
        for _ in 0..<2 { for id in 0..<8 { _ = machine.bodyWritten(4 * Self.mib, on: id) } }
        #expect(machine.bytesDone == 64 * Self.mib)
        let none = machine.durabilityHold(durableBytes: Self.mib)
        #expect(none == nil)
        let held = machine.durabilityHold(durableBytes: 0)
        let hold = try #require(held)
        #expect(hold.wait == .milliseconds(5))
        // The checkpoint that came due at 64 MiB is the one to wait for: none again until more is written.
        #expect(hold.checkpoint == nil)
    }

    @Test func checkpointIsDueEveryWindowOfBytes() throws {
        var machine = try running()
        _ = machine.slotsGranted(7, wanted: 7, for: .work)
        var due = 0
        for id in 0..<8 { if !machine.bodyWritten(4 * Self.mib, on: id).isEmpty { due += 1 } }
        #expect(due == 1)
        let again = machine.checkpointNow()
        #expect(again == nil)
    }

    @Test func connectionBelowTheSpeedLimitIsClosedAndRetried() throws {
        var machine = try running()
        var actions: [Action] = []
        for second in 1...3 { actions = machine.speedTick(received: [0: Int64(second)], readsPaused: [], durableBytes: 0) }
        #expect(has(actions) { if case .stop(connection: 0) = $0 { true } else { false } })
        let after = try end(&machine, failure: .unexpected("closed"))
        #expect(has(after) { if case .retry(connection: 0, _) = $0 { true } else { false } })
    }

    @Test func outputOfTheWrongSizeFailsInsteadOfFinishing() throws {
        var machine = try machine(connections: 1)
        _ = started(&machine)
        _ = arrive(&machine, try partial(0, 999, of: 1000))
        _ = machine.bodyWritten(1000, on: 0)
        var window = BodyWindow(start: 0, end: 1000, bounded: true)
        _ = window.take(1000)
        let ended = try end(&machine, window: window)
        #expect(has(ended) { if case .checkOutput = $0 { true } else { false } })
        guard case (.failed(let error), _)? = report(machine.outputChecked(size: 999)), case .unexpected = error.reason else {
            Issue.record("expected a failure"); return
        }
    }

    // MARK: Resume

    @Test func journalWithoutValidatorsStartsOver() throws {
        let state = JournalState(url: "http://a.test/f", totalLength: 1000, minimumSegmentSize: 1, createdAt: 0,
                                 durable: ByteRangeSet([0..<500]))
        var machine = try machine(resume: state)
        let actions = started(&machine)
        #expect(has(actions) { if case .discardJournal(thenStartOver: false) = $0 { true } else { false } })
        #expect(sends(actions).first?.role == .probe && machine.notices.count == 1)
    }

    @Test func journalWithValidatorsFetchesOnlyTheGapsWithIfRange() throws {
        let state = JournalState(url: "http://a.test/f", etag: Array("\"v1\"".utf8), totalLength: 100 * Self.mib,
                                 minimumSegmentSize: Self.mib, createdAt: 0, durable: ByteRangeSet([0..<(50 * Self.mib)]))
        var machine = try machine(resume: state)
        let actions = started(&machine)
        #expect(has(actions) { if case .openPartialFile(length: 100 * Self.mib) = $0 { true } else { false } })
        #expect(has(actions) { if case .continueJournal = $0 { true } else { false } })
        let first = try #require(sends(actions).first)
        #expect(first.role == .ranged && first.first >= 50 * Self.mib && first.sentIfRange && machine.bytesDone == 50 * Self.mib)
    }
}
