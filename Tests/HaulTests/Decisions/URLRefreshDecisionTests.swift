import Testing
import HaulHTTP
import HaulIO
@testable import Haul

/// When an expired URL is refreshed, and what a refresher's answer leads to (``URLRefreshDecision``).
@Suite struct URLRefreshDecisionTests {
    let old = try! HTTPURL("https://cdn.test/f?sig=old")
    let fresh = try! HTTPURL("https://cdn.test/f?sig=new")
    let forbidden = HaulError.httpStatus(status: 403, reason: "Forbidden", url: "https://cdn.test/f?sig=old")
    let strong = Validators(entityTag: EntityTag(Array("\"v1\"".utf8)[...]))
    let weak = Validators(entityTag: EntityTag(Array("W/\"v1\"".utf8)[...]))
    let dated = Validators(lastModified: HTTPDate(secondsSinceEpoch: 1_445_412_480))

    func trigger(_ error: HaulError? = nil, refresher: Bool = true, begun: Bool = true, soFar: Int = 0,
                 atGiven: Bool = true, canReResolve: Bool = false) -> URLRefreshDecision.Trigger {
        URLRefreshDecision.trigger(.init(error: error ?? forbidden, refresherGiven: refresher, begun: begun, refreshesSoFar: soFar,
                                         startedAtGivenURL: atGiven, canReResolve: canReResolve))
    }

    func answer(_ url: HTTPURL?, identity: Validators? = nil, thrown: HaulError? = nil) -> URLRefreshDecision.Answer {
        URLRefreshDecision.answer(.init(url: url, refresherError: thrown, failedURLs: [old], identity: identity ?? strong, original: forbidden))
    }

    @Test func theStatusesOfAnExpiredLinkAskForARefreshOnceTheDownloadHasBegun() {
        for status in [401, 403, 404, 410] {
            #expect(trigger(.httpStatus(status: status, reason: "", url: "u")) == .refresh, "\(status)")
        }
        for error in [HaulError.httpStatus(status: 500, reason: "", url: "u"), .httpStatus(status: 400, reason: "", url: "u"),
                      .changedOnServer(url: "u", detail: "d"), .faultyResponse(url: "u", detail: "d")] {
            #expect(trigger(error) == .notApplicable, "\(error)")
        }
        #expect(trigger(begun: false) == .notApplicable, "the first answer failing is no expiry: nothing was accepted yet")
        #expect(trigger(refresher: false) == .notApplicable)
    }

    @Test func aStaleRedirectTargetGoesBackToTheGivenURLFirst() {
        #expect(trigger(atGiven: false, canReResolve: true) == .notApplicable)
        #expect(trigger(atGiven: false, canReResolve: false) == .refresh, "no going back left")
        #expect(trigger(atGiven: true, canReResolve: true) == .refresh, "the chain began at the given URL: going back again is pointless")
    }

    @Test func refreshesAreBounded() {
        #expect(trigger(soFar: URLRefreshDecision.maximumRefreshes - 1) == .refresh)
        #expect(trigger(soFar: URLRefreshDecision.maximumRefreshes) == .exhausted)
    }

    @Test func aNewURLContinuesOnlyWhenTheIdentityCanProveTheSameFile() {
        guard case .continueAt(let url) = answer(fresh) else { Issue.record("a strong ETag proves it"); return }
        #expect(url == fresh)
        guard case .continueAt = answer(fresh, identity: dated) else { Issue.record("a date is compared exactly"); return }
        var both = weak
        both.lastModified = dated.lastModified
        guard case .continueAt = answer(fresh, identity: both) else { Issue.record("a weak tag and a date: the date"); return }
        for identity in [weak, Validators()] {
            guard case .changed(let error) = answer(fresh, identity: identity), case .changedOnServer(let url, let detail) = error.reason else {
                Issue.record("\(identity) proves nothing across URLs"); continue
            }
            #expect(url == fresh.description && detail.contains("cannot be continued"))
        }
    }

    @Test func noURLTheSameURLOrAnErrorGivesUpWithTheOriginalFailure() {
        for given in [nil, old] {
            guard case .giveUp(let error) = answer(given), case .httpStatus(403, _, _) = error.reason else {
                Issue.record("\(String(describing: given)): expected the 403"); continue
            }
        }
        let thrown = HaulError.unexpected("the signing service is down")
        guard case .giveUp(let error) = answer(nil, thrown: thrown), case .unexpected = error.reason else {
            Issue.record("the refresher's own error says more"); return
        }
    }

    @Test func theSameRuleDecidesAResumeFromAnotherURL() {
        let asked = try! HTTPURL("https://a.test/latest.iso")
        guard case .sameValidator(let note) = DownloadIdentity.decide(journalURL: "https://b.test/x", journalResolvedURL: nil, journalETag: nil,
                                                                      journalLastModified: 1_445_412_480, requested: asked) else {
            Issue.record("a journal with a date resumes from another URL, held to it"); return
        }
        #expect(note.contains("Last-Modified"))
        guard case .different = DownloadIdentity.decide(journalURL: "https://b.test/x", journalResolvedURL: nil,
                                                        journalETag: Array("W/\"abc\"".utf8), requested: asked) else {
            Issue.record("a weak ETag alone proves nothing"); return
        }
    }
}
