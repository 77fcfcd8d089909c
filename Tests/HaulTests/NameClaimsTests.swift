import Testing
@testable import Haul

/// The rules of ``NameClaims``: which final names collide, who holds them, and when they are free again.
struct NameClaimsTests {
    @Test func aNameIsHeldByOneDownloadAtATime() {
        var claims = NameClaims()
        #expect(claims.claim("/d/a.bin", path: "d/a.bin", owner: 1) == nil)
        #expect(claims.claim("/d/a.bin", path: "./d/a.bin", owner: 2) == NameClaims.Holder(owner: 1, path: "d/a.bin"))
        // Its own name again (a resume of the same download) is no collision.
        #expect(claims.claim("/d/a.bin", path: "d/a.bin", owner: 1) == nil)
        claims.release(owner: 1)
        #expect(claims.claim("/d/a.bin", path: "d/a.bin", owner: 2) == nil)
        #expect(claims.key(of: 2) == "/d/a.bin")
    }

    /// `x` and `x.part` differ, yet the second one's final rename would replace the first one's partial
    /// file; so with the journal (`x.part.haul`) and its replacement (`x.part.haul.tmp`), both ways round.
    @Test(arguments: [".part", ".part.haul", ".part.haul.tmp"])
    func namesDifferingByAWorkingSuffixCollide(suffix: String) {
        var claims = NameClaims()
        #expect(claims.claim("/d/x", path: "d/x", owner: 1) == nil)
        #expect(claims.claim("/d/x" + suffix, path: "d/x" + suffix, owner: 2)?.owner == 1)

        var reversed = NameClaims()
        #expect(reversed.claim("/d/x" + suffix, path: "d/x" + suffix, owner: 2) == nil)
        #expect(reversed.claim("/d/x", path: "d/x", owner: 1)?.owner == 2)
    }

    @Test(arguments: ["/d/x.bin", "/d/x_part", "/e/x", "/d/x.haul", "/d/x.part.part.haul"])
    func unrelatedNamesDoNotCollide(other: String) {
        var claims = NameClaims()
        #expect(claims.claim("/d/x", path: "d/x", owner: 1) == nil)
        #expect(claims.claim(other, path: other, owner: 2) == nil)
    }

    /// A download whose name changes (a directory download resumed after a redirect moved) gives up the old one.
    @Test func aNewClaimGivesUpTheOwnersOldName() {
        var claims = NameClaims()
        #expect(claims.claim("/d/old", path: "d/old", owner: 1) == nil)
        #expect(claims.claim("/d/new", path: "d/new", owner: 1) == nil)
        #expect(claims.claim("/d/old", path: "d/old", owner: 2) == nil)
        // A refused claim leaves the old name held.
        #expect(claims.claim("/d/old", path: "d/old", owner: 1)?.owner == 2)
        #expect(claims.key(of: 1) == "/d/new")
    }

    @Test func keysResolveTheDirectory() {
        #expect(DestinationClaims.lexicallyNormalized("a/./b//../c", workingDirectory: "/w") == "/w/a/c")
        #expect(DestinationClaims.lexicallyNormalized("/../x/", workingDirectory: "/w") == "/x")
        #expect(DestinationClaims.key(of: "/nonexistent-haul-dir/./sub/../f.bin") == "/nonexistent-haul-dir/f.bin")
        #expect(DestinationClaims.key(of: "/tmp/../tmp/f.bin") == DestinationClaims.key(of: "/tmp/f.bin"))
    }
}
