import Testing
import HaulCommandLine

@Suite struct UnitFormattingTests {
    @Test func fixedPointRoundsHalfAwayFromZeroAndPadsFractions() {
        #expect(UnitFormatting.fixedPoint(431.25, fractionDigits: 1) == "431.3")
        #expect(UnitFormatting.fixedPoint(0.05, fractionDigits: 3) == "0.050")
        #expect(UnitFormatting.fixedPoint(2, fractionDigits: 2) == "2.00")
        #expect(UnitFormatting.fixedPoint(-1.5, fractionDigits: 0) == "-2")
        #expect(UnitFormatting.fixedPoint(-0.01, fractionDigits: 1) == "0.0")
        #expect(UnitFormatting.fixedPoint(9.99, fractionDigits: 1) == "10.0")
        #expect(UnitFormatting.fixedPoint(.nan, fractionDigits: 1) == "nan")
        #expect(UnitFormatting.fixedPoint(-.infinity, fractionDigits: 1) == "-inf")
    }

    @Test func bytesUseBinaryUnitsAndStayWithinNineColumns() {
        #expect(UnitFormatting.bytes(0) == "0 B")
        #expect(UnitFormatting.bytes(999) == "999 B")
        #expect(UnitFormatting.bytes(1000) == "1.0 KiB")
        #expect(UnitFormatting.bytes(1536) == "1.5 KiB")
        #expect(UnitFormatting.bytes(452_145_152) == "431.2 MiB")
        #expect(UnitFormatting.bytes(1 << 30) == "1.0 GiB")
        #expect(UnitFormatting.bytes(1000 * 1024 * 1024) == "1.0 GiB")  // 0.98 GiB, not "1000.0 MiB"
        #expect(UnitFormatting.bytes(999 * 1024 * 1024) == "999.0 MiB")
        #expect(UnitFormatting.bytes(Int64.max) == "8.0 EiB")
        for shift in 0..<63 {
            let value = Int64(1) << shift
            for sample in [value, value - 1, value + value / 3] where sample >= 0 {
                #expect(UnitFormatting.bytes(sample).count <= 9, "bytes(\(sample)) = \(UnitFormatting.bytes(sample))")
            }
        }
    }

    @Test func ratesUseTheSameBinaryUnits() {
        #expect(UnitFormatting.rate(0) == "0 B/s")
        #expect(UnitFormatting.rate(-5) == "0 B/s")
        #expect(UnitFormatting.rate(.nan) == "0 B/s")
        #expect(UnitFormatting.rate(512) == "512 B/s")
        #expect(UnitFormatting.rate(118.4 * 1024 * 1024) == "118.4 MiB/s")
    }

    @Test func clockShowsMinutesSecondsOrHoursMinutesSeconds() {
        #expect(UnitFormatting.clock(.seconds(5)) == "0:05")
        #expect(UnitFormatting.clock(.milliseconds(4_600)) == "0:05")
        #expect(UnitFormatting.clock(.seconds(754)) == "12:34")
        #expect(UnitFormatting.clock(.seconds(3_723)) == "1:02:03")
        #expect(UnitFormatting.clock(.seconds(3_599)) == "59:59")
        #expect(UnitFormatting.clock(.seconds(-3)) == "0:00")
        #expect(UnitFormatting.clock(.seconds(1_000 * 3_600)) == ">999h")
    }
}

@Suite struct ByteSizeTests {
    @Test(arguments: [
        ("4096", 4096), ("500K", 512_000), ("500k", 512_000), ("10M", 10 << 20), ("1G", 1 << 30),
        ("1.5M", 1_572_864), ("1.5K", 1536), ("2mb", 2 << 20), ("64KiB", 65_536), ("64kib", 65_536),
        ("1T", 1 << 40), ("512B", 512), (" 3 M ", 3 << 20), (".5K", 512), ("1.", 1), ("0.001K", 1),
    ] as [(String, Int64)])
    func parsesSizes(text: String, bytes: Int64) throws {
        #expect(try ByteSize.parse(text).bytes == bytes)
        #expect(ByteSize(text)?.bytes == bytes)
    }

    @Test(arguments: [
        ("", ByteSizeError.Reason.empty), ("   ", .empty), ("abc", .notANumber), ("1.2.3M", .notANumber),
        ("-5K", .notANumber), ("1e3", .notANumber), ("12iB", .badUnit), ("0", .notPositive), ("0.1", .notPositive),
        ("0K", .notPositive), ("9999999999999999999", .tooLarge), ("9000000P", .tooLarge), ("M", .notANumber),
        ("10X", .notANumber),
    ])
    func refusesNonSizes(text: String, reason: ByteSizeError.Reason) {
        #expect(throws: ByteSizeError(text: text, reason: reason)) { try ByteSize.parse(text) }
        #expect(ByteSize(text) == nil)
    }

    @Test func errorMessageQuotesTheTextAndTheAcceptedForms() {
        let error = ByteSizeError(text: "10X", reason: .notANumber)
        #expect(error.description.contains("\"10X\""))
        #expect(error.description.contains("500K"))
    }

    @Test func describesInTheLargestExactUnit() {
        #expect(ByteSize("10M")!.description == "10M")
        #expect(ByteSize("1536")!.description == "1536")
        #expect(ByteSize("1.5M")!.description == "1536K")
    }

    @Test func rateLimitsAcceptAnOptionalPerSecond() throws {
        #expect(try RateLimit.parse("10M").bytesPerSecond == 10 << 20)
        #expect(try RateLimit.parse("10M/s").bytesPerSecond == 10 << 20)
        #expect(try RateLimit.parse("500KiB/S").bytesPerSecond == 512_000)
        #expect(RateLimit("fast") == nil)
        #expect(RateLimit("0/s") == nil)
        #expect(RateLimit("2M")!.description == "2M/s")
        #expect(throws: ByteSizeError(text: "x/s", reason: .notANumber)) { try RateLimit.parse("x/s") }
    }
}
