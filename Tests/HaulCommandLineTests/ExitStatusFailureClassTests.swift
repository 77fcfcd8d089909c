import Haul
import HaulCommandLine
import HaulSessions
import Testing

/// `haul`'s exit statuses classify failures through HaulSessions' `FailureClass`, so a queued task and a
/// direct download of the same failure exit with the same code and class name.
@Suite struct ExitStatusFailureClassTests {
    @Test func everyFailureClassIsTheExitStatusOfTheSameCodeAndName() {
        for failureClass in FailureClass.allCases {
            let status = ExitStatus(failureClass)
            #expect(status.code == failureClass.code, "\(failureClass)")
            #expect(status.className == failureClass.rawValue, "\(failureClass)")
        }
    }

    @Test func aDownloadsFailureAndAQueuedTasksGetTheSameStatus() {
        let notFound = HaulError(.httpStatus(status: 404, reason: "Not Found", url: "http://h/a"))
        #expect(ExitStatus(notFound) == .http)
        #expect(TaskFailure(notFound).exitCode == ExitStatus(notFound).code)
        let closedEarly = HaulError(.malformedResponse(HTTPParseError(.connectionClosedBeforeResponse, offset: 0), server: "h:80"))
        #expect(ExitStatus(closedEarly) == .network && FailureClass(closedEarly) == .network)
    }
}
