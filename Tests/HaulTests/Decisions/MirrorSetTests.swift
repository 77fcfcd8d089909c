import Testing
import HaulHTTP
@testable import Haul

/// Credentials go only to the origin they were given for, on every request the engine builds.
@Suite struct CredentialScopeTests {
    let headers = HTTPFields([("Authorization", "Bearer secret"), ("X-Custom", "1"), ("cookie", "a=b"),
                              ("Proxy-Authorization", "Basic eA=="), ("Accept", "*/*")])

    func names(_ fields: HTTPFields) -> [String] { fields.pairs.map { $0.name.lowercased() } }

    @Test func theGivenOriginGetsEverything() throws {
        let scope = CredentialScope(headers: headers, givenFor: try HTTPURL("https://a.test/f").origin)
        #expect(names(scope.headers(for: try HTTPURL("https://a.test:443/other?q"))) == ["authorization", "x-custom", "cookie", "proxy-authorization", "accept"])
    }

    @Test(arguments: ["https://b.test/f", "http://a.test/f", "https://a.test:8443/f", "https://sub.a.test/f"])
    func anyOtherOriginGetsNoCredentials(other: String) throws {
        let scope = CredentialScope(headers: headers, givenFor: try HTTPURL("https://a.test/f").origin)
        #expect(names(scope.headers(for: try HTTPURL(other))) == ["x-custom", "accept"])
    }
}

@Suite struct MirrorSetTests {
    func mirrors() throws -> MirrorSet {
        MirrorSet(urls: [try HTTPURL("https://a.test/f"), try HTTPURL("https://m.test/f")],
                  headers: HTTPFields([("Cookie", "a=b")]), userAgent: "t")
    }

    @Test func everyRequestAppliesTheOriginRuleWhereverItGoes() throws {
        var set = try mirrors()
        let cdn = try HTTPURL("https://cdn.test/signed?x=1")
        set.noteRedirect(0, to: cdn)
        #expect(set[0].resolved == cdn && set[0].isRedirected)
        #expect(!set.request(to: set[0].resolved, range: .from(0), ifRange: nil).headers.contains("cookie"))
        #expect(set.request(to: set[0].given, range: .from(0), ifRange: nil).headers.contains("cookie"))
        #expect(!set.request(to: set[1].resolved, range: .from(0), ifRange: nil).headers.contains("cookie"), "a mirror on another origin")
    }

    @Test func aFailingRedirectTargetGoesBackToTheGivenURLAFewTimesAtMost() throws {
        var set = try mirrors()
        let cdn = try HTTPURL("https://cdn.test/signed")
        let fromGiven = set.reResolve(0)
        #expect(!fromGiven, "nothing to go back from")
        for _ in 0..<MirrorSet.maximumReResolutions {
            set.noteRedirect(0, to: cdn)
            #expect(set.canReResolve(0))
            let wentBack = set.reResolve(0)
            #expect(wentBack)
            #expect(set[0].resolved == set[0].given)
        }
        set.noteRedirect(0, to: cdn)
        let again = set.reResolve(0)
        #expect(!set.canReResolve(0) && !again)
    }

    @Test func droppingMovesToTheNextLiveMirror() throws {
        var set = try mirrors()
        #expect(set.mirror(forConnection: 0) == 0 && set.mirror(forConnection: 1) == 1)
        let next = set.drop(0)
        #expect(next == 1)
        #expect(set.mirror(forConnection: 0) == 1 && !set.hasOtherLiveMirror(than: 1))
        let none = set.drop(1)
        #expect(none == nil && !set.hasLiveMirror)
    }
}

@Suite struct DownloadIdentityTests {
    let asked = try! HTTPURL("https://a.test/latest.iso")

    @Test func theSameURLOrItsResolvedFormIsTheSameDownload() {
        #expect(DownloadIdentity.decide(journalURL: asked.description, journalResolvedURL: nil, journalETag: nil, requested: asked) == .same)
        #expect(DownloadIdentity.decide(journalURL: "https://a.test/old", journalResolvedURL: asked.description, journalETag: nil, requested: asked) == .same)
    }

    @Test func anotherURLNeedsAStrongETag() {
        guard case .sameValidator(let note) = DownloadIdentity.decide(journalURL: "https://b.test/x", journalResolvedURL: nil, journalETag: Array("\"abc\"".utf8), requested: asked) else {
            Issue.record("expected sameValidator"); return
        }
        #expect(note.contains("https://b.test/x") && note.contains("\"abc\""))
        for etag in [nil, Array("W/\"abc\"".utf8)] {
            guard case .different(let detail) = DownloadIdentity.decide(journalURL: "https://b.test/x", journalResolvedURL: nil, journalETag: etag, requested: asked) else {
                Issue.record("expected different"); return
            }
            #expect(detail.contains("no strong ETag"))
        }
    }
}
