import Testing
@testable import Haul

/// What a server's `Retry-After` does to a failed try: honoured up to the bound; past it, the try fails at once
/// and counts like any failed try.
@Suite struct RetryPolicyTests {
    let policy = RetryPolicy()
    let unavailable = HaulError.httpStatus(status: 503, reason: "Service Unavailable", url: "https://a.example/f")

    @Test func theDefaultBoundIsAMinute() {
        #expect(RetryPolicy().maxRetryAfter == .seconds(60))
        #expect(DownloadOptions().retry.maxRetryAfter == .seconds(60))
    }

    @Test func aWaitWithinTheBoundIsHonoured() throws {
        for status in [503, 429, 500, 408] {
            let error = HaulError.httpStatus(status: status, reason: "", url: "u")
            #expect(try policy.serverWait(after: error, retryAfter: .seconds(30)).get() == .seconds(30), "\(status)")
            #expect(try policy.serverWait(after: error, retryAfter: .seconds(60)).get() == .seconds(60), "\(status): the bound itself")
            #expect(try policy.serverWait(after: error, retryAfter: .zero).get() == .zero, "\(status): a date already past")
        }
        #expect(policy.delay(attempt: 1, retryAfter: .seconds(30)) == .seconds(30))
    }

    @Test func aWaitPastTheBoundFailsTheTryNamingTheURLTheWaitAndTheBound() {
        for (status, asked) in [(503, Duration.seconds(999_999_999)), (429, .seconds(61)), (503, .seconds(Int64.max))] {
            let error = HaulError.httpStatus(status: status, reason: "", url: "https://a.example/f")
            let result = policy.serverWait(after: error, retryAfter: asked)
            guard case .failure(let refusal) = result,
                  case .retryAfterTooLong(let url, let refusedStatus, let refusedAsk, let limit) = refusal.reason else {
                Issue.record("\(status) asking \(asked): expected a refusal, got \(result)")
                continue
            }
            #expect(url == "https://a.example/f" && refusedStatus == status && refusedAsk == asked && limit == .seconds(60))
            #expect(refusal.isTransient, "its status is retried (on the policy's own backoff), like any failed try")
            #expect(refusal.description.contains("https://a.example/f") && refusal.description.contains("HTTP \(status)"))
            #expect(refusal.description.contains("\(asked.components.seconds) s") && refusal.description.contains("60 s"), "\(refusal)")
        }
    }

    @Test func aShorterBoundIsTheOneNamed() {
        let short = RetryPolicy(maxRetryAfter: .milliseconds(1500))
        guard case .failure(let refusal) = short.serverWait(after: unavailable, retryAfter: .seconds(2)) else {
            Issue.record("expected a refusal"); return
        }
        #expect(refusal.description.contains("2 s") && refusal.description.contains("1500 ms"), "\(refusal)")
    }

    /// `Retry-After` is about the response's own status: on a response that was not refused (a 200 cut off)
    /// or one that is not retried anyway (a 404), it changes nothing.
    @Test func aRetryAfterOnAnotherFailureIsIgnored() throws {
        let cut = HaulError.incomplete(url: "u", expected: 10, received: 5)
        #expect(try policy.serverWait(after: cut, retryAfter: .seconds(999)).get() == nil)
        let missing = HaulError.httpStatus(status: 404, reason: "", url: "u")
        #expect(try policy.serverWait(after: missing, retryAfter: .seconds(999)).get() == nil)
        #expect(try policy.serverWait(after: unavailable, retryAfter: nil).get() == nil)
    }

    /// A refused wait is a failed try: retried on the policy's backoff (not the server's wait) while tries are
    /// left, then another mirror or the end of the download, with the refusal as its error.
    @Test func aRefusedWaitCountsLikeAnyFailedTry() {
        let refusal = HaulError.retryAfterTooLong(url: "u", status: 503, asked: .seconds(3600), limit: .seconds(60))
        func decide(inRow: Int, retries: Int = 0, reResolve: Bool = false, otherMirror: Bool = false) -> FailureAction {
            FailurePolicy.decide(.init(error: refusal, failuresInRow: inRow, retriesSoFar: retries, restartsSoFar: 0,
                                       canReResolve: reResolve, otherMirrorLive: otherMirror), retry: policy, ifChangedOnServer: .fail)
        }
        #expect(decide(inRow: 1) == .retry(attempt: 1, reResolve: false))
        #expect(decide(inRow: policy.triesPerRange - 1) == .retry(attempt: policy.triesPerRange - 1, reResolve: false))
        #expect(decide(inRow: policy.triesPerRange) == .fail, "the tries per range are spent")
        #expect(decide(inRow: policy.triesPerRange, otherMirror: true) == .dropMirror)
        #expect(decide(inRow: 1, retries: policy.totalRetries) == .fail, "the download's retries are spent")
        #expect(decide(inRow: 1, reResolve: true) == .retry(attempt: 1, reResolve: true), "a redirect target goes back to the given URL")
    }
}
