import Testing
import HaulHTTP
import HaulIO
import HaulJournal
@testable import Haul

/// The state machine's phases and their stops, with the scaffolding of ``DownloadStateMachineTests``.
@Suite struct DownloadStateMachinePhaseTests {
    typealias Machine = DownloadStateMachine
    let script = DownloadStateMachineTests()
    static let mib: Int64 = 1 << 20

    @Test func pauseWhileCheckingMirrorsWritesNoJournalForAFileNotPreparedYet() throws {
        var machine = try script.machine(mirrors: ["http://m.test/f"])
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 4 * Self.mib - 1, of: 100 * Self.mib))
        #expect(machine.phase == .checkingMirrors)
        let actions = machine.pause()
        #expect(!script.has(actions) { if case .startJournal = $0 { true } else { false } })
        guard case (.paused(resumable: true), .removing)? = script.report(actions) else { Issue.record("expected paused"); return }
        #expect(machine.phase == .stopped(.paused))
    }

    @Test func cancelWhileFinishingEndsWithoutTheOutputCheck() throws {
        var machine = try script.machine(connections: 1)
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 999, of: 1000))
        _ = machine.bodyWritten(1000, on: 0)
        var window = BodyWindow(start: 0, end: 1000, bounded: true)
        _ = window.take(1000)
        _ = try script.end(&machine, window: window)
        #expect(machine.phase == .finishing)
        guard case (.cancelled, .nothing)? = script.report(machine.cancel()) else { Issue.record("expected cancelled"); return }
        // The size check that was under way no longer decides anything.
        let late = machine.outputChecked(size: 1000)
        #expect(late.isEmpty && machine.phase == .stopped(.cancelled))
    }

    @Test func failureWhileWaitingForTheFirstConnectionEndsAtOnce() throws {
        var machine = try script.machine(sink: .memory, sizeLimit: 10)
        _ = machine.start()
        guard case (.failed(let error), .nothing)? = script.report(machine.fail(.timedOut(after: .seconds(1), url: "u", bytesReceived: 0))),
              case .timedOut = error.reason else { Issue.record("expected failed"); return }
        // A second stop is ignored: the end is reported once.
        let again = machine.fail(.unexpected("again"))
        #expect(again.isEmpty)
    }

    @Test func emptyFileIsAnsweredBy416StarSlashZero() throws {
        var machine = try script.machine(connections: 1)
        _ = script.started(&machine)
        let empty = try script.head(["HTTP/1.1 416 Range Not Satisfiable", "Content-Range: bytes */0", "Content-Length: 0"])
        guard case .answer(let answer, let prepare, _) = script.arrive(&machine, empty) else { Issue.record("expected an answer"); return }
        #expect(answer.window == nil && prepare?.length == 0 && machine.total == 0)
        let ended = try script.end(&machine)
        #expect(script.has(ended) { if case .checkOutput = $0 { true } else { false } })
    }

    @Test func streamHorizonReleasesBytesAsTheyAreDelivered() throws {
        var machine = try script.machine(connections: 2, sink: .stream)
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 100 * Self.mib - 1, of: 100 * Self.mib))
        let horizon = try #require(machine.planner?.horizon)
        #expect(horizon == machine.streamWindow)
        // Nothing delivered yet: no check is worth queueing; once a chunk is out, one is (and only one).
        let chunk = machine.streamChunk
        let atStart = machine.queueHorizonCheck(delivered: 0)
        let afterAChunk = machine.queueHorizonCheck(delivered: chunk)
        let queuedAlready = machine.queueHorizonCheck(delivered: chunk)
        #expect(!atStart && afterAChunk && !queuedAlready)
        _ = machine.advanceHorizon(delivered: machine.streamChunk)
        #expect(machine.planner?.horizon == machine.streamChunk + machine.streamWindow)
    }

    @Test func finishedSegmentLeavesItsConnectionWithoutOne() throws {
        var machine = try script.machine(connections: 1)
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 999, of: 1000))
        #expect(machine.segmentEnd(of: 0) == 1000)
        _ = machine.bodyWritten(400, on: 0)
        #expect(machine.connections[0].segment != nil)
        _ = machine.bodyWritten(600, on: 0)
        #expect(machine.connections[0].segment == nil && machine.segmentEnd(of: 0) == nil)
    }

    enum Stage: CaseIterable { case waitingForConnection, probing, checkingMirrors, running, finishing }
    enum StopKind: CaseIterable { case pause, cancel, fail }

    /// A machine brought to `stage` (with a mirror to check for `checkingMirrors`).
    func machine(at stage: Stage) throws -> Machine {
        var machine = try script.machine(connections: 1, mirrors: stage == .checkingMirrors ? ["http://m.test/f"] : [])
        _ = machine.start()
        if stage == .waitingForConnection { return machine }
        _ = machine.slotsGranted(1, wanted: 1, for: .first)
        if stage == .probing { return machine }
        _ = script.arrive(&machine, try script.partial(0, 999, of: 1000))
        if stage != .finishing { return machine }
        _ = machine.bodyWritten(1000, on: 0)
        var window = BodyWindow(start: 0, end: 1000, bounded: true)
        _ = window.take(1000)
        _ = try script.end(&machine, window: window)
        return machine
    }

    /// Pause, cancel and failure in every phase: one end, reported once, and nothing decided after it.
    @Test(arguments: Stage.allCases, StopKind.allCases)
    func everyPhaseStopsOnceAndDecidesNothingAfter(stage: Stage, stop: StopKind) throws {
        var machine = try machine(at: stage)
        #expect("\(machine.phase)" == "\(stage)")
        let actions: [Machine.Action]
        switch stop {
        case .pause: actions = machine.pause()
        case .cancel: actions = machine.cancel()
        case .fail: actions = machine.fail(.unexpected("stopped"))
        }
        #expect(actions.filter { if case .end = $0 { true } else { false } }.count == 1)
        #expect(script.has(actions) { if case .releaseConnections(keeping: 0) = $0 { true } else { false } })
        #expect(machine.isStopped)
        let again = machine.pause() + machine.cancel() + machine.fail(.unexpected("again")) + machine.slotFreed()
        let late = machine.outputChecked(size: 1000) + machine.journalDiscarded() + machine.retryDue(0)
        #expect(again.isEmpty && late.isEmpty)
    }

    /// A directory download whose name leads to an interrupted download continues that journal: its unsynced
    /// ranges only when they were written during this boot.
    @Test func nameLeadingToAJournalContinuesItTrustingOnlyThisBootsUnsyncedRanges() throws {
        let mib = Self.mib
        let state = JournalState(url: "http://a.test/f", etag: Array("\"v1\"".utf8), totalLength: 100 * mib,
                                 minimumSegmentSize: mib, createdAt: 0, durable: ByteRangeSet([0..<(10 * mib)]), bootID: [1, 2, 3])
        for (boot, trusted) in [([UInt8]([1, 2, 3]), true), ([9, 9, 9], false)] {
            let options = DownloadOptions(connections: 2)
            var machine = Machine(options: options, mirrors: MirrorSet(urls: [try HTTPURL("http://a.test/f")], headers: HTTPFields(), userAgent: "t"),
                                  destination: nil, awaitingName: true, sink: .file, sizeLimit: nil)
            _ = script.started(&machine)
            guard case .nameFile = script.arrive(&machine, try script.partial(0, 4 * mib - 1, of: 100 * mib)) else {
                Issue.record("expected the file to be named"); return
            }
            machine.name("/d/f")
            machine.retire(0)
            let actions = machine.continueFromJournal(state, bootID: boot)
            #expect(script.has(actions) { if case .releaseConnections(keeping: 1) = $0 { true } else { false } })
            #expect(machine.bytesDone == (trusted ? 10 * mib : 0) && machine.notices.count == (trusted ? 0 : 1))
            #expect(script.sends(actions).first?.sentIfRange == true && machine.resumedFromJournal)
        }
    }

    /// A journal whose identity is a weak ETag alone keeps it (a changed tag is still a change) but not its
    /// bytes: no If-Range can carry the tag and it does not promise the same bytes (`ResumeRedTeamTests`).
    @Test func aJournalWithOnlyAWeakETagIsFetchedAgainHeldToItsTag() throws {
        let mib = Self.mib
        for (etag, date, kept) in [("W/\"v1\"", nil, false), ("W/\"v1\"", Int64(1_445_412_480), true), ("\"v1\"", nil, true)] as [(String, Int64?, Bool)] {
            let state = JournalState(url: "http://a.test/f", etag: Array(etag.utf8), lastModified: date, totalLength: 100 * mib,
                                     minimumSegmentSize: mib, createdAt: 0, durable: ByteRangeSet([0..<(10 * mib)]), bootID: [1, 2, 3])
            var machine = Machine(options: DownloadOptions(connections: 2), mirrors: MirrorSet(urls: [try HTTPURL("http://a.test/f")], headers: HTTPFields(), userAgent: "t"),
                                  destination: nil, awaitingName: true, sink: .file, sizeLimit: nil)
            _ = script.started(&machine)
            guard case .nameFile = script.arrive(&machine, try script.partial(0, 4 * mib - 1, of: 100 * mib)) else {
                Issue.record("expected the file to be named"); return
            }
            machine.name("/d/f")
            machine.retire(0)
            _ = machine.continueFromJournal(state, bootID: [1, 2, 3])
            #expect(machine.bytesDone == (kept ? 10 * mib : 0), "\(etag), date \(date.map(String.init) ?? "none")")
            #expect(machine.notices.contains { $0.contains("only a weak ETag") } == !kept, "\(machine.notices)")
            #expect(machine.mirrors[0].validators.entityTag == EntityTag(etag), "the tag stays the identity answers are held to")
        }
    }
}

