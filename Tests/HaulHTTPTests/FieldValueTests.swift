import Testing
import HaulHTTP

/// Groups the field-value suites so `--filter FieldValueTests` selects them all.
@Suite enum FieldValueTests {
    @Suite struct ContentRangeTests {
        @Test(arguments: [
            ("bytes 0-499/1234", ContentRange.bytes(first: 0, last: 499, completeLength: 1234)),
            ("bytes 500-999/*", .bytes(first: 500, last: 999, completeLength: nil)),
            ("BYTES 0-0/1", .bytes(first: 0, last: 0, completeLength: 1)),
            ("  bytes  21010-47021/47022  ", .bytes(first: 21010, last: 47021, completeLength: 47022)),
            ("bytes */47022", .unsatisfied(completeLength: 47022)),
            ("bytes */0", .unsatisfied(completeLength: 0)),
            ("bytes 0-9223372036854775806/9223372036854775807",
             .bytes(first: 0, last: 9_223_372_036_854_775_806, completeLength: Int64.max)),
        ])
        func parsesValid(_ text: String, _ expected: ContentRange) {
            #expect(ContentRange(text) == expected)
        }

        @Test(arguments: [
            "", "bytes", "bytes ", "bytes0-1/2", "items 0-1/2", "bytes 1-0/5", "bytes 0-5/5", "bytes 0-5/0",
            "bytes -5/10", "bytes 0-/10", "bytes 0-1", "bytes 0-1/", "bytes */*", "bytes */", "bytes 0-1/2 x",
            "bytes 0x1-2/3", "bytes +1-2/3", "bytes 0-1/2,3-4/5", "bytes 0 - 1/2",
            "bytes 0-99999999999999999999/100000000000000000000",
            "bytes 0-1/99999999999999999999", "bytes 99999999999999999999-1/2", "bytes */99999999999999999999",
            "bytes 0-9223372036854775807/*", "bytes 0-9223372036854775808/*",
        ])
        func rejectsInvalid(_ text: String) {
            #expect(ContentRange(text) == nil)
        }

        @Test func exposesRangeCountAndLength() throws {
            let partial = try #require(ContentRange("bytes 100-199/1000"))
            #expect(partial.range == 100...199)
            #expect(partial.count == 100)
            #expect(partial.completeLength == 1000)
            #expect(partial.description == "bytes 100-199/1000")
            let unsatisfied = try #require(ContentRange("bytes */1000"))
            #expect(unsatisfied.range == nil)
            #expect(unsatisfied.count == 0)
            #expect(unsatisfied.completeLength == 1000)
            #expect(unsatisfied.description == "bytes */1000")
            #expect(ContentRange("bytes 5-6/*")?.description == "bytes 5-6/*")
        }

        @Test func parsesFieldSlices() {
            let fields = HTTPFields([("Content-Range", "bytes 0-9/10")])
            #expect(fields.first("content-range").flatMap(ContentRange.init) == .bytes(first: 0, last: 9, completeLength: 10))
        }

        @Test func formatsRangeRequests() {
            #expect(RangeRequest.from(0).headerValue == "bytes=0-")
            #expect(RangeRequest.bytes(100...199).headerValue == "bytes=100-199")
            #expect(RangeRequest.suffix(500).headerValue == "bytes=-500")
            #expect(RangeRequest.from(Int64.max).description == "bytes=9223372036854775807-")
            #expect(RangeRequest.bytes(5...9).first == 5)
            #expect(RangeRequest.bytes(5...9).last == 9)
            #expect(RangeRequest.from(7).last == nil)
            #expect(RangeRequest.suffix(3).first == nil)
        }
    }

    @Suite struct AcceptRangesTests {
        @Test(arguments: [
            ("bytes", ["bytes"], true, false),
            ("none", ["none"], false, true),
            ("Bytes", ["bytes"], true, false),
            ("NONE", ["none"], false, true),
            ("items, bytes", ["items", "bytes"], true, false),
            (" , bytes ,, ", ["bytes"], true, false),
            ("items", ["items"], false, false),
        ])
        func parsesLists(_ text: String, _ units: [String], _ acceptsBytes: Bool, _ acceptsNone: Bool) throws {
            let value = try #require(AcceptRanges(text))
            #expect(value.units == units)
            #expect(value.acceptsBytes == acceptsBytes)
            #expect(value.acceptsNone == acceptsNone)
        }

