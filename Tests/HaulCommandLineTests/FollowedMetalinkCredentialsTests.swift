import Haul
import HaulCommandLine
import Testing

@Suite("Credentials for a followed Metalink's files")
struct FollowedMetalinkCredentialsTests {
    let document = try! HTTPURL("https://files.example/release.meta4")

    @Test func theDocumentsOwnOriginGetsTheRunsCredentials() throws {
        let file = try HTTPURL("https://files.example/release.iso")
        #expect(FollowedMetalinkCredentials.decide(document: document, file: file, credentialHeaders: false) == .withUser)
        #expect(FollowedMetalinkCredentials.decide(document: document, file: file, credentialHeaders: true) == .withUser)
    }

    /// Another host, another port or another scheme is another origin: the server chose it, `-u` stays home.
    @Test(arguments: ["https://mirror.example/release.iso", "https://files.example:8443/release.iso",
                      "http://files.example/release.iso", "https://evil.example/files.example/release.iso"])
    func anotherOriginGetsNoUser(_ text: String) throws {
        let file = try HTTPURL(text)
        #expect(FollowedMetalinkCredentials.decide(document: document, file: file, credentialHeaders: false) == .withoutUser)
    }

    @Test func credentialHeadersToAnotherOriginRefuseTheFileNamingBothOrigins() throws {
        let file = try HTTPURL("https://mirror.example/release.iso")
        guard case .refused(let reason) = FollowedMetalinkCredentials.decide(document: document, file: file, credentialHeaders: true) else {
            Issue.record("credential headers would go to an origin the server chose")
            return
        }
        #expect(reason.contains("files.example") && reason.contains("mirror.example") && reason.contains("--metalink"))
    }
}
