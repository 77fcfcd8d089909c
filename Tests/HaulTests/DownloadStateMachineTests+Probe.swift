import Testing
import HaulHTTP
@testable import HaulIO
import HaulJournal
@testable import Haul

/// The probe's decisions: the form of the first request, the connections it opens, and what its answer
/// decides about the file (size limits, unknown lengths, servers without validators or ranges).
extension DownloadStateMachineTests {
    @Test func probeFormIsOneRequestsWorthWithSeveralConnectionsAndOpenEndedWithOne() throws {
        var several = try machine(connections: 8)
        let severalStarted = started(&several)
        let bounded = try #require(sends(severalStarted).first)
        #expect(bounded.role == .probe && bounded.first == 0 && bounded.end == SegmentPlanner.defaultRequestChunk && bounded.sendsRange)
        var one = try machine(connections: 1)
        let oneStarted = started(&one)
        #expect(try #require(sends(oneStarted).first).end == nil)
        var stream = try machine(connections: 8, sink: .stream)
        let streamStarted = started(&stream)
        #expect(try #require(sends(streamStarted).first).end == nil)
        #expect(several.phase == .probing)
    }

    @Test func firstConnectionWaitsForTheBudget() throws {
        var machine = try machine()
        let waiting = machine.slotsGranted(0, wanted: 1, for: .first)
        #expect(has(waiting) { if case .waitForSlot = $0 { true } else { false } })
        #expect(machine.phase == .waitingForConnection)
        let freed = machine.slotFreed()
        #expect(has(freed) { if case .takeSlots(1, .first) = $0 { true } else { false } })
    }