        @Test(arguments: ["", "  ", ",", "bytes none", "bytes;q=1", "\"bytes\"", "by/tes"])
        func rejectsInvalid(_ text: String) {
            #expect(AcceptRanges(text) == nil)
        }
    }

    @Suite struct EntityTagTests {
        @Test(arguments: [
            ("\"xyzzy\"", "xyzzy", false),
            ("W/\"xyzzy\"", "xyzzy", true),
            ("\"\"", "", false),
            ("W/\"\"", "", true),
            ("  \"a-b_c!#~\"  ", "a-b_c!#~", false),
            ("\"W/abc\"", "W/abc", false),
        ])
        func parsesValid(_ text: String, _ opaque: String, _ weak: Bool) throws {
            let tag = try #require(EntityTag(text))
            #expect(tag.opaqueTag == Array(opaque.utf8))
            #expect(tag.isWeak == weak)
        }

        @Test(arguments: [
            "", "xyzzy", "\"xyzzy", "xyzzy\"", "w/\"xyzzy\"", "W\"x\"", "W/ \"x\"", "\"a\"b\"", "\"a b\"",
            "\"a\tb\"", "\"a\u{7F}\"", "\"a\" \"b\"", "\"a\",\"b\"", "W/xyzzy",
        ])
        func rejectsInvalid(_ text: String) {
            #expect(EntityTag(text) == nil)
        }

        @Test func keepsObsTextExactly() throws {
            let raw: [UInt8] = [0x22, 0x61, 0xE9, 0xFF, 0x22]
            let tag = try #require(EntityTag(raw[...]))
            #expect(tag.opaqueTag == [0x61, 0xE9, 0xFF])
            #expect(tag.fieldValue == raw)
            #expect(tag.ifRangeValue == raw)
        }

        @Test func roundTripsHeaderText() throws {
            #expect(EntityTag("\"v1\"")?.fieldValue == Array("\"v1\"".utf8))
            #expect(EntityTag("W/\"v1\"")?.fieldValue == Array("W/\"v1\"".utf8))
            #expect(EntityTag("W/\"v1\"")?.description == "W/\"v1\"")
            #expect(EntityTag("W/\"v1\"")?.ifRangeValue == nil)
            #expect(EntityTag(opaqueTag: Array("v1".utf8), isWeak: false) == EntityTag("\"v1\""))
            #expect(EntityTag(opaqueTag: Array("a\"b".utf8), isWeak: false) == nil)
        }

        /// The comparison table of RFC 9110 §8.8.3.2.
        @Test(arguments: [
            ("W/\"1\"", "W/\"1\"", false, true),
            ("W/\"1\"", "W/\"2\"", false, false),
            ("W/\"1\"", "\"1\"", false, true),
            ("\"1\"", "\"1\"", true, true),
        ])
        func comparesLikeRFC9110(_ a: String, _ b: String, _ strong: Bool, _ weak: Bool) throws {
            let lhs = try #require(EntityTag(a)), rhs = try #require(EntityTag(b))
            #expect(lhs.strongMatches(rhs) == strong)
            #expect(rhs.strongMatches(lhs) == strong)
            #expect(lhs.weakMatches(rhs) == weak)
        }
    }

    @Suite struct HTTPDateTests {
        static let rfcExample: Int64 = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT

