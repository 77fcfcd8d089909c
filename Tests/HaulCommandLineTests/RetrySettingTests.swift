import Haul
import HaulCommandLine
import Testing

/// `--retries N` means N retries for the download, as its help says, not "at most 5 tries a range".
struct RetrySettingTests {
    @Test func oneURLLetsARangeUseTheWholeBudget() {
        let policy = RetryPolicy.commandLine(retries: 20, urls: 1)
        #expect(policy.totalRetries == 20)
        #expect(policy.triesPerRange == 21, "one try and twenty retries")
        #expect(RetryPolicy.commandLine(retries: 100, urls: 1).triesPerRange == 101)
    }

    @Test func mirrorsMoveOnAfterAFewTriesOnOne() {
        let policy = RetryPolicy.commandLine(retries: 20, urls: 3)
        #expect(policy.totalRetries == 20)
        #expect(policy.triesPerRange == RetryPolicy.triesPerMirror)
        #expect(RetryPolicy.commandLine(retries: 2, urls: 2).triesPerRange == 3, "never more tries than the budget allows")
    }

    @Test func zeroIsNoRetry() {
        #expect(RetryPolicy.commandLine(retries: 0, urls: 1) == .none)
        #expect(RetryPolicy.commandLine(retries: 0, urls: 4) == .none)
    }

    /// Without `--retries` the engine's default stands, so that a dead host fails in seconds instead of after
    /// a hundred waits of up to 10 s for its one range.
    @Test func withoutTheFlagADeadRangeStopsAfterTheDefaultTries() {
        #expect(RetryPolicy.commandLine(retries: nil, urls: 1) == RetryPolicy())
        #expect(RetryPolicy.commandLine(retries: nil, urls: 3) == RetryPolicy())
        #expect(RetryPolicy().triesPerRange == 5)
        #expect(RetryPolicy.commandLineHelp.contains("Default: 5 tries in a row for a range, 100 retries in all"))
    }
}
