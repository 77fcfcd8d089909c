import Testing
import HaulHTTP
@testable import Haul

/// The download's identity (strong ETag, weak ETag, Last-Modified, length) held against every response:
/// each way a server's validators can differ, on a `206`, on a `200`, and the probe without any.
@Suite struct ValidatorTests {
    static let url = "http://a.test/f"
    static let strong = EntityTag("\"a\"")!
    static let weak = EntityTag("W/\"a\"")!
    static let date = HTTPDate(secondsSinceEpoch: 1_445_412_480)
    static let later = HTTPDate(secondsSinceEpoch: 1_445_412_481)

    /// Every kind of identity a probe can establish, named for messages.
    static let identities: [(String, Validators)] = [
        ("strong ETag", Validators(entityTag: strong)),
        ("strong ETag and date", Validators(entityTag: strong, lastModified: date)),
        ("weak ETag", Validators(entityTag: weak)),
        ("weak ETag and date", Validators(entityTag: weak, lastModified: date)),
        ("date", Validators(lastModified: date)),
    ]

    /// Every way a later response's validators can differ from `known`: each validator changed, flipped
    /// between weak and strong, dropped, or gained.
    static func variants(of known: Validators) -> [(String, Validators)] {
        var variants: [(String, Validators)] = []
        func add(_ name: String, _ update: (inout Validators) -> Void) {
            var seen = known
            update(&seen)
            if seen != known { variants.append((name, seen)) }
        }
        add("ETag value changed") { $0.entityTag = $0.entityTag.map { EntityTag(opaqueTag: Array("b".utf8), isWeak: $0.isWeak)! } }
        add("ETag weak/strong flipped") { $0.entityTag = $0.entityTag.map { EntityTag(opaqueTag: $0.opaqueTag, isWeak: !$0.isWeak)! } }
        add("ETag dropped") { $0.entityTag = nil }
        add("ETag gained") { $0.entityTag = $0.entityTag ?? EntityTag("\"new\"")! }
        add("weak ETag gained") { $0.entityTag = $0.entityTag ?? EntityTag("W/\"new\"")! }
        add("Last-Modified changed") { $0.lastModified = $0.lastModified.map { _ in later } }
        add("Last-Modified dropped") { $0.lastModified = nil }
        add("Last-Modified gained") { $0.lastModified = $0.lastModified ?? later }
        return variants
    }

    // MARK: Validators

    @Test func identicalValidatorsShowNoChange() {
        for (name, validators) in Self.identities {
            #expect(validators.changes(in: validators) == nil, "\(name)")
        }
        #expect(Validators().changes(in: Validators()) == nil)
    }

    @Test func everyDifferenceIsAChangeAndNamesOldAndNew() {
        for (identity, known) in Self.identities {
            for (difference, seen) in Self.variants(of: known) {
                let change = known.changes(in: seen)
                #expect(change != nil, "\(identity), \(difference): not seen as a change")
            }
        }
        let flipped = Validators(entityTag: Self.strong).changes(in: Validators(entityTag: Self.weak))
        #expect(flipped == "ETag changed from \"a\" to W/\"a\"")
        let dropped = Validators(entityTag: Self.strong, lastModified: Self.date).changes(in: Validators(entityTag: Self.strong))
        #expect(dropped?.contains("Last-Modified \(Self.date) is no longer sent") == true, "\(dropped ?? "nil")")
        let gained = Validators(lastModified: Self.date).changes(in: Validators(entityTag: Self.weak, lastModified: Self.date))
        #expect(gained?.contains("an ETag W/\"a\" appeared") == true, "\(gained ?? "nil")")
    }

    @Test func ifRangeCarriesAStrongTagElseTheDateNeverAWeakTag() {
        #expect(Validators(entityTag: Self.strong, lastModified: Self.date).ifRange == .entityTag(Self.strong))
        #expect(Validators(entityTag: Self.weak, lastModified: Self.date).ifRange == .lastModified(Self.date))
        #expect(Validators(entityTag: Self.weak).ifRange == nil)
        #expect(Validators().isEmpty && !Validators(lastModified: Self.date).isEmpty)
    }