        @Test(arguments: [
            ("Sun, 06 Nov 1994 08:49:37 GMT", rfcExample),
            ("Sunday, 06-Nov-94 08:49:37 GMT", rfcExample),
            ("Sun Nov  6 08:49:37 1994", rfcExample),
            ("Sun Nov 06 08:49:37 1994", rfcExample),
            ("sun, 06 nov 1994 08:49:37 gmt", rfcExample),
            ("  Sun, 06 Nov 1994 08:49:37 GMT ", rfcExample),
            ("Thu, 01 Jan 1970 00:00:00 GMT", 0),
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
            ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600),
            ("Thu, 29 Feb 2024 00:00:00 GMT", 1_709_164_800),
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
            ("Mon, 01 Jan 0001 00:00:00 GMT", -62_135_596_800),
            ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648),
            ("Sat, 31 Dec 2016 23:59:60 GMT", 1_483_228_800),  // leap second: counts as the next second
            ("Thursday, 01-Jan-70 00:00:00 GMT", 0),
            ("Saturday, 01-Jan-00 00:00:00 GMT", 946_684_800),
            ("Wednesday, 31-Dec-69 00:00:00 GMT", 3_155_673_600),  // 2069: the pivot keeps 00-69 in 20xx
            ("Thu Jan  1 00:00:00 1970", 0),
            ("Mon, 06 Nov 1994 08:49:37 GMT", rfcExample),  // wrong day name is not checked
        ])
        func parsesAllThreeFormats(_ text: String, _ seconds: Int64) {
            #expect(HTTPDate(text)?.secondsSinceEpoch == seconds)
        }

        @Test(arguments: [
            "", "Sun, 06 Nov 1994 08:49:37", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 32 Oct 1994 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT", "Tue, 29 Feb 1900 00:00:00 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT x", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sunday, 06 Nov 94 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT", "Sun Nov 6 08:49:37 1994", "Sun Nov  6 08:49:37 94",
            "Sunday Nov  6 08:49:37 1994", "1994-11-06T08:49:37Z", "784111777", "Sun, 06 Nov 1994 08:49:37 GMT\r\n",
        ])
        func rejectsInvalid(_ text: String) {
            #expect(HTTPDate(text) == nil)
        }

        @Test(arguments: [
            (Int64(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT"),
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
            (951_825_600, "Tue, 29 Feb 2000 12:00:00 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (-62_135_596_800, "Mon, 01 Jan 0001 00:00:00 GMT"),
        ])
        func formatsIMFFixdate(_ seconds: Int64, _ text: String) {
            #expect(HTTPDate(secondsSinceEpoch: seconds).imfFixdate == text)
            #expect(HTTPDate(secondsSinceEpoch: seconds).description == text)
            #expect(HTTPDate(text)?.secondsSinceEpoch == seconds)
        }

        @Test func roundTripsEveryDayOverFourHundredYears() {
            // One full Gregorian cycle each side of the epoch, in steps that hit every day-of-month and weekday.
            var seconds: Int64 = -12_622_780_800
            while seconds < 12_622_780_800 {
                let date = HTTPDate(secondsSinceEpoch: seconds)
                #expect(HTTPDate(date.imfFixdate) == date)
                seconds += 86_400 * 13 + 3_661
            }
        }

        /// Day and month names are matched as packed lowercased bytes: every mix of case of every name parses
        /// to the same date, and a name one byte off (or a byte that only lowercases alike outside A–Z) does not.
        @Test func matchesDayAndMonthNamesInAnyCase() {
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
            func caseMixes(_ name: String) -> [String] {
                let bytes = Array(name.utf8)
                return (0..<8).map { mask in
                    String(decoding: bytes.enumerated().map { mask >> $0.offset & 1 == 1 ? $0.element ^ 0x20 : $0.element }, as: UTF8.self)
                }
            }
            for (index, month) in months.enumerated() {
                let canonical = HTTPDate("Sun, 06 \(month) 1994 08:49:37 GMT")
                #expect(canonical == HTTPDate(year: 1994, month: index + 1, day: 6, hour: 8, minute: 49, second: 37))
                for mix in caseMixes(month) {
                    #expect(HTTPDate("Sun, 06 \(mix) 1994 08:49:37 GMT") == canonical, "\(mix)")
                    #expect(HTTPDate("Sunday, 06-\(mix)-94 08:49:37 GMT") == canonical, "\(mix)")
                    #expect(HTTPDate("Sun \(mix)  6 08:49:37 1994") == canonical, "\(mix)")
                }
                for day in days {
                    for mix in caseMixes(day) {
                        #expect(HTTPDate("\(mix), 06 \(month) 1994 08:49:37 GMT") == canonical, "\(mix)")
                    }
                }
                var bytes = Array(month.utf8)
                bytes[2] = bytes[2] &+ 1
                #expect(HTTPDate("Sun, 06 \(String(decoding: bytes, as: UTF8.self)) 1994 08:49:37 GMT") == nil || months.contains(String(decoding: bytes, as: UTF8.self)))
                // `@` and `` ` `` differ by the case bit but are not letters: no match.
                #expect(HTTPDate("Sun, 06 \(month.prefix(2))@ 1994 08:49:37 GMT") == nil)
            }
            #expect(HTTPDate("Su, 06 Nov 1994 08:49:37 GMT") == nil)
            #expect(HTTPDate("Sunx, 06 Nov 1994 08:49:37 GMT") == nil)
            #expect(HTTPDate("Sum, 06 Nov 1994 08:49:37 GMT") == nil)
            #expect(HTTPDate("Sun, 06 No 1994 08:49:37 GMT") == nil)
        }

        /// The IMF-fixdate is written byte by byte for years 0000–9999; it replaced string interpolation
        /// (kept here as the reference), and writes the same text over seeded times from year 0 to 9999 and
        /// beyond either end (where the interpolating form still writes it).
        @Test func writesTheSameIMFFixdateAsInterpolating() {
            func reference(_ date: HTTPDate) -> String {
                let seconds = date.secondsSinceEpoch
                var days = seconds / 86_400
                var secondOfDay = Int(seconds % 86_400)
                if secondOfDay < 0 {
                    secondOfDay += 86_400
                    days -= 1
                }
                let (year, month, day) = HTTPDate.civilFromDays(days)
                let weekday = Int(((days % 7) + 7 + 4) % 7)
                func two(_ value: Int) -> String { value < 10 ? "0\(value)" : String(value) }
                let digits = String(year.magnitude)
                let four = (year < 0 ? "-" : "") + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
                let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
                let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
                return "\(dayNames[weekday]), \(two(Int(day))) \(monthNames[Int(month) - 1]) "
                    + "\(four) \(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
            }
            let seed: UInt64 = 0x494D_4646
            print("writesTheSameIMFFixdateAsInterpolating: seed \(seed)")
            var random = SplitMix64(state: seed)
            let yearZero: Int64 = -62_167_219_200
            let afterYear9999: Int64 = 253_402_300_800
            var times: [Int64] = [yearZero, yearZero - 1, afterYear9999, afterYear9999 - 1, 0, -1, Int64.max, Int64.min]
            for _ in 0..<20_000 { times.append(Int64.random(in: (yearZero - 86_400 * 800)...(afterYear9999 + 86_400 * 800), using: &random)) }
            for _ in 0..<2_000 { times.append(Int64.random(in: Int64.min...Int64.max, using: &random)) }
            for seconds in times {
                let date = HTTPDate(secondsSinceEpoch: seconds)
                let text = reference(date)
                #expect(date.imfFixdate == text, "\(seconds), seed \(seed)")
                // Compared without making the string: the text itself, and no other.
                #expect(date.isIMFFixdate(text), "\(seconds), seed \(seed)")
                #expect(!date.isIMFFixdate(String(text.dropLast())), "\(seconds), seed \(seed)")
                #expect(!date.isIMFFixdate(text.lowercased()), "\(seconds), seed \(seed)")
                #expect(!HTTPDate(secondsSinceEpoch: seconds &+ 1).isIMFFixdate(text), "\(seconds), seed \(seed)")
            }
        }

        @Test func formatsExtremeValuesWithoutTrapping() {
            // Years past 9999 or before 0 print with all their digits and sign: the true proleptic Gregorian
            // date, which is not an HTTP-date, so it does not parse back.
            let latest = HTTPDate(secondsSinceEpoch: Int64.max).imfFixdate
            let earliest = HTTPDate(secondsSinceEpoch: Int64.min).imfFixdate
            #expect(latest == "Sun, 04 Dec 292277026596 15:30:07 GMT")
            #expect(earliest == "Sun, 27 Jan -292277022657 08:29:52 GMT")
            #expect(HTTPDate(latest) == nil && HTTPDate(earliest) == nil)
            #expect(HTTPDate(secondsSinceEpoch: -1).imfFixdate == "Wed, 31 Dec 1969 23:59:59 GMT")
        }

        @Test func buildsFromCalendarFields() {
            #expect(HTTPDate(year: 1994, month: 11, day: 6, hour: 8, minute: 49, second: 37)?.secondsSinceEpoch == 784_111_777)
            #expect(HTTPDate(year: 2023, month: 2, day: 29, hour: 0, minute: 0, second: 0) == nil)
            #expect(HTTPDate(year: 2024, month: 13, day: 1, hour: 0, minute: 0, second: 0) == nil)
            #expect(HTTPDate(secondsSinceEpoch: 1) > HTTPDate(secondsSinceEpoch: 0))
        }
    }

    @Suite struct RetryAfterTests {
        @Test func parsesDelaySeconds() {
            #expect(RetryAfter("120") == .seconds(120))
            #expect(RetryAfter(" 0 ") == .seconds(0))
            #expect(RetryAfter("120")?.delay(now: 1_000) == 120)
        }

        @Test func parsesDates() {
            let value = RetryAfter("Fri, 31 Dec 1999 23:59:59 GMT")
            #expect(value == .date(HTTPDate(secondsSinceEpoch: 946_684_799)))
            #expect(value?.delay(now: 946_684_700) == 99)
            #expect(value?.delay(now: 946_684_799) == 0)
            #expect(value?.delay(now: 946_684_900) == 0)  // already past: never negative
        }

        @Test(arguments: ["", "-1", "1.5", "12 s", "99999999999999999999", "soon", "Fri, 31 Dec 1999", "+5"])
        func rejectsInvalid(_ text: String) {
            #expect(RetryAfter(text) == nil)
        }

        @Test func clampsWhenTheDifferenceOverflows() {
            #expect(RetryAfter.date(HTTPDate(secondsSinceEpoch: Int64.max)).delay(now: -10) == Int64.max)
            #expect(RetryAfter.date(HTTPDate(secondsSinceEpoch: Int64.min)).delay(now: 10) == 0)
        }
    }

    @Suite struct ContentDispositionTests {
        @Test(arguments: [
            ("attachment; filename=\"report.pdf\"", "attachment", "report.pdf"),
            ("attachment; filename=report.pdf", "attachment", "report.pdf"),
            ("ATTACHMENT; FILENAME=report.pdf", "attachment", "report.pdf"),
            ("inline; filename=\"a \\\"quoted\\\" \\\\ name.txt\"", "inline", "a \"quoted\" \\ name.txt"),
            ("attachment;filename=\"x.bin\";size=12", "attachment", "x.bin"),
            ("attachment; size=12; filename = \"x.bin\" ", "attachment", "x.bin"),
            ("attachment; filename=\"a;b.txt\"", "attachment", "a;b.txt"),
            ("attachment; filename=my file.txt", "attachment", "my file.txt"),
            ("attachment; filename=\"../../etc/passwd\"", "attachment", "../../etc/passwd"),
            ("attachment; filename*=UTF-8''%e2%82%ac%20rates.txt", "attachment", "€ rates.txt"),
            ("attachment; filename*=utf-8'en'na%C3%AFve.txt", "attachment", "naïve.txt"),
            ("attachment; filename*=ISO-8859-1''caf%E9.txt", "attachment", "café.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%E2%82%AC.txt", "attachment", "€.txt"),
            ("attachment; filename*=UTF-8''%E2%82%AC.txt; filename=\"fallback.txt\"", "attachment", "€.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%FF.txt", "attachment", "fallback.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=KOI8-R''abc", "attachment", "fallback.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8''%G1", "attachment", "fallback.txt"),
            ("attachment; filename=\"fallback.txt\"; filename*=UTF-8'abc", "attachment", "fallback.txt"),
            ("attachment; filename=\"first.txt\"; filename=\"second.txt\"", "attachment", "first.txt"),
            ("attachment; filename=\"caf\u{E9}.txt\"", "attachment", "café.txt"),
        ])
        func extractsFilename(_ text: String, _ type: String, _ filename: String) throws {
            let value = try #require(ContentDisposition(text))
            #expect(value.type == type)
            #expect(value.filename == filename)
        }

        @Test func decodesLatin1QuotedStrings() throws {
            let raw: [UInt8] = Array("attachment; filename=\"caf".utf8) + [0xE9] + Array(".txt\"".utf8)
            #expect(ContentDisposition(raw[...])?.filename == "café.txt")
        }

        @Test(arguments: [
            ("inline", "inline"),
            ("attachment", "attachment"),
            ("attachment;", "attachment"),
            ("attachment; filename=\"\"", "attachment"),
            ("attachment; filename*=UTF-8''", "attachment"),
            ("form-data; name=\"field\"", "form-data"),
        ])
        func hasNoFilename(_ text: String, _ type: String) throws {
            let value = try #require(ContentDisposition(text))
            #expect(value.type == type)
            #expect(value.filename == nil)
            #expect(value.isAttachment == (type == "attachment"))
        }

        @Test(arguments: [
            "", "; filename=a", "attachment filename=a", "attachment; filename", "attachment; filename=",
            "attachment; filename=\"unterminated", "attachment; =a", "attachment; filename=\"a\" junk",
            "attachment; filename=a\u{0}b",
        ])
        func rejectsMalformed(_ text: String) {
            #expect(ContentDisposition(text) == nil)
        }
    }
}

/// A deterministic generator (SplitMix64), so a failing fuzz input is reproducible.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Random bytes drawn mostly from the characters the grammars care about.
    mutating func syntaxBytes(maxCount: Int) -> [UInt8] {
        let alphabet = Array("0123456789aAbBzZ W/*-,;=\"'%:@[]?#.\\\t\r\n\u{0}\u{7F}".utf8) + [0xE9, 0xFF, 0x80]
        let count = Int.random(in: 0...maxCount, using: &self)
        return (0..<count).map { _ in
            Bool.random(using: &self) ? alphabet.randomElement(using: &self)! : UInt8.random(in: 0...255, using: &self)
        }
    }
}

