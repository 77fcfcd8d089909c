import HaulHTTP
import Logging

/// URLs that expire mid-download: a failure that ``URLRefreshDecision`` calls an expired URL asks the
/// download's refresher for a new one (``Action/refreshURL(mirror:url:because:)``), the connections that
/// fail the same way meanwhile wait for its answer, and the answer (``urlRefreshed(mirror:to:refresherError:)``)
/// moves the mirror to the new URL, gives up, or — when nothing can prove the new URL serves the same file —
/// is a change for the ``ChangePolicy``. The bytes already written stay: ranges continue from the new URL,
/// each answer held to the download's identity and length as every answer is.
extension DownloadStateMachine {
    struct URLRefreshState {
        /// One refresh being asked for.
        struct Pending {
            /// The failure that asked for it, with its URL and tries: what a give-up reports.
            var original: HaulError
            /// The URLs that just failed (the mirror's given URL, and where its redirect chain ended).
            var failedURLs: [HTTPURL]
            /// The connections waiting for the answer, the one that asked first.
            var waiting: [Int]
        }

        /// Whether the download has a refresher.
        let enabled: Bool
        /// Refreshes asked for so far, over all mirrors (``URLRefreshDecision/maximumRefreshes``).
        var asked = 0
        /// By mirror.
        var pending: [Int: Pending] = [:]
        /// The URLs refreshes replaced: a request sent to one before its refresh was answered fails late, and
        /// goes to the new URL without asking again.
        var replaced: Set<HTTPURL> = []

        init(enabled: Bool) { self.enabled = enabled }
    }

    /// Connection `id`'s request failed with `error` (`failed`: the same with its URL and tries). Nil when it
    /// is not an expired URL to refresh: the ``FailurePolicy`` decides as for any failure.
    mutating func refreshIfExpired(_ error: HaulError, failed: HaulError, on id: Int) -> [Action]? {
        let connection = connections[id]
        guard let exchange = connection.exchange, exchange.role != .mirrorCheck else { return nil }
        // The mirror whose URL failed (a connection may be placed elsewhere before its next request).
        let mirror = exchange.mirror
        let given = mirrors[mirror].given
        let asking = urlRefresh.pending[mirror] != nil
        if !asking, let first = connection.chain.first, first != given, urlRefresh.replaced.contains(first),
           case .httpStatus(let status, _, _) = error.reason, URLRefreshDecision.expiredStatuses.contains(status) {
            return resume(id)
        }
        let trigger = URLRefreshDecision.trigger(.init(
            // Begun: a response was accepted as the file (the mirror's validators were recorded from it, which
            // a retry that starts a file without ranges over keeps), or a journal is being continued.
            error: error, refresherGiven: urlRefresh.enabled, begun: response != nil || resumedFromJournal || mirrors[mirror].verified,
            // A connection joining a refresh already asked for adds none.
            refreshesSoFar: asking ? 0 : urlRefresh.asked,
            startedAtGivenURL: connection.chain.first == given, canReResolve: mirrors.canReResolve(mirror)))
        switch trigger {
        case .notApplicable:
            return nil
        case .exhausted:
            let limit = URLRefreshDecision.maximumRefreshes
            let notice = "\(given) expired again after \(limit) refreshes of its URL: no more are asked for"
            if !notices.contains(notice) { notices.append(notice) }
            return nil
        case .refresh:
            connections[id].activity = .waitingToRetry
            if asking {
                urlRefresh.pending[mirror]?.waiting.append(id)
                return []
            }
            urlRefresh.asked += 1
            urlRefresh.pending[mirror] = .init(original: failed, failedURLs: [given, exchange.url], waiting: [id])
            let count = urlRefresh.asked
            return [.log(.notice, "the URL has expired: asking for a fresh one", {
                        [LogKey.url: "\(given)", LogKey.reason: "\(failed)", LogKey.connection: "\(id)", "haul.refresh": "\(count)"]
                    }),
                    .refreshURL(mirror: mirror, url: given, because: failed)]
        }
    }

    /// The refresher answered for `mirror`: a new URL (nil for none) or its error.
    mutating func urlRefreshed(mirror: Int, to url: HTTPURL?, refresherError: HaulError?) -> [Action] {
        guard isActive, let pending = urlRefresh.pending.removeValue(forKey: mirror) else { return [] }
        for id in pending.waiting where connections[id].activity == .waitingToRetry { connections[id].activity = .idle }
        let given = mirrors[mirror].given
        let answer = URLRefreshDecision.answer(.init(url: url, refresherError: refresherError, failedURLs: pending.failedURLs,
                                                     identity: mirrors[mirror].validators, original: pending.original))
        switch answer {
        case .giveUp(let error):
            let log = Action.log(.notice, "no fresh URL: the expired one stays failed", {
                [LogKey.url: "\(given)", LogKey.reason: "\(error)", "haul.location": "\(url.map { "\($0)" } ?? "-")"]
            })
            guard mirrors.hasOtherLiveMirror(than: mirror) else { return [log] + fail(error) }
            // Its connections move to the mirrors left, as after a mirror's tries (dropMirror moves them all).
            var actions = [log] + dropMirror(mirror, on: pending.waiting[0], error: error)
            for id in pending.waiting.dropFirst() { actions += resume(id) }
            return actions
        case .changed(let error) where mirrors.hasOtherLiveMirror(than: mirror):
            // Another mirror still serves the file as it was proven: only this one is left out.
            var actions = dropMirror(mirror, on: pending.waiting[0], error: error)
            for id in pending.waiting.dropFirst() { actions += resume(id) }
            return actions
        case .changed(let error):
            if let url { mirrors.refresh(mirror, to: url) }
            let context = FailurePolicy.Context(error: error, failuresInRow: 1, retriesSoFar: retries, restartsSoFar: restarts,
                                                canReResolve: false, otherMirrorLive: false)
            return FailurePolicy.decide(context, retry: options.retry, ifChangedOnServer: ifChangedOnServer) == .restart
                ? restart(because: error) : fail(error)
        case .continueAt(let fresh):
            urlRefresh.replaced.formUnion(pending.failedURLs)
            mirrors.refresh(mirror, to: fresh)
            var actions: [Action] = [.log(.notice, "continuing at a fresh URL; its answers must show the same file", {
                [LogKey.url: "\(given)", "haul.location": "\(fresh)"]
            })]
            for id in pending.waiting where connections[id].activity == .idle { actions += resume(id) }
            return actions
        }
    }
}
