import Foundation
import HaulHTTP
import Testing

/// The value types Haul's results carry encode with stdlib Codable and decode back to equal values; text that
/// does not parse is a decoding error.
@Suite struct HTTPValueCodableTests {
    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> (T, String) {
        let data = try JSONEncoder().encode([value])   // wrapped: single values at the top level are not JSON everywhere
        let decoded = try JSONDecoder().decode([T].self, from: data)
        return (decoded[0], String(decoding: data, as: UTF8.self))
    }

    @Test(arguments: [
        "http://example.org/",
        "HTTPS://Example.COM:8443/a/b?x=1&y=%20#frag",
        "https://[::1]:8443/a?",
        "http://user@host.example/p",
        "https://us%3Aer:p%40ss%2Fw%20rd%3A@host.example/",
        "https://%C3%A9l%C3%A8ve:@host.example:443/%7Efile",
    ])
    func aURLRoundTripsWithItsCredentials(text: String) throws {
        let url = try HTTPURL(text)
        let (decoded, json) = try roundTrip(url)
        #expect(decoded == url, "\(json)")
        #expect(decoded.userInfo?.user == url.userInfo?.user && decoded.userInfo?.password == url.userInfo?.password)
    }

    @Test func aURLIsEncodedAsItsAbsoluteText() throws {
        let (_, json) = try roundTrip(try HTTPURL("https://me:secret@example.org:8443/a/../b?q=1"))
        #expect(json == #"["https:\/\/me:secret@example.org:8443\/b?q=1"]"#)
    }

    @Test(arguments: [#"["ftp://example.org/"]"#, #"["not a url"]"#, #"[""]"#, "[42]"])
    func aMalformedURLIsADecodingError(json: String) {
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode([HTTPURL].self, from: Data(json.utf8)) }
    }

    @Test func entityTagsRoundTripByteForByte() throws {
        let tags = [EntityTag("\"abc\"")!, EntityTag("W/\"abc\"")!, EntityTag(opaqueTag: [0x61, 0xE9, 0xFF], isWeak: false)!,
                    EntityTag("\"\"")!]
        for tag in tags {
            let (decoded, json) = try roundTrip(tag)
            #expect(decoded == tag && decoded.isWeak == tag.isWeak && decoded.opaqueTag == tag.opaqueTag, "\(json)")
        }
        #expect(try roundTrip(EntityTag("W/\"v1\"")!).1 == #"["W\/\"v1\""]"#)
    }

    @Test(arguments: [#"["abc"]"#, #"["\"a\" \"b\""]"#, #"["\"\u0100\""]"#, "[1]"])
    func aMalformedEntityTagIsADecodingError(json: String) {
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode([EntityTag].self, from: Data(json.utf8)) }
    }

    @Test func datesRoundTripAsSecondsSinceTheEpoch() throws {
        for seconds: Int64 in [0, 784_111_777, -86_400, 253_402_300_800] {
            let date = HTTPDate(secondsSinceEpoch: seconds)
            let (decoded, json) = try roundTrip(date)
            #expect(decoded == date)
            #expect(json == "[\(seconds)]")
        }
    }
}
