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

    /// A 304 carries the ETag a 200 would (RFC 9110 §15.4.5): another one than asked about is another file.
    /// `ConditionalRedTeamTests`: a server judging `If-Modified-Since` alone kept a replaced file "up to date".
    @Test func a304WithAnotherETagThanAskedIsALie() {
        let asked = ConditionalProbe(entityTag: "\"v1\"", modifiedSince: "Wed, 21 Oct 2015 07:28:00 GMT", localLength: 3000)
        func decide(_ etag: String?, length: Int64? = nil) -> NotModifiedDecision {
            NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: true, sentIfRange: false, asked: asked,
                                       answeredEntityTag: etag.flatMap { EntityTag($0) }, answeredLength: length, url: url)
        }
        guard case .faulty(let error) = decide("\"v2\"") else { Issue.record("accepted another ETag"); return }
        #expect("\(error)".contains("\"v2\"") && "\(error)".contains("\"v1\"") && "\(error)".contains(url))
        #expect(isUpToDate(decide("\"v1\"")))
        #expect(isUpToDate(decide("W/\"v1\"")), "If-None-Match compares weakly")
        #expect(isUpToDate(decide(nil)), "a 304 without an ETag says nothing against the file")
        let dateOnly = ConditionalProbe(entityTag: nil, modifiedSince: "Wed, 21 Oct 2015 07:28:00 GMT", localLength: 3000)
        #expect(isUpToDate(NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: true, sentIfRange: false, asked: dateOnly,
                                                      answeredEntityTag: EntityTag("\"v2\""), url: url)), "nothing asked about an ETag")
    }

    /// A 304's `Content-Length` is the length a 200 would have (RFC 9110 §8.6): another than the file's here is another file.
    @Test func a304WithAnotherLengthThanTheFileIsALie() {
        let asked = ConditionalProbe(entityTag: "\"v1\"", modifiedSince: nil, localLength: 3000)
        func decide(_ length: Int64?) -> NotModifiedDecision {
            NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: true, sentIfRange: false, asked: asked,
                                       answeredEntityTag: EntityTag("\"v1\""), answeredLength: length, url: url)
        }
        guard case .faulty(let error) = decide(4000) else { Issue.record("accepted another length"); return }
        #expect("\(error)".contains("4000") && "\(error)".contains("3000"))
        #expect(isUpToDate(decide(3000)))
        #expect(isUpToDate(decide(nil)))
        #expect(isUpToDate(decide(0)), "Content-Length: 0 on every 304 is a known habit, naming no file")
        let noFile = ConditionalProbe(entityTag: nil, modifiedSince: "Wed, 21 Oct 2015 07:28:00 GMT")
        #expect(isUpToDate(NotModifiedDecision.decide(status: 304, framing: .none, askedConditionally: true, sentIfRange: false, asked: noFile,
                                                      answeredLength: 4000, url: url)), "-z DATE: no file to compare")
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
