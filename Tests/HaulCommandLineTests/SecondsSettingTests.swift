import Testing
import HaulCommandLine

/// Seconds given to `--connect-timeout`, `--stall-timeout`, `--max-time`, `--checkpoint-interval` (``SecondsSetting``).
@Suite struct SecondsSettingTests {
    @Test func anOrdinaryValueBecomesItsDuration() throws {
        #expect(try SecondsSetting.duration(10, option: "--max-time") == .seconds(10))
        #expect(try SecondsSetting.duration(0.25, option: "--max-time") == .milliseconds(250))
        #expect(try SecondsSetting.duration(SecondsSetting.longest, option: "--max-time") == .seconds(1_000_000_000))
        #expect(try SecondsSetting.duration(SecondsSetting.shortest, option: "--max-time") == .milliseconds(1))
    }

    /// Each of these used to trap (exit 132) or fail every connection at once.
    @Test(arguments: [Double.infinity, -Double.infinity, Double.nan, 1e30, 1e300, 0, -0.0, -1, 0.0009, 1_000_000_001])
    func aValueThatIsNoUsableWaitIsAUsageErrorNamingTheOption(seconds: Double) {
        #expect {
            _ = try SecondsSetting.duration(seconds, option: "--stall-timeout")
        } throws: { error in
            let text = "\(error)"
            return error is UsageError && text.contains("--stall-timeout") && text.contains("between 0.001 and 1000000000 seconds")
        }
    }
}