    @Test func rangedProbeStreamsItsRangeAndOpensTheOtherConnections() throws {
        var machine = try machine()
        _ = started(&machine)
        guard case .answer(let answer, let prepare, let then) = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib)) else {
            Issue.record("expected an answer"); return
        }
        #expect(answer.decision == .receiveBody && answer.window == BodyWindow(start: 0, end: 4 * Self.mib, bounded: true))
        // Preallocation: a large file is reserved; the journal starts (larger than a checkpoint window).
        #expect(prepare == Machine.FilePreparation(length: 100 * Self.mib, preallocate: true))
        #expect(has(then) { if case .startJournal(firstCheckpoint: true) = $0 { true } else { false } })
        #expect(has(then) { if case .takeSlots(7, .work) = $0 { true } else { false } })
        // In-flight arithmetic: the probe's bounded range counts once, as what it carries.
        #expect(machine.bytesRequested == 4 * Self.mib && machine.rangesSupported && machine.phase == .running)
        let work = sends(machine.slotsGranted(7, wanted: 7, for: .work))
        #expect(work.count == 7 && work.allSatisfy { $0.role == .ranged && $0.first >= 4 * Self.mib && $0.sentIfRange })
    }

    @Test func smallFileIsNeitherPreallocatedNorJournaled() throws {
        var machine = try machine()
        _ = started(&machine)
        guard case .answer(_, let prepare, let then) = arrive(&machine, try partial(0, 999, of: 1000)) else {
            Issue.record("expected an answer"); return
        }
        #expect(prepare == Machine.FilePreparation(length: 1000, preallocate: false))
        #expect(!has(then) { if case .startJournal = $0 { true } else { false } })
        #expect(!machine.journaling)
    }

    @Test func lyingContentRangeRefusesTheProbe() throws {
        var machine = try machine()
        _ = started(&machine)
        // Content-Range says bytes 5-9 although the probe asked from 0.
        guard case .refuse(let error) = arrive(&machine, try partial(5, 9, of: 1000)) else { Issue.record("expected a refusal"); return }
        guard case .wrongContentRange = error.reason else { Issue.record("\(error)"); return }
        // A Content-Length that contradicts the range.
        var other = try self.machine()
        _ = started(&other)
        guard case .refuse(let faulty) = arrive(&other, try partial(0, 99, of: 1000, length: 50)),
              case .faultyResponse = faulty.reason else { Issue.record("expected a faulty response"); return }
    }

    @Test func probeFallbackFormsGoFromBoundedToOpenEndedToWithoutRange() throws {
        var machine = try machine()
        _ = started(&machine)
        guard case .answer(let answer, _, _) = arrive(&machine, try head(["HTTP/1.1 400 Bad Request", "Content-Length: 0"])) else {
            Issue.record("expected the body drained"); return
        }
        #expect(answer.window == nil && machine.probeFallback == .openEnded)
        let ended1 = try end(&machine)
        let again = try #require(sends(ended1).first)
        #expect(again.role == .probe && again.end == nil && again.sendsRange && machine.retries == 1)
        _ = arrive(&machine, try head(["HTTP/1.1 501 Not Implemented", "Content-Length: 0"]))
        let ended2 = try end(&machine)
        let plain = try #require(sends(ended2).first)
        #expect(!plain.sendsRange && plain.head.range == nil && machine.retries == 2)
        // A third refusal has no form left: it is the error.
        guard case .refuse = arrive(&machine, try head(["HTTP/1.1 501 Not Implemented", "Content-Length: 0"])) else {
            Issue.record("expected a refusal"); return
        }
    }

    @Test func serverWithoutValidatorsIsFetchedInOnePlainResponse() throws {
        var machine = try machine()
        _ = started(&machine)
        guard case .answer(let answer, _, _) = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib, etag: nil)) else {
            Issue.record("expected an answer"); return
        }
        #expect(answer.decision == .abandon && machine.probeFallback == .withoutRange && machine.notices.count == 1)
        let ended3 = try end(&machine)
        let plain = try #require(sends(ended3).first)
        #expect(!plain.sendsRange)
        guard case .answer(let whole, let prepare, _) = arrive(&machine, try head(["HTTP/1.1 200 OK", "Content-Length: 1000"])) else {
            Issue.record("expected the whole file"); return
        }
        #expect(whole.window == BodyWindow(start: 0, end: 1000, bounded: true) && prepare?.length == 1000)
        // Resumability: without ranges a pause cannot be continued once bytes came.
        _ = machine.bodyWritten(10, on: 0)
        guard case (.paused(let resumable), _)? = report(machine.pause()) else { Issue.record("expected paused"); return }
        #expect(!resumable)
    }

    @Test func wholeFileOfUnknownLengthEndsWhereItsBodyEnds() throws {
        var machine = try machine(connections: 1)
        _ = started(&machine)
        guard case .answer(let answer, let prepare, _) = arrive(&machine, try head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "ETag: \"v1\""])) else {
            Issue.record("expected the whole file"); return
        }
        #expect(answer.window?.end == nil && prepare == Machine.FilePreparation(length: nil, preallocate: false))
        _ = machine.bodyWritten(700, on: 0)
        var window = try #require(answer.window)
        _ = window.take(700)
        let actions = try end(&machine, window: window)
        #expect(machine.total == 700 && machine.phase == .finishing)
        #expect(has(actions) { if case .checkOutput = $0 { true } else { false } })
        // The final size check: exact, or the download fails.
        guard case (.finished, _)? = report(machine.outputChecked(size: 700)) else { Issue.record("expected finished"); return }
    }

    @Test func memoryLimitRefusesALargerResource() throws {
        var machine = try machine(sink: .memory, sizeLimit: 100)
        _ = started(&machine)
        guard case .refuse(let error) = arrive(&machine, try partial(0, 999, of: 1000)), case .responseTooLarge = error.reason else {
            Issue.record("expected too large"); return
        }
    }

    @Test func maximumFileSizeRefusesALargerFileBeforeAnyByte() throws {
        var machine = try machine(sink: .file, sizeLimit: 999)
        _ = started(&machine)
        guard case .refuse(let error) = arrive(&machine, try partial(0, 999, of: 1000)),
              case .responseTooLarge(_, let limit, let length) = error.reason else {
            Issue.record("expected too large"); return
        }
        #expect(limit == 999 && length == 1000)
    }
}
