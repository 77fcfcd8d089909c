import Testing
import HaulHTTP
@testable import Haul

/// ``NotModifiedDecision``: a 304 is believed only as the answer to a conditional probe, without a body, and
/// never to a ranged resume; ``ConditionalProbe`` sends the server's own text back.
@Suite struct NotModifiedDecisionTests {
    let url = "http://a.test/f"

    func isUpToDate(_ decision: NotModifiedDecision) -> Bool { if case .upToDate = decision { true } else { false } }
    func isNotApplicable(_ decision: NotModifiedDecision) -> Bool { if case .notApplicable = decision { true } else { false } }

    @Test func a304ToTheConditionalProbeIsUpToDate() {
        #expect(isUpToDate(NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: true, sentIfRange: false, url: url)))
        #expect(isUpToDate(NotModifiedDecision.decide(status: 304, framing: .contentLength(0), askedConditionally: true, sentIfRange: false, url: url)))
    }

    @Test func otherStatusesAreLeftToTheProbeDecision() {
        for status in [200, 206, 404, 412, 416] {
            #expect(isNotApplicable(NotModifiedDecision.decide(status: status, framing: .contentLength(5), askedConditionally: true, sentIfRange: false, url: url)))
        }
    }

    @Test func a304NobodyAskedForIsALie() {
        guard case .faulty(let error) = NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: false, sentIfRange: false, url: url) else {
            Issue.record("accepted"); return
        }
        #expect("\(error)".contains("asked no condition"))
    }

    @Test func a304WithABodyIsALie() {
        for framing in [BodyFraming.contentLength(10), .chunked, .untilClose] {
            guard case .faulty(let error) = NotModifiedDecision.decide(status: 304, framing: framing, askedConditionally: true, sentIfRange: false, url: url) else {
                Issue.record("accepted \(framing)"); continue
            }
            #expect("\(error)".contains("with a body"))
        }
    }

    @Test func a304ToARangedResumeIsALie() {
        guard case .faulty(let error) = NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: true, sentIfRange: true, url: url) else {
            Issue.record("accepted"); return
        }
        #expect("\(error)".contains("If-Range"))
    }

    @Test func theProbeSendsTheStoredTextElseTheFileTime() {
        let stored = StoredValidators(entityTag: "W/\"abc\"", lastModified: "Thu, 01 Jan 1970 00:00:00 GMT", url: nil)
        let probe = ConditionalProbe.forFile(at: "/f", stored: stored, modificationTime: 1_445_412_480)
        #expect(probe?.fields.map(\.name) == ["If-None-Match", "If-Modified-Since"])
        #expect(probe?.fields.map(\.value) == ["W/\"abc\"", "Thu, 01 Jan 1970 00:00:00 GMT"], "the server's own text, not the file's time")
        let bare = ConditionalProbe.forFile(at: "/f", stored: StoredValidators(entityTag: nil, lastModified: nil, url: nil), modificationTime: 1_445_412_480)
        #expect(bare?.fields.map(\.value) == ["Wed, 21 Oct 2015 07:28:00 GMT"])
        #expect(ConditionalProbe.forFile(at: "/f", stored: stored, modificationTime: nil) == nil, "no file, no condition")
    }
}
