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
        #expect(names(scope.headers(for: try HTTPURL("https://a.test:443/other?q"))) == ["x-custom", "accept", "authorization", "cookie", "proxy-authorization"])
    }

    @Test(arguments: ["https://b.test/f", "http://a.test/f", "https://a.test:8443/f", "https://sub.a.test/f"])
    func anyOtherOriginGetsNoCredentials(other: String) throws {
        let scope = CredentialScope(headers: headers, givenFor: try HTTPURL("https://a.test/f").origin)
        #expect(names(scope.headers(for: try HTTPURL(other))) == ["x-custom", "accept"])
    }
}

@Suite struct URLCredentialTests {
    @Test func userInfoBecomesBasicAuthorizationForItsOwnOriginOnly() throws {
        let primary = try HTTPURL("https://alice:open%20sesame@a.test/f")
        let mirror = try HTTPURL("https://bob@m.test/f")
        let scope = CredentialScope(headers: HTTPFields(), givenFor: primary.origin, urls: [primary, mirror])
        #expect(scope.headers(for: try HTTPURL("https://a.test/other")).firstString("authorization") == "Basic " + BasicAuthorization.base64(Array("alice:open sesame".utf8)))
        #expect(scope.headers(for: try HTTPURL("https://m.test/f")).firstString("authorization") == "Basic Ym9iOg==")
        #expect(!scope.headers(for: try HTTPURL("https://cdn.test/f")).contains("authorization"))
        #expect(!scope.headers(for: try HTTPURL("http://a.test/f")).contains("authorization"), "not over plain http")
    }

    @Test func anExplicitAuthorizationHeaderWinsOverUserInfo() throws {
        let primary = try HTTPURL("https://alice:pw@a.test/f")
        let scope = CredentialScope(headers: HTTPFields([("Authorization", "Bearer t")]), givenFor: primary.origin, urls: [primary])
        #expect(scope.headers(for: primary).all("authorization").map { latin1String($0) } == ["Bearer t"])
    }

    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
                      ("foobar", "Zm9vYmFy"), ("Aladdin:open sesame", "QWxhZGRpbjpvcGVuIHNlc2FtZQ==")])
    func base64MatchesRFC4648AndRFC7617(text: String, encoded: String) {
        #expect(BasicAuthorization.base64(Array(text.utf8)) == encoded)
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
            #expect(detail.contains("no strong ETag or Last-Modified"))
        }
    }
}
