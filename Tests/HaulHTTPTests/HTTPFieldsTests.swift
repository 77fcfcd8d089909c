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
        // A slice of a field (contiguous, the fast path) decodes as a sequence read byte by byte does.
        let bytes: [UInt8] = [0x20, 0x63, 0x61, 0x66, 0xE9, 0x7F, 0xFF, 0x80]
        for start in 0...bytes.count {
            for end in start...bytes.count {
                let slice = bytes[start..<end]
                #expect(latin1String(slice) == latin1String(slice.lazy.map { $0 }), "\(start)..<\(end)")
            }
        }
    }

    /// One pass finds every field of a set of names: each field whose name equals one of them ignoring case,
    /// in order, with the position of that name; names of one length are told apart by their bytes.
    @Test func forEachFieldReportsTheFieldsOfEveryNameInOnePass() {
        let fields = HTTPFields([
            ("Date", "d"), ("ETag", "\"a\""), ("content-type", "text/plain"), ("X-Long-" + String(repeating: "n", count: 70), "x"),
            ("ETAG", "\"b\""), ("Content-Encoding", "gzip"), ("Server", "s"), ("date", "e"), ("Content-Length", "1"),
        ])
        let names = FieldNameSet(["etag", "content-type", "date", "content-encoding", "vary"])
        var seen: [(Int, Int)] = []
        fields.forEachField(named: names) { index, name in seen.append((index, name)) }
        #expect(seen.map(\.0) == [0, 1, 2, 4, 5, 7])
        #expect(seen.map(\.1) == [2, 0, 1, 0, 3, 2])
        var none = 0
        HTTPFields().forEachField(named: names) { _, _ in none += 1 }
        fields.forEachField(named: FieldNameSet(["cache-control"])) { _, _ in none += 1 }
        #expect(none == 0)
    }

    /// Against the lookup by name, over seeded random heads: every field `forEachField` reports is the one
    /// `first`/`all` find, and no field of those names is missed.
    @Test func forEachFieldAgreesWithTheLookupByName() {
        let seed: UInt64 = 0x4E41_4D45_5345_5431
        print("forEachFieldAgreesWithTheLookupByName: seed \(seed)")
        var random = SplitMix64(state: seed)
        let pool = ["ETag", "etag", "Date", "Age", "Content-Type", "CONTENT-TYPE", "Content-Range", "Location",
                    "Last-Modified", "last-modifiee", "Content-Encoding", "Vary", "X", "Content-Rangf", "Locatio"]
        let wanted: [StaticString] = ["content-range", "etag", "last-modified", "location", "content-type", "content-encoding"]
        let names = FieldNameSet(wanted)
        for _ in 0..<500 {
            let count = Int(random.next() % 12)
            let fields = HTTPFields((0..<count).map { i in (pool[Int(random.next() % UInt64(pool.count))], "v\(i)") })
            var reported: [[Int]] = Array(repeating: [], count: wanted.count)
            fields.forEachField(named: names) { index, name in reported[name].append(index) }
            for (position, name) in wanted.enumerated() {
                let text = name.description
                let expected = (0..<fields.count).filter { asciiCaseInsensitiveEquals(fields.name(at: $0), text) }
                #expect(reported[position] == expected, "\(text) in \(fields.pairs), seed \(seed)")
                #expect(reported[position].first.map { fields.value(at: $0) } == fields.first(text))
            }
        }
    }
}
