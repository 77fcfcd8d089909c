import Haul

extension RetryPolicy {
    /// Tries a range makes on one mirror before moving to the next, when the download has mirrors.
    public static let triesPerMirror = RetryPolicy().triesPerRange

    /// `--retries N` for `haul` and `haul queue add`: N retries for the whole download, as curl's `--retry N`
    /// and aria2c's `--max-tries N+1`, however they fall. With one URL a single range may use all of them
    /// (there is nowhere else to go, and stopping at a smaller per-range cap would make N a lie); with
    /// mirrors a range moves on after ``triesPerMirror`` tries in a row on one, so that a dead mirror is
    /// left in seconds rather than after N waits. 0 is no retry at all.
    ///
    /// Without the flag (`nil`) the engine's default stands: ``triesPerMirror`` tries in a row for a range and
    /// 100 retries in all, so that a dead host fails in seconds (with waits of up to 10 s, 100 retries of one
    /// range would take a quarter of an hour) while a download whose connections fail now and then still ends.
    public static func commandLine(retries: Int?, urls: Int) -> RetryPolicy {
        guard let retries else { return RetryPolicy() }
        guard retries > 0 else { return .none }
        let perRange = urls > 1 ? min(triesPerMirror, retries + 1) : retries + 1
        return RetryPolicy(triesPerRange: perRange, totalRetries: retries)
    }

    /// What `--retries` means, for its help.
    public static let commandLineHelp = "Retries for the whole download (network failures, 408/429/5xx); with one URL a "
        + "single range may use them all, with mirrors a range moves to the next mirror after \(triesPerMirror) tries in a row on one. "
        + "Default: \(RetryPolicy().triesPerRange) tries in a row for a range, \(RetryPolicy().totalRetries) retries in all."
}
