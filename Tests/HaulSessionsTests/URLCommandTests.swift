import Testing
import Haul
import HaulIO
@testable import HaulSessions

/// What a `--url-command` run means (``URLCommand/interpret(_:timeout:)``), and the refresher that runs one.
@Suite struct URLCommandTests {
    func interpret(_ end: CommandOutcome.End, _ output: String, truncated: Bool = false) -> URLCommand.Answer {
        URLCommand.interpret(CommandOutcome(end: end, output: Array(output.utf8), outputTruncated: truncated), timeout: .seconds(30))
    }

    @Test func theFirstLineOfASuccessfulRunIsTheURL() throws {
        #expect(interpret(.exited(0), "  https://cdn.test/f?sig=2 \r\nignored\n") == .url(try HTTPURL("https://cdn.test/f?sig=2")))
        #expect(interpret(.exited(0), "https://cdn.test/f?sig=2") == .url(try HTTPURL("https://cdn.test/f?sig=2")), "no line end")
    }

    @Test func everyOtherRunGivesUpSayingWhy() {
        let cases: [(CommandOutcome.End, String, Bool, String)] = [
            (.exited(3), "https://cdn.test/f\n", false, "exited with status 3"),
            (.timedOut, "https://cdn.test/f\n", false, "did not finish within 30 s"),
            (.exited(0), "", false, "printed no URL"),
            (.exited(0), " \n", false, "printed no URL"),
            (.exited(0), "ftp://cdn.test/f\n", false, "not a usable http(s) URL"),
            (.exited(0), String(repeating: "x", count: 100), true, "without a line end"),
        ]
        for (end, output, truncated, said) in cases {
            guard case .giveUp(let why) = interpret(end, output, truncated: truncated) else { Issue.record("\(end) \(output): a URL"); continue }
            #expect(why.contains(said), "\(why)")
        }
    }

    @Test func theRefresherRunsTheCommandWithTheExpiredURLAndItsStatus() async throws {
        let expired = try HTTPURL("http://a.test/f?sig=1")
        let failure = HaulError.httpStatus(status: 410, reason: "Gone", url: expired.description)
        let refresher = URLCommand(#"printf 'http://a.test/f?sig=2&was=%s\n' "$HAUL_STATUS""#).refresher { _, _ in }
        #expect(try await refresher(expired, failure) == HTTPURL("http://a.test/f?sig=2&was=410"))
        let same = URLCommand(#"echo "$HAUL_URL""#).refresher { line, gaveUp in #expect(gaveUp && line.contains("just failed")) }
        #expect(try await same(expired, failure) == nil, "the URL that just failed again is no refresh")
    }
}
