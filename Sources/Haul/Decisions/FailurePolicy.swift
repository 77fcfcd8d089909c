/// What a failed request leads to: another try of the same range, another mirror, starting over, or the end
/// of the download. The one place that weighs a failure against the retry budget; pure.
enum FailureAction: Equatable {
    /// Try the range again after the ``RetryPolicy`` wait for `attempt`; with `reResolve`, from the
    /// mirror's given URL (its redirect target failed).
    case retry(attempt: Int, reResolve: Bool)
    /// Stop using this mirror; its work moves to the others.
    case dropMirror
    /// The resource changed and the caller allowed starting over.
    case restart
    case fail
}

enum FailurePolicy {
    struct Context {
        var error: HaulError
        /// Failures of this connection in a row, this one included.
        var failuresInRow: Int
        /// Retries the whole download has made so far.
        var retriesSoFar: Int
        /// Restarts after a change so far.
        var restartsSoFar: Int
        /// Whether the failed request went to a URL a redirect led to, and the mirror may go back.
        var canReResolve: Bool
        var otherMirrorLive: Bool
    }

    /// Most restarts after the resource changed: a file that keeps changing cannot be downloaded.
    static let maximumRestarts = 3

    static func decide(_ context: Context, retry: RetryPolicy, ifChangedOnServer: ChangePolicy) -> FailureAction {
        switch context.error.reason {
        case .changedOnServer:
            return ifChangedOnServer == .restart && context.restartsSoFar < maximumRestarts ? .restart : .fail
        case .disk, .insufficientSpace, .outputClosed, .destinationBusy, .unexpected:
            // Local trouble: no server, and no other mirror, can help with it.
            return .fail
        case .responseTooLarge:
            // The resource itself is larger than the caller allows; its mirrors are the same resource.
            return .fail
        case .mirrorMismatch:
            // URLs given as one file's mirrors that are different files: a mistake of the caller's (several
            // files meant), not a fault to route around — every time, whichever connection notices first.
            return .fail
        default:
            break
        }
        let budgetLeft = context.retriesSoFar < retry.totalRetries
        // A signed link that expired answers 403/404/410; a redirect target can also just be down.
        if context.canReResolve, budgetLeft, context.error.isTransient || expiredLink(context.error) {
            return .retry(attempt: context.failuresInRow, reResolve: true)
        }
        guard retry.isRetriable(context.error) else { return context.otherMirrorLive ? .dropMirror : .fail }
        guard budgetLeft else { return .fail }
        if context.failuresInRow >= retry.triesPerRange { return context.otherMirrorLive ? .dropMirror : .fail }
        return .retry(attempt: context.failuresInRow, reResolve: false)
    }

    private static func expiredLink(_ error: HaulError) -> Bool {
        if case .httpStatus(let status, _, _) = error.reason { return [401, 403, 404, 410].contains(status) }
        return false
    }
}