    // MARK: Ranged responses

    func decide(_ status: Int, range: String? = "bytes 100-199/1000", framing: BodyFraming = .contentLength(100),
                seen: Validators, known: Validators, verified: Bool = true, failuresInRow: Int = 0) -> RangedResponseDecision {
        let facts = ResponseFacts(status: status, contentRange: range, entityTag: seen.entityTag, lastModified: seen.lastModified, framing: framing)
        let known = RangedResponseDecision.Known(total: 1000, validators: known, verified: verified, sentIfRange: known.ifRange != nil,
                                                 failuresInRow: failuresInRow)
        return RangedResponseDecision.decide(facts, requested: 100..<200, known: known, url: Self.url)
    }

    @Test func aPartialResponseWithTheSameValidatorsIsAccepted() {
        for (name, known) in Self.identities {
            guard case .accept = decide(206, seen: known, known: known) else { Issue.record("\(name)"); continue }
        }
    }

    @Test func aPartialResponseWhoseValidatorsDifferInAnyWayIsAChange() {
        for (identity, known) in Self.identities {
            for (difference, seen) in Self.variants(of: known) {
                guard case .changed(let error) = decide(206, seen: seen, known: known),
                      case .changedOnServer(let url, let detail) = error.reason else {
                    Issue.record("\(identity), \(difference): a 206 not taken for a change"); continue
                }
                #expect(url == Self.url && !detail.isEmpty)
            }
        }
    }

    @Test func aChangeOnResumeNamesThePartialDownloadTheRangeAndBothValues() {
        let facts = ResponseFacts(status: 206, contentRange: "bytes 100-199/1000", entityTag: EntityTag("W/\"b\""), framing: .contentLength(100))
        let known = RangedResponseDecision.Known(total: 1000, validators: Validators(entityTag: Self.weak), verified: true,
                                                 sentIfRange: false, partialSince: Self.date)
        guard case .changed(let error) = RangedResponseDecision.decide(facts, requested: 100..<200, known: known, url: Self.url),
              case .changedOnServer(_, let detail) = error.reason else { Issue.record("expected a change"); return }
        #expect(detail == "it no longer matches the partial download started \(Self.date): ETag changed from W/\"a\" to W/\"b\" (the answer to bytes 100-199)")
    }

    @Test func aMirrorNotYetVerifiedKeepsItsOwnValidatorsButNotAnotherLength() {
        let own = Validators(entityTag: EntityTag("\"mirror\"")!)
        guard case .accept(let validators, _) = decide(206, seen: own, known: Validators(), verified: false) else {
            Issue.record("a mirror's first answer"); return
        }
        #expect(validators == own, "recorded as the mirror's identity")
        guard case .mirrorDisagrees = decide(206, range: "bytes 100-199/999", seen: own, known: Validators(), verified: false) else {
            Issue.record("another length"); return
        }
    }

    @Test func aMirrorWithoutValidatorsCannotShareTheWork() {
        guard case .mirrorWithoutValidators(let error) = decide(206, seen: Validators(), known: Validators(), verified: false),
              case .faultyResponse(let url, let detail) = error.reason else {
            Issue.record("a mirror that shows no validator"); return
        }
        #expect(url == Self.url && detail.contains("no ETag or Last-Modified"))
    }

    @Test func aWholeFileAnswerWhoseValidatorsDifferIsAChange() {
        for (identity, known) in Self.identities {
            for (difference, seen) in Self.variants(of: known) {
                guard case .changed = decide(200, range: nil, framing: .contentLength(1000), seen: seen, known: known) else {
                    Issue.record("\(identity), \(difference): a 200 not taken for a change"); continue
                }
            }
        }
    }

