import Testing
import HaulHTTP
@testable import Haul

/// Whether an answer is a Metalink document to follow (``MetalinkResponseDecision``), and a request's
/// expected size held against the probe's answer (``ProbeResponseDecision``, ``DownloadRequest/expectedSize``).
@Suite struct MetalinkResponseDecisionTests {
    static let limit = MetalinkLimits().maximumBytes

    func decide(_ status: Int = 200, type: String?, range: String? = nil, framing: BodyFraming = .contentLength(900)) -> MetalinkResponseDecision {
        let facts = ResponseFacts(status: status, contentRange: range, framing: framing, contentTypes: type.map { [$0] } ?? [])
        return MetalinkResponseDecision.decide(facts, limit: Self.limit)
    }

    /// Media types compare without case and without parameters (RFC 9110 §8.3.1).
    @Test(arguments: [
        "application/metalink4+xml", "Application/Metalink4+XML", "application/metalink4+xml; charset=utf-8",
        "APPLICATION/METALINK4+XML;charset=\"UTF-8\"", "  application/metalink4+xml ; q=1",
    ])
    func theMetalinkTypeIsFollowedWhateverItsCaseAndParameters(type: String) {
        #expect(decide(type: type) == .follow, "\(type)")
    }

    @Test(arguments: [
        "application/octet-stream", "application/metalink+xml", "application/xml", "text/xml",
        "application/metalink4", "application/metalink4+xmlx", "metalink4+xml", "",
    ])
    func otherTypesAreNotFollowed(type: String) {
        #expect(decide(type: type) == .notMetalink, "\(type)")
    }

    @Test func noTypeIsNotFollowed() {
        #expect(decide(type: nil) == .notMetalink)
    }

