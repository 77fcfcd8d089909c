import Testing
import HaulHTTP

@Suite struct HTTPFieldsTests {
    @Test func lookupIsCaseInsensitiveAndOrdered() {
        let fields = HTTPFields([("Content-Type", "text/plain"), ("set-cookie", "a"), ("Set-Cookie", "b")])
        #expect(fields.firstString("content-type") == "text/plain")
        #expect(fields.all("SET-COOKIE").map { latin1String($0) } == ["a", "b"])
        #expect(fields.first("missing") == nil)
    }

    @Test func latin1DecodesHighOctets() {
        #expect(latin1String([0x63, 0x61, 0x66, 0xE9]) == "café")
    }
}
