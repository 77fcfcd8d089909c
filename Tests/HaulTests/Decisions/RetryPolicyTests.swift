import Testing
@testable import Haul

/// What a server's `Retry-After` does to a failed try: honoured up to the bound, a failure past it.
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
            #expect(!refusal.isTransient, "not retried: the server said when to come back")
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

    @Test func aRefusedWaitIsNotRetriedButMovesToAnotherMirror() {
        let refusal = HaulError.retryAfterTooLong(url: "u", status: 503, asked: .seconds(3600), limit: .seconds(60))
        func decide(reResolve: Bool, otherMirror: Bool) -> FailureAction {
            FailurePolicy.decide(.init(error: refusal, failuresInRow: 1, retriesSoFar: 0, restartsSoFar: 0,
                                       canReResolve: reResolve, otherMirrorLive: otherMirror), retry: policy, ifChangedOnServer: .fail)
        }
        #expect(decide(reResolve: false, otherMirror: false) == .fail)
        #expect(decide(reResolve: true, otherMirror: false) == .fail, "nor tried again from the given URL")
        #expect(decide(reResolve: false, otherMirror: true) == .dropMirror)
    }
}
