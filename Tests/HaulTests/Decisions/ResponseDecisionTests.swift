import Testing
import HaulHTTP
@testable import Haul

/// The probe and ranged-response decisions, for each lie a server can tell in a response head.
@Suite struct ProbeResponseDecisionTests {
    let url = "http://a.test/f"
    let tag = EntityTag("\"v1\"")!

    /// With a validator unless told otherwise: a response without any is a case of its own (``ValidatorTests``).
    func decide(_ status: Int, range: String? = nil, framing: BodyFraming = .contentLength(0), etag: EntityTag? = EntityTag("\"v1\"")) -> ProbeResponseDecision {
        ProbeResponseDecision.decide(ResponseFacts(status: status, contentRange: range, entityTag: etag, framing: framing), url: url)
    }

    @Test func aFullRangeWithAMatchingLengthIsStreamed() {
        guard case .ranged(let total, let served, let validators, let stream) = decide(206, range: "bytes 0-999/1000", framing: .contentLength(1000), etag: tag) else {
            Issue.record("expected ranged"); return
        }
        #expect(total == 1000 && served == 0..<1000 && stream && validators.entityTag == tag)
    }

    @Test func aServerMaySendLessThanTheWholeFromZero() {
        guard case .ranged(let total, let served, _, true) = decide(206, range: "bytes 0-99/1000", framing: .contentLength(100)) else {
            Issue.record("expected ranged"); return
        }
        #expect(total == 1000 && served == 0..<100)
    }

    @Test(arguments: [BodyFraming.chunked, .untilClose])
    func aBodyWithoutALengthIsNotStreamed(framing: BodyFraming) {
        guard case .ranged(1000, _, _, false) = decide(206, range: "bytes 0-999/1000", framing: framing) else {
            Issue.record("expected ranged without streaming"); return
        }
    }

    @Test(arguments: [Int64(1001), 999, 0])
    func aContentLengthThatContradictsTheRangeIsAFaultyResponse(length: Int64) {
        guard case .faulty(let error) = decide(206, range: "bytes 0-999/1000", framing: .contentLength(length)),
              case .faultyResponse(_, let detail) = error.reason else {
            Issue.record("expected faulty"); return
        }
        #expect(detail.contains("Content-Length \(length)"))
    }

    @Test(arguments: [nil, "bytes 5-999/1000", "bytes 0-999/*", "bytes */1000", "items 0-9/10", "garbage"])
    func aMissingOrWrongContentRangeIsAFaultyResponse(range: String?) {
        guard case .faulty(let error) = decide(206, range: range, framing: .contentLength(995)),
              case .wrongContentRange(_, "0-", let received) = error.reason else {
            Issue.record("expected wrongContentRange for \(range ?? "nil")"); return
        }
        #expect(received == (range ?? "(none)"))
    }

    @Test func wholeFileAnswersAreOneStream() {
        guard case .whole(1234, _) = decide(200, framing: .contentLength(1234)) else { Issue.record("CL"); return }
        guard case .whole(nil, _) = decide(200, framing: .chunked) else { Issue.record("chunked"); return }
        guard case .whole(nil, _) = decide(200, framing: .untilClose) else { Issue.record("close"); return }
    }

    @Test(arguments: [(416, "bytes */0"), (206, "bytes 0--1/0"), (206, "Bytes 0--1/0"), (204, nil)] as [(Int, String?)])
    func emptyResourcesAreEmptyFilesWhateverTheBody(status: Int, range: String?) {
        // caddy and h2o answer 416 with a text body; that body is never the file.
        guard case .empty = decide(status, range: range, framing: status == 416 ? .contentLength(26) : .contentLength(0)) else {
            Issue.record("expected empty for \(status) \(range ?? "")"); return
        }
    }

    @Test func theEmptyRangeFormWithABodyIsFaulty() {
        guard case .faulty = decide(206, range: "bytes 0--1/0", framing: .contentLength(5)) else { Issue.record("expected faulty"); return }
    }

    /// Refused rather than failed: the probe asks again without `Range` (``ProbeFormTests``), and only a
    /// plain GET's 416 is an error.
    @Test(arguments: [nil, "bytes */1000"] as [String?])
    func unsatisfiableFromZeroForANonEmptyResourceIsNotAnEmptyFile(range: String?) {
        guard case .retryProbe(.withoutRange, let error) = decide(416, range: range), case .httpStatus(416, _, _) = error.reason else {
            Issue.record("expected a retry without Range"); return
        }
    }

    @Test(arguments: [404, 403, 500, 503, 600, 799, 999])
    func errorStatusesFailWithTheStatusAndServerErrorsAreTransient(status: Int) {
        guard case .failed(let error) = decide(status, framing: .contentLength(50)) else { Issue.record("expected failure"); return }
        guard case .httpStatus(status, _, url) = error.reason else { Issue.record("expected httpStatus"); return }
        #expect(error.isTransient == (status >= 500))
    }

    @Test(arguments: [301, 302, 303, 307, 308])
    func redirectsAreFollowed(status: Int) {
        guard case .redirect = decide(status) else { Issue.record("expected redirect"); return }
    }

