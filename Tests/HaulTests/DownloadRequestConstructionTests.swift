import Foundation
import HaulTestSupport
import Testing
@testable import Haul

/// The ways an app builds a ``DownloadRequest``: headers and credentials in the initializer, parsed URLs
/// (Haul's `HTTPURL`, Foundation's `URL`) whose errors surface at construction.
@Suite struct DownloadRequestConstructionTests {
    @Test func anHTTPURLRequestKeepsTheURLAndItsUserInformation() throws {
        let url = try HTTPURL("https://me:p%40ss@example.org:8443/a%20b.iso?x=1")
        let request = DownloadRequest(url: url, mirrors: [try HTTPURL("http://mirror.example/a.iso")], destination: .file("a.iso"),
                                      headers: [("X-Token", "1")])
        #expect(try HTTPURL(request.url) == url)
        #expect(try HTTPURL(request.url).userInfo?.user == "me" && HTTPURL(request.url).userInfo?.password != nil)
        #expect(request.mirrors == ["http://mirror.example/a.iso"])
        #expect(request.headers.map(\.name) == ["X-Token"])
    }

    @Test func aFoundationURLIsCheckedAtConstruction() throws {
        let request = try DownloadRequest(url: try #require(URL(string: "https://example.org/a.iso")), destination: .directory("d"))
        #expect(request.url == "https://example.org/a.iso")
        for text in ["ftp://example.org/a.iso", "file:///etc/passwd", "https://user:secret@/nohost"] {
            let url = try #require(URL(string: text))
            do {
                _ = try DownloadRequest(url: url, destination: .file("a"))
                Issue.record("\(text) was accepted")
            } catch {
                guard case .invalidURL = error.reason else { Issue.record("\(text): \(error)"); continue }
                #expect(error.url.map { !$0.contains("secret") } ?? false, "the error's URL shows no password: \(error)")
            }
        }
        // A bad mirror is refused as well.
        #expect(throws: HaulError.self) {
            _ = try DownloadRequest(url: URL(string: "https://example.org/a")!, mirrors: [URL(string: "mailto:a@b")!], destination: .file("a"))
        }
    }

    @Test func credentialsNeverPrintTheirPassword() {
        let credentials = DownloadRequest.Credentials(user: "alice", password: "secret")
        let request = DownloadRequest(url: "https://example.org/", destination: .file("f"), credentials: credentials)
        #expect(String(describing: credentials) == "alice:***" && String(reflecting: credentials) == "alice:***")
        #expect(!String(describing: request).contains("secret"))
    }

    @Test func credentialsAreSentAsBasicAuthorizationUnlessAHeaderAuthorizes() {
        let credentials = DownloadRequest.Credentials(user: "alice", password: "secret")
        let request = DownloadRequest(url: "https://example.org/", destination: .file("f"), headers: [("X-A", "1")], credentials: credentials)
        #expect(request.headersWithCredentials.map(\.name) == ["X-A", "Authorization"])
        #expect(request.headersWithCredentials.last?.value == "Basic YWxpY2U6c2VjcmV0")
        let authorized = DownloadRequest(url: "https://example.org/", destination: .file("f"),
                                         headers: [("authorization", "Bearer t")], credentials: credentials)
        #expect(authorized.headersWithCredentials.map(\.value) == ["Bearer t"])
    }
}

/// Credentials given to a request reach the origin of its URL and no other (a mirror, a redirect's target).
@Suite(.serialized) struct RequestCredentialsTests {
    let resource = MisbehavingServer.Resource.pattern(size: 512 << 10, seed: 31)

    @Test func credentialsGoToTheRequestsOriginOnly() async throws {
        let target = try MisbehavingServer(resource: resource)
        defer { target.stop() }
        let origin = try MisbehavingServer(resource: resource, script: .always(.redirect(to: target.url("/f"))))
        defer { origin.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 2)
        options.retry = .none
        let request = DownloadRequest(url: origin.url("/f"), destination: .file(directory + "/f"),
                                      credentials: DownloadRequest.Credentials(user: "alice", password: "secret"))
        let result = try await HaulClient(options: options).download(request)
        #expect(result.bytes == Int64(resource.bytes.count))
        #expect(!origin.requests.isEmpty && origin.requests.allSatisfy { $0.header("Authorization") == "Basic YWxpY2U6c2VjcmV0" })
        #expect(!target.requests.isEmpty && target.requests.allSatisfy { $0.header("Authorization") == nil })
    }
}

/// A result reports the response the file came from: its status and header fields.
@Suite(.serialized) struct ResultResponseTests {
    @Test func aResultCarriesTheResponsesStatusAndHeaders() async throws {
        let resource = MisbehavingServer.Resource.pattern(size: 64 << 10, seed: 32)
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1)
        options.retry = .none
        let client = try HaulClient(options: options)
        let result = try await client.download(DownloadRequest(url: server.url("/f"), destination: .memory(limit: 1 << 20)))
        let status = try #require(result.status)
        #expect(status == 200 || status == 206)
        #expect(!result.headers.isEmpty)
        let length = result.headers.first { $0.name.lowercased() == "content-length" }?.value
        #expect(length.map { Int64($0) != nil } ?? false, "the fields as sent: \(result.headers)")
    }
}