extension FieldValueTests {
    @Suite struct FuzzTests {
        /// Arbitrary bytes never trap a parser, and whatever one accepts is a value that holds its type's
        /// invariants and reads back the same from its own text.
        @Test func parsersNeverTrapOnArbitraryBytes() {
            let seed: UInt64 = 0x4841_554C
            print("FieldValueTests.parsersNeverTrapOnArbitraryBytes seed \(seed)")
            var random = SplitMix64(state: seed)
            // The whole date is a prefix too: a date with a random tail is refused but for the rare empty or
            // blank tail, and those make the date parser's checks below run.
            let prefixes = ["bytes ", "bytes */", "W/\"", "Sun, 06 Nov 1994 ", "Sun, 06 Nov 1994 08:49:37 GMT",
                            "attachment; filename*=UTF-8''", ""]
            var accepted: [String: Int] = [:]
            for _ in 0..<20_000 {
                let prefix = prefixes.randomElement(using: &random)!
                let bytes = (Array(prefix.utf8) + random.syntaxBytes(maxCount: 40))[...]
                let input = String(decoding: bytes, as: UTF8.self).debugDescription
                if let value = ContentRange(bytes) {
                    accepted["Content-Range", default: 0] += 1
                    #expect(ContentRange(value.description) == value, "\(input)")
                    if let range = value.range, let length = value.completeLength {
                        #expect(range.upperBound < length, "\(input)")
                    }
                }
                if let value = AcceptRanges(bytes) {
                    accepted["Accept-Ranges", default: 0] += 1
                    #expect(!value.units.isEmpty && value.units.allSatisfy { $0 == $0.lowercased() }, "\(input)")
                    #expect(AcceptRanges(value.units.joined(separator: ", ")) == value, "\(input)")
                }
                if let tag = EntityTag(bytes) {
                    accepted["ETag", default: 0] += 1
                    #expect(EntityTag(tag.fieldValue[...]) == tag, "\(input)")
                }
                if let date = HTTPDate(bytes) {
                    accepted["HTTP-date", default: 0] += 1
                    #expect(HTTPDate(date.imfFixdate) == date, "\(input)")
                }
                if let value = RetryAfter(bytes) {
                    accepted["Retry-After", default: 0] += 1
                    switch value {
                    case .seconds(let seconds): #expect(seconds >= 0 && RetryAfter(String(seconds)) == value, "\(input)")
                    case .date(let date): #expect(RetryAfter(date.imfFixdate) == value, "\(input)")
                    }
                }
                if let value = ContentDisposition(bytes) {
                    accepted["Content-Disposition", default: 0] += 1
                    #expect(!value.type.isEmpty && value.type == value.type.lowercased(), "\(input)")
                    #expect(value.filename.map { !$0.isEmpty } ?? true, "\(input)")
                }
            }
            print("accepted of 20000: \(accepted.sorted { $0.key < $1.key })")
            // Each parser took some inputs, so the checks above ran for every one of them.
            for name in ["Content-Range", "Accept-Ranges", "ETag", "HTTP-date", "Retry-After", "Content-Disposition"] {
                #expect(accepted[name, default: 0] > 0, "\(name) accepted nothing")
            }
        }
    }
}
