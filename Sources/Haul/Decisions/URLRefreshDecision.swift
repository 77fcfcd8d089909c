import HaulHTTP

/// Whether a failure is an expired URL worth refreshing (``trigger(_:)``), and what a refresher's answer
/// leads to (``answer(_:_:)``). Pure.
///
/// The rule, as curl and aria2 users would expect of a tool that never splices bytes of two files: the
/// download goes on at a new URL only when the identity it recorded (the probe's validators, or the
/// journal's) can prove the new URL serves the same file: a strong ETag, or a `Last-Modified` date
/// (``provesSameFile(_:)``). Every response of the new URL is then held to that identity and the length
/// exactly, as every response is (``RangedResponseDecision``: another length, a weak tag for a strong one,
/// another date, a validator dropped or gained is a change, and a `200` to a ranged request is a change or
/// a faulty answer, never bytes at the wrong offsets). A weak ETag alone, or no validator at all, proves
/// nothing across two URLs (RFC 9110 §8.8.3: an entity tag is scoped to its resource): the new URL is then
/// a change, and the download's ``ChangePolicy`` applies (fail, or start over from the new URL).
enum URLRefreshDecision {
    /// Most refreshes one download asks for, over all its mirrors.
    static let maximumRefreshes = 5

    /// What is known when a request fails.
    struct Failure {
        var error: HaulError
        /// Whether a refresher was given (``DownloadRequest`` callers: ``HaulClient/start(_:logger:refreshingURL:)``).
        var refresherGiven: Bool
        /// Whether the download has begun: a response was accepted as the file in this run, or a journal
        /// of an earlier run is being continued.
        var begun: Bool
        var refreshesSoFar: Int
        /// Whether the failed request's redirect chain began at the mirror's given URL. When it began at a
        /// URL a redirect led to earlier, going back to the given URL (``MirrorSet/reResolve(_:)``) comes
        /// first: it may hand out a fresh link by itself.
        var startedAtGivenURL: Bool
        /// Whether the mirror may still go back to its given URL.
        var canReResolve: Bool
    }

    enum Trigger: Equatable {
        /// Not an expired URL, or nothing to refresh it with: the ``FailurePolicy`` decides as before.
        case notApplicable
        /// Ask the refresher for a new URL.
        case refresh
        /// An expired URL, but the download has asked ``maximumRefreshes`` times already: the failure
        /// stands (the ``FailurePolicy`` decides, with the error as it is).
        case exhausted
    }

    /// The statuses of a signed link that expired or was revoked (also at the end of a redirect chain).
    static let expiredStatuses: Set<Int> = [401, 403, 404, 410]

    static func trigger(_ failure: Failure) -> Trigger {
        guard failure.refresherGiven, failure.begun, case .httpStatus(let status, _, _) = failure.error.reason,
              expiredStatuses.contains(status) else { return .notApplicable }
        if !failure.startedAtGivenURL && failure.canReResolve { return .notApplicable }
        return failure.refreshesSoFar < maximumRefreshes ? .refresh : .exhausted
    }

    /// What the refresher's answer leads to.
    enum Answer {
        /// Requests go to this URL from now on; its responses are held to the download's identity.
        case continueAt(HTTPURL)
        /// The refresher gave nothing usable (nil, an error, the URL that just failed): the download fails
        /// with this error — the original failure, unless the refresher's own error says more.
        case giveUp(HaulError)
        /// The identity cannot prove the new URL the same file: a change, for the ``ChangePolicy``.
        case changed(HaulError)
    }

    /// What is known when the refresher answers.
    struct Refreshed {
        /// The new URL; nil when the refresher gave none or threw.
        var url: HTTPURL?
        /// What the refresher threw, if it did.
        var refresherError: HaulError?
        /// The URLs that just failed: the mirror's URL the refresher was given and where its chain ended.
        var failedURLs: [HTTPURL]
        /// The download's identity on this mirror.
        var identity: Validators
        /// The failure that asked for the refresh.
        var original: HaulError
    }

    static func answer(_ refreshed: Refreshed) -> Answer {
        guard let url = refreshed.url else { return .giveUp(refreshed.refresherError ?? refreshed.original) }
        // The same URL again would fail again: giving up ends what would otherwise be a loop.
        if refreshed.failedURLs.contains(url) { return .giveUp(refreshed.original) }
        guard provesSameFile(refreshed.identity) else {
            let what = refreshed.identity.isEmpty ? "no ETag or Last-Modified"
                : "only the weak ETag \(refreshed.identity.entityTag.map { "\($0)" } ?? "")"
            return .changed(.changedOnServer(url: url.description, detail: "the download has \(what): nothing can prove that the refreshed URL serves the same file, so the bytes already written cannot be continued from it"))
        }
        return .continueAt(url)
    }

    /// Whether `identity` can show that another URL serves the same file: a strong ETag (which proves the
    /// same bytes) or a `Last-Modified` date (compared exactly with the length, as for any response).
    static func provesSameFile(_ identity: Validators) -> Bool {
        identity.hasStrongEntityTag || identity.lastModified != nil
    }
}