    /// A lying type on a body far larger than a document: never read into memory, saved as a file.
    @Test func aLyingTypeOnAHugeBodyIsNotReadIntoMemory() {
        #expect(decide(type: "application/metalink4+xml", framing: .contentLength(1 << 40)) == .tooLargeToFollow(length: 1 << 40, limit: Self.limit))
        #expect(decide(type: "application/metalink4+xml", framing: .contentLength(Int64(Self.limit) + 1)) == .tooLargeToFollow(length: Int64(Self.limit) + 1, limit: Self.limit))
        #expect(decide(type: "application/metalink4+xml", framing: .contentLength(Int64(Self.limit))) == .follow, "exactly the limit")
        // A 206 to the probe's Range shows the whole length in its Content-Range, not in its Content-Length.
        #expect(decide(206, type: "application/metalink4+xml", range: "bytes 0-4194303/10737418240", framing: .contentLength(4_194_304))
                == .tooLargeToFollow(length: 10_737_418_240, limit: Self.limit))
        // Without a length the body is read bounded (the document's own fetch stops at the limit).
        #expect(decide(type: "application/metalink4+xml", framing: .chunked) == .follow)
        #expect(decide(type: "application/metalink4+xml", framing: .untilClose) == .follow)
    }

    /// The probe asks with `Range: bytes=0-`, which nginx answers with a 206: one from byte 0 is the document.
    @Test func a206FromByteZeroIsFollowedAndOneFromTheMiddleIsNot() {
        #expect(decide(206, type: "application/metalink4+xml", range: "bytes 0-899/900") == .follow)
        #expect(decide(206, type: "application/metalink4+xml", range: "bytes 100-899/900", framing: .contentLength(800)) == .notMetalink)
        #expect(decide(206, type: "application/metalink4+xml", range: nil) == .notMetalink, "a 206 without a range says nothing")
    }

    @Test(arguments: [204, 301, 304, 403, 404, 416, 500, 503])
    func otherStatusesAreNotFollowed(status: Int) {
        #expect(decide(status, type: "application/metalink4+xml") == .notMetalink, "\(status)")
    }

    /// A HEAD has no body to read: `-I` prints the head.
    @Test func aHeadIsNotFollowed() {
        let type = MediaType("application/metalink4+xml")
        #expect(MetalinkResponseDecision.decide(isHead: true, status: 200, mediaType: type, fileLength: 900, rangeStart: nil, limit: Self.limit) == .notMetalink)
        #expect(MetalinkResponseDecision.decide(isHead: false, status: 200, mediaType: type, fileLength: 900, rangeStart: nil, limit: Self.limit) == .follow)
    }

    // MARK: The expected size (a Metalink's <size>) against the probe's answer

    let url = "http://a.test/f"

    func probe(_ facts: ResponseFacts, expected: Int64?) -> ProbeResponseDecision {
        ProbeResponseDecision.decide(facts, url: url, form: .openEnded, expectedSize: expected)
    }

    func isSizeMismatch(_ decision: ProbeResponseDecision, expected: Int64, served: Int64) -> Bool {
        guard case .failed(let error) = decision, case .sizeMismatch(let at, let e, let s) = error.reason else { return false }
        return at == url && e == expected && s == served && !error.isTransient
    }

    @Test func aServerThatLiesAboutTheSizeIsRefusedWhateverItsAnswer() {
        let tag = EntityTag("\"v1\"")
        // A 206 to the probe: the Content-Range's complete length.
        #expect(isSizeMismatch(probe(ResponseFacts(status: 206, contentRange: "bytes 0-999/1000", entityTag: tag, framing: .contentLength(1000)), expected: 1001),
                               expected: 1001, served: 1000))
        // A 200 with a length.
        #expect(isSizeMismatch(probe(ResponseFacts(status: 200, entityTag: tag, framing: .contentLength(5)), expected: 6), expected: 6, served: 5))
        // An empty file (416 */0, and 204) where bytes were expected.
        #expect(isSizeMismatch(probe(ResponseFacts(status: 416, contentRange: "bytes */0"), expected: 10), expected: 10, served: 0))
        #expect(isSizeMismatch(probe(ResponseFacts(status: 204), expected: 10), expected: 10, served: 0))
        // Without validators, still a length.
        #expect(isSizeMismatch(probe(ResponseFacts(status: 206, contentRange: "bytes 0-99/100", framing: .contentLength(100)), expected: 99), expected: 99, served: 100))
    }

    @Test func theRightSizeOrNoneChangesNothing() {
        let tag = EntityTag("\"v1\"")
        let ranged = ResponseFacts(status: 206, contentRange: "bytes 0-999/1000", entityTag: tag, framing: .contentLength(1000))
        guard case .ranged(1000, _, _, _) = probe(ranged, expected: 1000) else { Issue.record("the right size"); return }
        guard case .ranged(1000, _, _, _) = probe(ranged, expected: nil) else { Issue.record("no size given"); return }
        // A whole file without a length is held to the size when its body ends (the state machine's part).
        guard case .whole(nil, _) = probe(ResponseFacts(status: 200, entityTag: tag, framing: .chunked), expected: 7) else {
            Issue.record("unknown length"); return
        }
        // An error status stays that error.
        guard case .failed(let error) = probe(ResponseFacts(status: 404), expected: 7), case .httpStatus(404, _, _) = error.reason else {
            Issue.record("404"); return
        }
    }

    /// A size mismatch is not retried on the same server; another mirror may take over.
    @Test func aSizeMismatchDropsTheMirrorOrFails() {
        let context = { (other: Bool) in
            FailurePolicy.Context(error: .sizeMismatch(url: "u", expected: 2, served: 1), failuresInRow: 1, retriesSoFar: 0,
                                  restartsSoFar: 0, canReResolve: false, otherMirrorLive: other)
        }
        #expect(FailurePolicy.decide(context(true), retry: RetryPolicy(), ifChangedOnServer: .fail) == .dropMirror)
        #expect(FailurePolicy.decide(context(false), retry: RetryPolicy(), ifChangedOnServer: .fail) == .fail)
    }
}