    @Test func aWholeFileAnswerOfAnotherLengthIsAChangeWhateverItsValidators() {
        let known = Validators(entityTag: Self.strong)
        guard case .changed(let error) = decide(200, range: nil, framing: .contentLength(999), seen: known, known: known),
              case .changedOnServer(_, let detail) = error.reason else { Issue.record("length"); return }
        #expect(detail.contains("999") && detail.contains("1000"))
    }

    @Test func aWholeFileAnswerWithTheSameStrongETagIsRetriedThenTakenFrom() {
        for (name, known) in Self.identities where known.hasStrongEntityTag {
            guard case .faulty(let error) = decide(200, range: nil, framing: .contentLength(1000), seen: known, known: known) else {
                Issue.record("\(name): the first time, retried"); continue
            }
            #expect(error.isTransient)
            guard case .acceptFromWholeBody = decide(200, range: nil, framing: .contentLength(1000), seen: known, known: known, failuresInRow: 1) else {
                Issue.record("\(name): after a failure, the range is taken out of the whole body"); continue
            }
            guard case .faulty = decide(200, range: nil, framing: .chunked, seen: known, known: known, failuresInRow: 1) else {
                Issue.record("\(name): a whole body without a length is only retried"); continue
            }
        }
    }

    @Test func aWholeFileAnswerWithTheSameWeakValidatorsIsOnlyRetried() {
        for (name, known) in Self.identities where !known.hasStrongEntityTag {
            for failures in [0, 1, 4] {
                guard case .faulty = decide(200, range: nil, framing: .contentLength(1000), seen: known, known: known, failuresInRow: failures) else {
                    Issue.record("\(name), \(failures) failures: neither a change nor taken from"); continue
                }
            }
        }
    }

    // MARK: The probe

    func probe(_ range: String, framing: BodyFraming, validators: Validators = Validators()) -> ProbeResponseDecision {
        ProbeResponseDecision.decide(ResponseFacts(status: 206, contentRange: range, entityTag: validators.entityTag,
                                                   lastModified: validators.lastModified, framing: framing), url: Self.url)
    }

    @Test func aProbeWithoutValidatorsMakesTheDownloadOneResponse() {
        guard case .withoutValidators(1000, true) = probe("bytes 0-999/1000", framing: .contentLength(1000)) else {
            Issue.record("the whole file: streamed as the one response"); return
        }
        guard case .withoutValidators(1000, false) = probe("bytes 0-99/1000", framing: .contentLength(100)) else {
            Issue.record("part of the file: asked for again without Range"); return
        }
        guard case .withoutValidators(1000, false) = probe("bytes 0-999/1000", framing: .chunked) else {
            Issue.record("a body without a length: asked for again without Range"); return
        }
        guard case .faulty = probe("bytes 0-99/1000", framing: .contentLength(50)) else { Issue.record("still faulty"); return }
    }

    @Test func aProbeWithAnyValidatorIsRanged() {
        for (name, validators) in Self.identities {
            guard case .ranged(1000, _, let seen, _) = probe("bytes 0-99/1000", framing: .contentLength(100), validators: validators) else {
                Issue.record("\(name)"); continue
            }
            #expect(seen == validators)
        }
    }

    // MARK: Whole-body windows

    @Test func aWholeBodyWindowDropsWhatPrecedesTheRangeAndStopsAtItsEnd() {
        var window = BodyWindow(wholeBodyTaking: 100..<200)
        #expect(window.take(60) == .init(dropped: 60, writable: 0, overrun: 0))
        #expect(window.position == 100)
        #expect(window.take(60) == .init(dropped: 40, writable: 20, overrun: 0))
        #expect(window.position == 120)
        #expect(window.take(100) == .init(dropped: 0, writable: 80, overrun: 20))
        #expect(window.isFilled && window.isWholeBody)
        var first = BodyWindow(wholeBodyTaking: 0..<10)
        #expect(first.take(16) == .init(dropped: 0, writable: 10, overrun: 6))
    }
}
