@testable import Haul
import HaulHTTP
import Testing

@Suite struct RedirectPolicyTests {
    func head(_ status: Int, location: String?) -> ResponseHead {
        var text = "HTTP/1.1 \(status) Moved\r\nContent-Length: 0\r\n"
        if let location { text += "Location: \(location)\r\n" }
        return CollectedResponse.parse(pieces: [Array((text + "\r\n").utf8)]).head!
    }

    func request(_ url: String) throws -> RequestHead {
        RequestHead(url: try HTTPURL(url), headers: HTTPFields([("Authorization", "Bearer secret"), ("Cookie", "a=b"), ("X-Keep", "1")]))
    }

    @Test func sameOriginKeepsCredentialsCrossOriginDropsThem() throws {
        let policy = RedirectPolicy()
        var visited: [HTTPURL] = []
        let same = try #require(try policy.follow(head(302, location: "/next"), from: request("https://a.example/x"), visited: &visited))
        #expect(same.url.description == "https://a.example/next")
        #expect(same.headers.contains("authorization") && same.headers.contains("cookie"))

        let other = try #require(try policy.follow(head(301, location: "https://b.example/y"), from: request("https://a.example/x"), visited: &visited))
        #expect(!other.headers.contains("authorization") && !other.headers.contains("cookie"))
        #expect(other.headers.firstString("x-keep") == "1")
    }

    @Test func refusesHTTPSDowngradeUnlessAllowed() throws {
        var visited: [HTTPURL] = []
        #expect(throws: RedirectError.self) {
            _ = try RedirectPolicy().follow(head(302, location: "http://a.example/x"), from: request("https://a.example/x"), visited: &visited)
        }
        let allowed = try RedirectPolicy(allowsHTTPSDowngrade: true).follow(head(302, location: "http://a.example/x"), from: request("https://a.example/x"), visited: &visited)
        #expect(allowed?.url.scheme == .http)
    }

    @Test func stopsAfterTheLimitAndOnLoops() throws {
        let policy = RedirectPolicy(maxRedirects: 2)
        var visited = [try HTTPURL("http://h/0")]
        var current = try request("http://h/0")
        for hop in 1...2 {
            current = try #require(try policy.follow(head(307, location: "/\(hop)"), from: current, visited: &visited))
        }
        #expect(throws: RedirectError.self) { _ = try policy.follow(head(308, location: "/3"), from: current, visited: &visited) }
        var loop = [try HTTPURL("http://h/a")]
        #expect(throws: RedirectError.self) { _ = try policy.follow(head(302, location: "/a"), from: request("http://h/a"), visited: &loop) }
    }

    @Test func notARedirectAndMissingLocation() throws {
        var visited: [HTTPURL] = []
        #expect(try RedirectPolicy().follow(head(200, location: nil), from: request("http://h/"), visited: &visited) == nil)
        #expect(throws: RedirectError.self) { _ = try RedirectPolicy().follow(head(302, location: nil), from: request("http://h/"), visited: &visited) }
    }
}

@Suite struct RedirectChainTests {
    @Test func eachRequestFollowsItsOwnChainSoTheSameLocationTwiceIsNoLoop() throws {
        let policy = RedirectPolicy(maxRedirects: 2)
        let start = try HTTPURL("https://a.test/latest")
        var first = [start]
        var second = [start]
        let target1 = try policy.target(status: 302, location: "https://cdn.test/v1", from: start, visited: &first)
        let target2 = try policy.target(status: 302, location: "https://cdn.test/v1", from: start, visited: &second)
        #expect(target1 == target2 && first == second)
        #expect(throws: RedirectError.self) {
            _ = try policy.target(status: 302, location: "https://a.test/latest", from: target1, visited: &first)
        }
    }

    @Test func theHopLimitIsPerChain() throws {
        let policy = RedirectPolicy(maxRedirects: 2)
        var chain = [try HTTPURL("http://a.test/0")]
        var url = chain[0]
        for hop in 1...2 { url = try policy.target(status: 307, location: "/\(hop)", from: url, visited: &chain) }
        #expect(throws: RedirectError.self) { _ = try policy.target(status: 307, location: "/3", from: url, visited: &chain) }
        var fresh = [url]
        #expect(try policy.target(status: 307, location: "/3", from: url, visited: &fresh).path == "/3")
    }
}
