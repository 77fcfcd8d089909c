import Testing
@testable import HaulHTTP

/// The in-place IMF-fixdate reader (`HTTPDate.imfFixdateSeconds`) that both public initializers try first must
/// give exactly what the general parser gives: the same date, or a refusal that the general parser then makes
/// too (or reads as another format).
@Suite struct HTTPDateFastPathTests {
    /// Every byte of 46 valid dates replaced by bytes near the grammar (digits, letters of both cases, separators,
    /// whitespace, high octets): the public result equals the general parser's for every variant.
    @Test func agreesWithTheGeneralParserOnEverySingleByteChange() {
        let seed: UInt64 = 0x4854_5450_4441_5445
        print("HTTPDateFastPathTests seed \(seed)")
        var random = SplitMix64(state: seed)
        let replacements = Array("0123456789 ,:-aAzZgGmMtTnNvVoOsSuU\t".utf8) + [0x00, 0x7F, 0x80, 0xC0, 0xE7, 0xFF]
        var dates = ["Sun, 06 Nov 1994 08:49:37 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
                     "Tue, 29 Feb 2000 12:00:00 GMT", "Sat, 31 Dec 2016 23:59:60 GMT", "wed, 31 dec 1969 23:59:59 gmt"]
        for _ in 0..<40 {
            dates.append(HTTPDate(secondsSinceEpoch: Int64.random(in: -62_135_596_800...253_402_300_799, using: &random)).imfFixdate)
        }
        var checked = 0
        var fastPathAccepted = 0
        for date in dates {
            let bytes = Array(date.utf8)
            #expect(bytes.count == 29, "\(date)")
            for position in bytes.indices {
                for replacement in replacements {
                    var changed = bytes
                    changed[position] = replacement
                    let expected = HTTPDate(anyFormat: changed[...])
                    #expect(HTTPDate(changed[...]) == expected, "\(changed)")
                    if changed.allSatisfy({ $0 < 0x80 }) {
                        #expect(HTTPDate(String(decoding: changed, as: UTF8.self)) == expected, "\(changed)")
                    }
                    if changed.withUnsafeBufferPointer(HTTPDate.imfFixdateSeconds) != nil { fastPathAccepted += 1 }
                    checked += 1
                }
            }
        }
        #expect(checked == dates.count * 29 * replacements.count)
        #expect(fastPathAccepted > 0, "some variants (other digits, other case) are still dates")
    }

    /// What the in-place reader leaves to the general parser: other formats, whitespace around, other lengths.
    @Test(arguments: ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", " Sun, 06 Nov 1994 08:49:37 GMT",
                      "Sun, 06 Nov 1994 08:49:37 GMT ", "Sun, 06 Nov 1994 08:49:37 GMTX", "Sun, 06 Nov 1994 08:49:37 GM"])
    func leavesEverythingElseToTheGeneralParser(_ text: String) {
        #expect(Array(text.utf8).withUnsafeBufferPointer(HTTPDate.imfFixdateSeconds) == nil)
        #expect(HTTPDate(text) == HTTPDate(anyFormat: Array(text.utf8)[...]))
    }

    /// Formatting in place gives 29 bytes that the general parser reads back as the same date, for dates of
    /// every weekday, month and padding.
    @Test func formatsWhatTheGeneralParserReadsBack() {
        var seconds: Int64 = -62_135_596_800
        while seconds < 253_402_300_799 {
            let date = HTTPDate(secondsSinceEpoch: seconds)
            let text = date.imfFixdate
            #expect(text.utf8.count == 29)
            #expect(HTTPDate(anyFormat: Array(text.utf8)[...]) == date, "\(text)")
            seconds += 86_400 * 397 + 3_723
        }
    }
}
