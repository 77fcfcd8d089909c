import Testing
import HaulHTTP
import HaulIO
@testable import Haul

/// What each failure leads to, against the retry budget.
@Suite struct FailurePolicyTests {
    let retry = RetryPolicy(triesPerRange: 3, totalRetries: 10)

    func decide(_ error: HaulError, inRow: Int = 1, retries: Int = 0, restarts: Int = 0, reResolve: Bool = false,
                otherMirror: Bool = false, ifChangedOnServer: ChangePolicy = .fail) -> FailureAction {
        FailurePolicy.decide(.init(error: error, failuresInRow: inRow, retriesSoFar: retries, restartsSoFar: restarts,
                                   canReResolve: reResolve, otherMirrorLive: otherMirror), retry: retry, ifChangedOnServer: ifChangedOnServer)
    }

    let faulty = HaulError.faultyResponse(url: "u", detail: "d")
    let shifted = HaulError.wrongContentRange(url: "u", requested: "0-9", received: "bytes 1-10/100")
    let changed = HaulError.changedOnServer(url: "u", detail: "d")
    let notFound = HaulError.httpStatus(status: 404, reason: "", url: "u")

    @Test func faultyResponsesAreRetriedThenTheMirrorIsDroppedOrTheDownloadFails() {
        for error in [faulty, shifted, .httpStatus(status: 503, reason: "", url: "u")] {
            #expect(decide(error, inRow: 1) == .retry(attempt: 1, reResolve: false))
            #expect(decide(error, inRow: 2) == .retry(attempt: 2, reResolve: false))
            #expect(decide(error, inRow: 3) == .fail)
            #expect(decide(error, inRow: 3, otherMirror: true) == .dropMirror)
            #expect(decide(error, inRow: 1, retries: 10) == .fail, "the download's budget is spent")
        }
    }

    @Test func aChangedResourceRestartsOnlyWhenAllowedAndAFewTimes() {
        #expect(decide(changed) == .fail)
        #expect(decide(changed, ifChangedOnServer: .restart) == .restart)
        #expect(decide(changed, restarts: FailurePolicy.maximumRestarts, ifChangedOnServer: .restart) == .fail)
        #expect(decide(changed, reResolve: true, otherMirror: true) == .fail, "a change is never retried as a fault")
    }

    @Test func permanentErrorsMoveToAnotherMirrorOrFail() {
        #expect(decide(notFound) == .fail)
        #expect(decide(notFound, otherMirror: true) == .dropMirror)
        #expect(decide(.mirrorMismatch(url: "u", detail: "d"), otherMirror: true) == .fail, "mirrors that are different files")
        // Mirrors are the same resource: none of them is any smaller.
        #expect(decide(.responseTooLarge(url: "u", limit: 10, length: 20), otherMirror: true) == .fail)
        #expect(decide(.responseTooLarge(url: "u", limit: 10, length: nil), reResolve: true, otherMirror: true) == .fail)
    }

    @Test func anExpiredRedirectTargetIsResolvedAgainFromTheGivenURL() {
        for status in [401, 403, 404, 410, 500] {
            #expect(decide(.httpStatus(status: status, reason: "", url: "u"), reResolve: true) == .retry(attempt: 1, reResolve: true))
        }
        #expect(decide(.httpStatus(status: 400, reason: "", url: "u"), reResolve: true) == .fail)
    }
}
