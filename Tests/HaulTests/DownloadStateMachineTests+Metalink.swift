import Testing
import HaulHTTP
@testable import HaulIO
import HaulJournal
@testable import Haul

/// A Metalink answer followed (``DownloadRequest/followsMetalink``) and a size given beforehand
/// (``DownloadRequest/expectedSize``), as the machine carries them out.
extension DownloadStateMachineTests {
    @Test func aMetalinkAnswerEndsTheDownloadWithNothingWritten() throws {
        var machine = try machine(created: .init(part: true))
        machine.followsMetalink = true
        _ = started(&machine)
        let document = try head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-899/900", "Content-Length: 900",
                                 "Content-Type: application/metalink4+xml; charset=utf-8", "ETag: \"m\""])
        guard case .answer(let answer, let prepare, _) = arrive(&machine, document) else { Issue.record("expected an answer"); return }
        #expect(answer.decision == .abandon && answer.window == nil && prepare == nil, "no byte of the document goes to the file")
        let ended = try end(&machine, complete: false)
        guard case (.metalinkDocument(let url), .removing(let cleanup))? = report(ended) else { Issue.record("expected the Metalink end: \(ended)"); return }
        #expect(url.description == "http://a.test/f" && cleanup.part == "/d/f.part")
        #expect(machine.bytesDone == 0)
    }

    @Test func aMetalinkAnswerIsAFileWhenFollowingIsOffOrTheBodyIsHuge() throws {
        var off = try machine()
        _ = started(&off)
        let document = try head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-899/900", "Content-Length: 900",
                                 "Content-Type: application/metalink4+xml", "ETag: \"m\""])
        guard case .answer(let answer, _, _) = arrive(&off, document) else { Issue.record("expected an answer"); return }
        #expect(answer.window != nil, "saved as any file")

        var huge = try machine()
        huge.followsMetalink = true
        _ = started(&huge)
        let lying = try head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-\(4 * Self.mib - 1)/\(100 * Self.mib)",
                              "Content-Length: \(4 * Self.mib)", "Content-Type: application/metalink4+xml", "ETag: \"m\""])
        guard case .answer(_, let prepare, _) = arrive(&huge, lying) else { Issue.record("expected an answer"); return }
        #expect(prepare?.length == 100 * Self.mib, "a 100 MiB 'document' is downloaded as a file")
        #expect(huge.notices.contains { $0.contains("Metalink") && $0.contains("not followed") }, "\(huge.notices)")
    }

    @Test func aWholeBodyWithoutALengthIsHeldToTheExpectedSizeWhenItEnds() throws {
        var machine = try machine(connections: 1)
        machine.expectedSize = 701
        _ = started(&machine)
        guard case .answer(let answer, _, _) = arrive(&machine, try head(["HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "ETag: \"v1\""])) else {
            Issue.record("expected the whole file"); return
        }
        _ = machine.bodyWritten(700, on: 0)
        var window = try #require(answer.window)
        _ = window.take(700)
        let actions = try end(&machine, window: window)
        guard case (.failed(let error), _)? = report(actions), case .sizeMismatch(_, 701, 700) = error.reason else {
            Issue.record("expected a size mismatch: \(actions)"); return
        }
        #expect(!has(actions) { if case .checkOutput = $0 { true } else { false } }, "never finished")
    }

    @Test func aProbeOfAnotherLengthThanExpectedIsRefused() throws {
        var machine = try machine()
        machine.expectedSize = 1000
        _ = started(&machine)
        guard case .refuse(let error) = arrive(&machine, try partial(0, 998, of: 999)), case .sizeMismatch("http://a.test/f", 1000, 999) = error.reason else {
            Issue.record("expected a size mismatch"); return
        }
        #expect(error.description.contains("999") && error.description.contains("1000") && error.description.contains("a.test"), "\(error)")
    }

    /// With the size given, a mirror of another length is the one that lies: left out, the download goes on.
    @Test func aMirrorOfAnotherLengthThanExpectedIsLeftOut() throws {
        var machine = try machine(mirrors: ["http://m.test/f"])
        machine.expectedSize = 100 * Self.mib
        _ = started(&machine)
        _ = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib))
        _ = machine.slotsGranted(1, wanted: 1, for: .mirrorChecks([1]))
        _ = try end(&machine)
        guard case .answer(let answer, _, _) = arrive(&machine, try partial(0, 0, of: 999), on: 1) else {
            Issue.record("expected the mirror to be left out, not the download failed"); return
        }
        #expect(answer.decision == .abandon && machine.mirrors[1].dropped)
        #expect(machine.notices.contains { $0.contains("m.test") && $0.contains("999") && $0.contains("left out") }, "\(machine.notices)")
        let actions = try end(&machine, on: 1)
        #expect(report(actions) == nil && machine.phase == .running, "the download starts with the mirror that agrees")
    }
}
