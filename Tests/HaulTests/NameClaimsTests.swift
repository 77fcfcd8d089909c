import HaulTestSupport
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
        // The key is built from the bytes of the resolved directory and the name as given.
        #expect(DestinationClaims.key(of: "/f.bin") == "/f.bin")
        #expect(DestinationClaims.key(of: "/nonexistent-haul-dir/") == "/nonexistent-haul-dir/")
        #expect(DestinationClaims.key(of: "/nonexistent-haul-dir/e\u{301}x.part").utf8.elementsEqual("/nonexistent-haul-dir/e\u{301}x.part".utf8))
        let relative = DestinationClaims.key(of: "f.bin")
        #expect(relative == DestinationClaims.key(of: "./f.bin"))
        #expect(relative.hasPrefix("/") && relative.hasSuffix("/f.bin") && !relative.hasSuffix("//f.bin"))
        #expect(DestinationClaims.key(of: "nonexistent-haul-dir/f") == relative.dropLast("f.bin".utf8.count) + "nonexistent-haul-dir/f")
    }

    /// ``NameClaims`` looks up a key with a working suffix added only while a held key ends in one; over
    /// generated claims and releases (ASCII, non-ASCII, combining marks, working names of working names) it
    /// answers as the rule it replaced, which looked up every related name every time.
    @Test func claimsAnswerAsLookingUpEveryRelatedName() {
        let seed = TestSeed(for: "NameClaimsTests.claimsAnswerAsLookingUpEveryRelatedName", default: 0x4E41_4D45)
        var random = seed.generator()
        let stems = ["/d/x", "/d/y", "/d/é", "/d/e\u{301}", "/d/\u{301}", "/d/x.", "/d/", "", ".part", "/d/x.PART"]
        let tails = ["", "", ".part", ".part.haul", ".part.haul.tmp", ".part.part", ".haul", ".tmp", "\u{301}", ".part\u{301}"]
        var claims = NameClaims()
        var reference = ReferenceClaims()
        for step in 0..<20_000 {
            let owner = Int(random.next() % 6)
            if random.next() % 4 == 0 {
                claims.release(owner: owner)
                reference.release(owner: owner)
            } else {
                var key = stems[Int(random.next() % UInt64(stems.count))]
                for _ in 0..<Int(random.next() % 3) { key += tails[Int(random.next() % UInt64(tails.count))] }
                let answer = claims.claim(key, path: key, owner: owner)
                let expected = reference.claim(key, path: key, owner: owner)
                #expect(answer == expected, "step \(step), key \(Array(key.unicodeScalars)), \(seed)")
            }
            #expect(claims.key(of: owner) == reference.keys[owner], "step \(step), \(seed)")
        }
    }
}

/// The rule ``NameClaims`` followed before: every related name built and looked up on every claim.
private struct ReferenceClaims {
    var holders: [String: NameClaims.Holder] = [:]
    var keys: [Int: String] = [:]

    mutating func claim(_ key: String, path: String, owner: Int) -> NameClaims.Holder? {
        var related = [key] + WorkingFileNames.suffixes.map { key + $0 }
        if let base = WorkingFileNames.owner(ofWorkingName: key) { related.append(base.destination) }
        for candidate in related {
            if let holder = holders[candidate], holder.owner != owner { return holder }
        }
        release(owner: owner)
        holders[key] = NameClaims.Holder(owner: owner, path: path)
        keys[owner] = key
        return nil
    }

    mutating func release(owner: Int) {
        guard let key = keys.removeValue(forKey: owner) else { return }
        holders[key] = nil
    }
}
