import Testing
import HaulHTTP
@testable import HaulIO
import HaulJournal
@testable import Haul

/// A conditional probe (``DownloadRequest/onlyIfChanged``): its fields, and a 304 ending the download with
/// the destination kept.
extension DownloadStateMachineTests {
    @Test func conditionalProbeSendsTheStoredValidatorsAndA304EndsUpToDate() throws {
        var machine = try machine(created: .init(part: true))
        machine.conditional = ConditionalProbe(entityTag: "\"v1\"", modifiedSince: "Wed, 21 Oct 2015 07:28:00 GMT")
        let probe = try #require(sends(started(&machine)).first)
        #expect(probe.sentConditional)
        #expect(probe.head.headers.first("if-none-match").map { Array($0) } == Array("\"v1\"".utf8))
        #expect(probe.head.headers.first("if-modified-since").map { Array($0) } == Array("Wed, 21 Oct 2015 07:28:00 GMT".utf8))
        guard case .answer(let answer, let prepare, _) = arrive(&machine, try head(["HTTP/1.1 304 Not Modified", "ETag: \"v1\""])) else {
            Issue.record("expected the 304 to be drained"); return
        }
        #expect(answer.decision == .receiveBody && answer.window == nil && prepare == nil, "nothing of a 304 is the file")
        let ended = try end(&machine)
        guard case (.upToDate, .removing(let cleanup))? = report(ended) else { Issue.record("expected up to date: \(ended)"); return }
        #expect(cleanup.part == "/d/f.part", "the run's own .part goes; the destination is not touched")
        #expect(machine.bytesDone == 0)
    }

    @Test func probeWithoutAConditionRefusesA304() throws {
        var machine = try machine()
        let probe = try #require(sends(started(&machine)).first)
        #expect(!probe.sentConditional && probe.head.headers.first("if-none-match") == nil)
        guard case .refuse(let error) = arrive(&machine, try head(["HTTP/1.1 304 Not Modified"])) else {
            Issue.record("a 304 nobody asked for must not pass"); return
        }
        guard case .faultyResponse = error.reason else { Issue.record("\(error)"); return }
    }

    @Test func onlyTheProbeIsConditional() throws {
        var machine = try machine()
        machine.conditional = ConditionalProbe(entityTag: "\"v1\"", modifiedSince: nil)
        _ = started(&machine)
        guard case .answer(_, _, let then) = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib)) else {
            Issue.record("expected the 206 to be taken"); return
        }
        #expect(has(then) { if case .takeSlots = $0 { true } else { false } })
        let granted = machine.slotsGranted(3, wanted: 3, for: .work)
        let ranged = sends(granted)
        #expect(!ranged.isEmpty)
        #expect(ranged.allSatisfy { !$0.sentConditional && $0.head.headers.first("if-none-match") == nil })
    }
}
