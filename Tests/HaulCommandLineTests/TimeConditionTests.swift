import Haul
import HaulCommandLine
import Testing

/// curl's `-z/--time-cond`: a date in any HTTP-date form, a file's time, the output file (`-N`); the rest
/// refused with a reason.
@Suite struct TimeConditionTests {
    func parse(_ text: String, output: [String] = [], files: [String: Int64] = [:]) throws(TimeConditionError) -> TimeCondition {
        try TimeCondition.parse(text, outputPaths: output) { files[$0] }
    }

    static let date = HTTPDate(secondsSinceEpoch: 1_630_497_600)   // Wed, 01 Sep 2021 12:00:00 GMT

    @Test(arguments: [
        "Wed, 01 Sep 2021 12:00:00 GMT",          // IMF-fixdate
        "wed, 01 sep 2021 12:00:00 gmt",          // names in any case
        "Wednesday, 01-Sep-21 12:00:00 GMT",      // RFC 850
        "Wed Sep  1 12:00:00 2021",               // asctime
        " Wed, 01 Sep 2021 12:00:00 GMT ",
    ])
    func everyHTTPDateFormIsADate(text: String) throws {
        #expect(try parse(text) == .modifiedSince(Self.date), "\(text)")
    }

    @Test func theOutputFileIsTimestampingAndAnotherFileGivesItsTime() throws {
        #expect(try parse("out.bin", output: ["out.bin", "dir/out.bin"]) == .outputFile)
        #expect(try parse("dir/out.bin", output: ["out.bin", "dir/out.bin"]) == .outputFile)
        #expect(try parse("ref.txt", output: ["out.bin"], files: ["ref.txt": 1_630_497_600]) == .modifiedSince(Self.date))
        // A date wins over a file of that name, as in curl.
        #expect(try parse("Wed, 01 Sep 2021 12:00:00 GMT", files: ["Wed, 01 Sep 2021 12:00:00 GMT": 0]) == .modifiedSince(Self.date))
    }

    @Test func unmodifiedSinceIsRefusedClearly() {
        #expect { try parse("-Wed, 01 Sep 2021 12:00:00 GMT") } throws: { error in
            "\(error)".contains("unmodified since") && "\(error)".contains("not supported")
        }
    }

    /// Hostile and near-miss input: each refused with a message, never read as some other date.
    @Test(arguments: [
        "", "yesterday", "20210901", "1 Sep 2021", "Wed, 01 Sep 2021 12:00:00 CET", "Wed, 01 Sep 2021 12:00:00",
        "Wed, 31 Feb 2021 12:00:00 GMT", "Wed, 01 Sep 2021 25:00:00 GMT", "Wed, 01 Sep 2021 12:60:00 GMT",
        "Wed, 01 Sep 2021 12:00:00 GMT trailing", "Wed, 01 Sep 21 12:00:00 GMT", "Xyz, 01 Sep 2021 12:00:00 GMT",
        "Wed, 01 Sep 2021 12:00:00 GMT\r\nX-Injected: 1", "Wed,\u{0}01 Sep 2021", "\u{1B}[31m",
        String(repeating: "9", count: 5000), "Wed, 01 Sep 99999999999999999999 12:00:00 GMT", "Wed, -1 Sep 2021 12:00:00 GMT",
    ])
    func malformedInputIsRefused(text: String) {
        #expect(throws: TimeConditionError.self, "\(text.prefix(40))") { try parse(text) }
    }

    @Test func theRefusalQuotesTheArgumentSafely() {
        #expect { try parse("bad\u{1B}date") } throws: { error in
            let text = "\(error)"
            return !text.contains("\u{1B}") && text.contains("control character")
        }
        #expect { try parse("not-a-date") } throws: { error in
            "\(error)".contains("\"not-a-date\"") && "\(error)".contains("Wed, 01 Sep 2021 12:00:00 GMT")
        }
    }
}
