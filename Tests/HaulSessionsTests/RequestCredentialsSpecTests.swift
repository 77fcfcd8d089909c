import Haul
import Testing
@testable import HaulSessions

/// A background task keeps a request's credentials as the `Authorization` header they are sent as (the
/// daemon's specs have headers, not credentials), so the daemon's download authenticates as the app's would.
@Suite struct RequestCredentialsSpecTests {
    @Test func credentialsBecomeTheSpecsAuthorizationHeader() {
        let request = DownloadRequest(url: "https://example.org/f", destination: .file("/tmp/f"), headers: [("X-A", "1")],
                                      credentials: .init(user: "alice", password: "secret"))
        let spec = TaskSpec(request)
        #expect(spec.headers.map(\.name) == ["X-A", "Authorization"])
        #expect(spec.headers.last?.value == "Basic YWxpY2U6c2VjcmV0")
        #expect(spec.request(firstStart: true).headers.map(\.value) == ["1", "Basic YWxpY2U6c2VjcmV0"])
    }
}
