import Testing
@testable import HaulHTTP

/// `Repr-Digest` (RFC 9530) as an RFC 8941 Dictionary of Byte Sequences: what is read, and every hostile or
/// malformed value, which must make the field count for nothing rather than trap or half-parse.
@Suite struct RepresentationDigestTests {
    /// sha-256 of "hello world\n" and sha-512 of "" as RFC 9530's examples spell them.
    static let sha256 = "X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="
    static let sha512 = "z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="

    func members(_ value: String) -> [String: [UInt8]] {
        Dictionary(RepresentationDigest.members(of: value).map { ($0.algorithm, $0.digest) }, uniquingKeysWith: { $1 })
    }

    @Test func readsEachAlgorithmsByteSequence() throws {
        let found = members("sha-256=:\(Self.sha256):, sha-512=:\(Self.sha512):")
        #expect(found["sha-256"] == Base64.decode(Self.sha256))
        #expect(found["sha-256"]?.count == 32)
        #expect(found["sha-512"]?.count == 64)
    }

    @Test func readsSeveralFieldLinesAsOneDictionary() {
        let lines = [ArraySlice("sha-256=:\(Self.sha256):".utf8), ArraySlice("sha-512=:\(Self.sha512):".utf8)]
        let found = RepresentationDigest.members(of: lines)
        #expect(found.map(\.algorithm) == ["sha-256", "sha-512"])
    }

    @Test func unknownAlgorithmsParametersAndOtherValuesAreReadPast() {
        let found = members("unixsum=:AAAA:;q=1, sha-256=:\(Self.sha256):;note=\"x\";w=0.5, md5=token, id-sha-256=(1 2), flag")
        #expect(found["sha-256"]?.count == 32)
        #expect(found["unixsum"] == [0, 0, 0])
        // Not Byte Sequences: left out, not an error.
        #expect(found["md5"] == nil && found["id-sha-256"] == nil && found["flag"] == nil)
    }

    @Test func aDuplicateKeyKeepsItsLastValue() {
        let found = RepresentationDigest.members(of: "sha-256=:AAAA:, sha-256=:\(Self.sha256):")
        #expect(found.count == 1)
        #expect(found.first?.digest.count == 32)
        // A later value that is not a Byte Sequence takes the key's digest away.
        #expect(members("sha-256=:\(Self.sha256):, sha-256=1")["sha-256"] == nil)
    }

    @Test func paddingMayBeLeftOut() {
        let unpadded = String(Self.sha256.dropLast())
        #expect(members("sha-256=:\(unpadded):")["sha-256"]?.count == 32)
    }

    @Test(arguments: [
        "sha-256=:\(sha256)",                  // unterminated byte sequence
        "sha-256=:\(sha256):,",                // trailing comma
        "sha-256=:\(sha256):, ",               // trailing comma and space
        "SHA-256=:\(sha256):",                 // keys are lowercase
        "sha-256 =:\(sha256):",                // space before '='
        "sha-256=:\(sha256): sha-512=:AA==:",  // members without a comma
        "sha-256=:not base64!:",               // characters outside base64
        "sha-256=:QQ=x:",                      // padding in the middle
        "sha-256=:QR==:",                      // stray bits in the padding
        "sha-256=\"unterminated",
        "sha-256=\"bad\u{7}control\"",
        "sha-256=1234567890123456",            // integer of 16 digits
        "sha-256=1.2345",                      // decimal with 4 fraction digits
        "sha-256=(1 2",                        // unterminated inner list
        "sha-256=?2",
        "sha-256=@1659578233",                 // RFC 9651 date: not an RFC 8941 item
        "1sha=:AA==:",
        ",sha-256=:\(sha256):",
        "sha-256=:\(sha256):;=1",
        "",
        "   ",
    ])
    func aMalformedFieldCountsForNothing(value: String) {
        #expect(RepresentationDigest.members(of: value).isEmpty, "\(value)")
    }

    @Test func anOversizedFieldIsNotParsed() {
        let line = "sha-256=:\(Self.sha256):, " + String(repeating: "x=1, ", count: 4000) + "y=1"
        #expect(RepresentationDigest.members(of: line).isEmpty)
    }

    @Test func randomBytesNeverTrap() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        print("RepresentationDigestTests seed 0x9E3779B97F4A7C15")
        let alphabet = Array("sha-256=:,;()\" ?*AZaz09+/=\t.".utf8)
        for _ in 0..<2000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(state % 40) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(alphabet[Int(state >> 33) % alphabet.count])
            }
            state = state &* 6364136223846793005 &+ 1442695040888963407
            for member in RepresentationDigest.members(of: [ArraySlice(bytes)]) { #expect(!member.algorithm.isEmpty) }
        }
    }
}