    /// The empty-range form is read by bytes now; spacing and ASCII case still do not matter, anything else does.
    @Test(arguments: [
        ("bytes 0--1/0", true), ("BYTES 0--1/0", true), ("bytes\t0 - -1 / 0", true), (" Bytes 0--1/0 ", true),
        ("bytes 0--1/00", false), ("bytes 0-0/1", false), ("bytes 0--1/", false), ("", false), ("bytes 0--1/0x", false),
        ("bytés 0--1/0", false),
    ] as [(String, Bool)])
    func emptyRangeForm(text: String, empty: Bool) {
        #expect(ProbeResponseDecision.isEmptyRangeForm(text) == empty)
    }
}

@Suite struct RangedResponseDecisionTests {
    let url = "http://a.test/f"
    let v1 = Validators(entityTag: EntityTag("\"v1\"")!)
    var known: RangedResponseDecision.Known { .init(total: 1000, validators: v1, verified: true, sentIfRange: true) }

    func decide(_ status: Int, range: String?, framing: BodyFraming = .contentLength(100), etag: String? = "\"v1\"",
                known: RangedResponseDecision.Known? = nil) -> RangedResponseDecision {
        let facts = ResponseFacts(status: status, contentRange: range, entityTag: etag.flatMap { EntityTag($0) }, framing: framing)
        return RangedResponseDecision.decide(facts, requested: 100..<200, known: known ?? self.known, url: url)
    }

    @Test func theExactRangeIsAccepted() {
        guard case .accept(_, true) = decide(206, range: "bytes 100-199/1000") else { Issue.record("expected accept"); return }
    }

    @Test(arguments: [BodyFraming.chunked, .untilClose])
    func aBodyWithoutALengthIsAcceptedProvisionally(framing: BodyFraming) {
        guard case .accept(_, false) = decide(206, range: "bytes 100-199/1000", framing: framing) else { Issue.record("expected provisional"); return }
    }

    @Test(arguments: [Int64(101), 150, 99, 0])
    func aContentLengthOtherThanTheRangeIsFaulty(length: Int64) {
        guard case .faulty(let error) = decide(206, range: "bytes 100-199/1000", framing: .contentLength(length)),
              case .faultyResponse = error.reason else {
            Issue.record("expected faulty for \(length)"); return
        }
    }

    @Test(arguments: ["bytes 110-209/1000", "bytes 90-189/1000", "bytes 100-198/1000", "bytes 100-199/*", "nonsense"])
    func shiftedOrMalformedRangesWithTheSameTotalAreFaultyNotChanged(range: String) {
        guard case .faulty(let error) = decide(206, range: range) else { Issue.record("expected faulty for \(range)"); return }
        #expect(error.isTransient, "a faulty response is retried")
    }

    @Test func aMissingContentRangeIsFaulty() {
        guard case .faulty(let error) = decide(206, range: nil), case .wrongContentRange(_, "100-199", "(none)") = error.reason else {
            Issue.record("expected faulty"); return
        }
    }

    @Test func anotherTotalIsAChangeOnAVerifiedMirrorAndADisagreementOnANewOne() {
        guard case .changed(let changed) = decide(206, range: "bytes 100-199/2000"), case .changedOnServer(_, let detail) = changed.reason else {
            Issue.record("changed"); return
        }
        #expect(detail.contains("2000"))
        var fresh = known
        fresh.verified = false
        guard case .mirrorDisagrees(let disagreement) = decide(206, range: "bytes 100-199/2000", known: fresh),
              case .mirrorMismatch = disagreement.reason else { Issue.record("mirror"); return }
    }

    @Test func anyOtherETagIsAChangeWeakOrStrongOrNone() {
        for etag in ["\"v2\"", "W/\"v2\"", "W/\"v1\"", nil] as [String?] {
            guard case .changed = decide(206, range: "bytes 100-199/1000", etag: etag) else { Issue.record("\(etag ?? "no ETag")"); continue }
        }
    }

    @Test func aWholeFileAnswerWithTheSameStrongETagIsFaultyNotAChange() {
        guard case .faulty(let error) = decide(200, range: nil, framing: .contentLength(1000)), case .faultyResponse = error.reason else {
            Issue.record("same ETag"); return
        }
        guard case .changed = decide(200, range: nil, framing: .contentLength(1000), etag: "\"v2\"") else { Issue.record("other ETag"); return }
        var noIfRange = known
        noIfRange.sentIfRange = false
        guard case .faulty = decide(200, range: nil, framing: .contentLength(1000), known: noIfRange) else { Issue.record("faulty"); return }
        var fresh = known
        fresh.verified = false
        guard case .mirrorDisagrees = decide(200, range: nil, framing: .contentLength(1000), known: fresh) else { Issue.record("mirror"); return }
    }

    @Test func unsatisfiableNamesTheNewLengthOrIsFaulty() {
        guard case .changed = decide(416, range: "bytes */150") else { Issue.record("changed"); return }
        guard case .faulty = decide(416, range: "bytes */1000") else { Issue.record("faulty"); return }
        guard case .faulty = decide(416, range: nil) else { Issue.record("faulty without range"); return }
    }

    @Test func errorStatusesAndRedirects() {
        guard case .failed(let error) = decide(503, range: nil), case .httpStatus(503, _, _) = error.reason else { Issue.record("503"); return }
        guard case .redirect = decide(307, range: nil) else { Issue.record("redirect"); return }
    }
}
