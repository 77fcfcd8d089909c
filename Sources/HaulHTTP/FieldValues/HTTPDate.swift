/// A point in time from an HTTP-date field (RFC 9110 §5.6.7), as whole seconds since the Unix epoch (UTC).
///
/// Parsing accepts all three formats recipients must understand: IMF-fixdate, the obsolete RFC 850
/// form and asctime. Day and month names are matched ignoring ASCII case, and the day name is not
/// checked against the date, because neither mismatch makes the date ambiguous.
public struct HTTPDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Seconds since 1970-01-01T00:00:00Z, ignoring leap seconds.
    public var secondsSinceEpoch: Int64

    /// The date `secondsSinceEpoch` seconds after the Unix epoch.
    public init(secondsSinceEpoch: Int64) {
        self.secondsSinceEpoch = secondsSinceEpoch
    }

    /// A UTC calendar date and time; nil when a field is out of range (e.g. February 30, hour 24).
    ///
    /// `second` may be 60 for a leap second; it then counts as the first second of the next minute.
    public init?(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        guard (1...12).contains(month), day >= 1, day <= Self.daysInMonth(month, year: year),
              (0..<24).contains(hour), (0..<60).contains(minute), (0...60).contains(second),
              (-1_000_000...1_000_000).contains(year)
        else { return nil }
        let days = Self.daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day))
        secondsSinceEpoch = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }

    /// Parses an HTTP-date in any of the three formats; nil when it is malformed or names an impossible date.
    ///
    /// RFC 850 dates have two-digit years. RFC 9110 says to read a year more than 50 years in the future
    /// as the past century; to keep parsing independent of the clock this uses a fixed pivot instead:
    /// 00–69 are 2000–2069 and 70–99 are 1970–1999.
    public init?(_ value: ArraySlice<UInt8>) {
        // Nearly every date a server sends is an IMF-fixdate with nothing around it: read in place.
        if let seconds = value.withContiguousStorageIfAvailable(Self.imfFixdateSeconds), let seconds {
            self.init(secondsSinceEpoch: seconds)
            return
        }
        self.init(anyFormat: value)
    }

    /// The general parser behind the public initializers: every format, whitespace around the date.
    init?(anyFormat value: ArraySlice<UInt8>) {
        var scanner = FieldValueScanner(value)
        scanner.skipWhitespace()
        let dayName = scanner.consume(while: FieldSyntax.isAlpha)
        let parsed: (year: Int, month: Int, day: Int, time: (Int, Int, Int))?
        if scanner.consume(UInt8(ascii: ",")) {
            guard scanner.consume(UInt8(ascii: " ")) else { return nil }
            if Self.isShortDayName(dayName) {
                parsed = Self.parseIMFFixdate(&scanner)
            } else if Self.longDayNames.contains(where: { asciiCaseInsensitiveEquals(dayName, $0) }) {
                parsed = Self.parseRFC850(&scanner)
            } else {
                return nil
            }
        } else if Self.isShortDayName(dayName),
                  scanner.consume(UInt8(ascii: " ")) {
            parsed = Self.parseAsctime(&scanner)
        } else {
            return nil
        }
        scanner.skipWhitespace()
        guard let parsed, scanner.isAtEnd else { return nil }
        self.init(year: parsed.year, month: parsed.month, day: parsed.day,
                  hour: parsed.time.0, minute: parsed.time.1, second: parsed.time.2)
    }

    /// Parses the UTF-8 bytes of `value`.
    public init?(_ value: String) {
        if let seconds = value.utf8.withContiguousStorageIfAvailable(Self.imfFixdateSeconds), let seconds {
            self.init(secondsSinceEpoch: seconds)
            return
        }
        self.init(anyFormat: ArraySlice(value.utf8))
    }

    /// The seconds of `bytes` when they are exactly an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, names in
    /// any case, no whitespace around) naming a real date; nil for anything else, which the general parser
    /// then reads (or rejects) as before. Accepts nothing the general parser would not, with the same value.
    @inline(__always)
    static func imfFixdateSeconds(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count == 29 else { return nil }
        let p = UnsafeRawPointer(bytes.baseAddress!)
        @inline(__always) func byte(_ k: Int) -> UInt32 { UInt32(p.load(fromByteOffset: k, as: UInt8.self)) }
        @inline(__always) func name(_ k: Int) -> UInt32 {
            FieldValueScanner.lowercasedKey(p.load(fromByteOffset: k, as: UInt8.self), p.load(fromByteOffset: k + 1, as: UInt8.self),
                                            p.load(fromByteOffset: k + 2, as: UInt8.self))
        }
        @inline(__always) func digits(_ k: Int, _ count: Int) -> Int? {
            var value = 0
            for i in k..<(k + count) {
                let digit = byte(i) &- 0x30
                guard digit < 10 else { return nil }
                value = value * 10 + Int(digit)
            }
            return value
        }
        guard byte(3) == 0x2C, byte(4) == 0x20, byte(7) == 0x20, byte(11) == 0x20, byte(16) == 0x20,
              byte(19) == 0x3A, byte(22) == 0x3A, byte(25) == 0x20, name(26) == Self.gmtKey,
              shortDayKeys.contains(name(0)),
              let monthIndex = monthKeys.firstIndex(of: name(8)),
              let day = digits(5, 2), let year = digits(12, 4),
              let hour = digits(17, 2), let minute = digits(20, 2), let second = digits(23, 2),
              let date = HTTPDate(year: year, month: monthIndex + 1, day: day, hour: hour, minute: minute, second: second)
        else { return nil }
        return date.secondsSinceEpoch
    }

    private static let gmtKey = FieldValueScanner.lowercasedKey(UInt8(ascii: "g"), UInt8(ascii: "m"), UInt8(ascii: "t"))

    /// The date as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`, the only format a sender may use.
    ///
    /// Years outside 0000–9999 are printed with more digits or a sign, which is not a valid HTTP-date.
    public var imfFixdate: String {
        let fixdate = String(unsafeUninitializedCapacity: 29) { writeIMFFixdate(into: $0) ? 29 : 0 }
        if !fixdate.isEmpty { return fixdate }
        // A year beyond 0000–9999: more digits or a sign (not a valid HTTP-date, but the value as it is).
        let (days, secondOfDay) = dayAndSecond
        let (year, month, day) = Self.civilFromDays(days)
        // 1970-01-01 was a Thursday (index 4 with Sunday = 0).
        let weekday = Int(((days % 7) + 7 + 4) % 7)
        return "\(Self.shortDayNames[weekday]), \(Self.twoDigits(Int(day))) \(Self.monthNames[Int(month) - 1]) "
            + "\(Self.fourDigits(year)) \(Self.twoDigits(secondOfDay / 3600)):"
            + "\(Self.twoDigits(secondOfDay / 60 % 60)):\(Self.twoDigits(secondOfDay % 60)) GMT"
    }

    /// Whether `text` is exactly ``imfFixdate``, compared byte by byte without making the string.
    public func isIMFFixdate(_ text: String) -> Bool {
        let written: Bool? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 29) { buffer in
            guard writeIMFFixdate(into: buffer) else { return nil }
            var text = text
            return text.withUTF8 { $0.elementsEqual(buffer) }
        }
        // A year beyond 0000–9999: the longer text.
        return written ?? (text == imfFixdate)
    }

    /// The day since the epoch and the second within it (remainder first: `days * 86_400` would overflow for
    /// dates near `Int64.min`).
    private var dayAndSecond: (days: Int64, second: Int) {
        var days = secondsSinceEpoch / 86_400
        var secondOfDay = Int(secondsSinceEpoch % 86_400)
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        return (days, secondOfDay)
    }

    /// Writes the IMF-fixdate into the first 29 bytes of `buffer` when the year is 0000–9999 (always so for a
    /// parsed date), byte by byte: interpolating its eight parts cost several thousand instructions per date,
    /// once per small file finished. False (nothing written) for other years.
    private func writeIMFFixdate(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        let (days, secondOfDay) = dayAndSecond
        let (year, month, day) = Self.civilFromDays(days)
        guard (0...9999).contains(year), buffer.count >= 29 else { return false }
        let weekday = Int(((days % 7) + 7 + 4) % 7)
        func name(_ names: StaticString, _ index: Int, at offset: Int) {
            for byte in 0..<3 { buffer[offset + byte] = names.utf8Start[index * 3 + byte] }
        }
        func digits(_ value: Int, count: Int, at offset: Int) {
            var rest = value
            for index in (0..<count).reversed() {
                buffer[offset + index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
        }
        name(Self.shortDayNameBytes, weekday, at: 0)
        buffer[3] = UInt8(ascii: ",")
        buffer[4] = UInt8(ascii: " ")
        digits(Int(day), count: 2, at: 5)
        buffer[7] = UInt8(ascii: " ")
        name(Self.monthNameBytes, Int(month) - 1, at: 8)
        buffer[11] = UInt8(ascii: " ")
        digits(Int(year), count: 4, at: 12)
        buffer[16] = UInt8(ascii: " ")
        digits(secondOfDay / 3600, count: 2, at: 17)
        buffer[19] = UInt8(ascii: ":")
        digits(secondOfDay / 60 % 60, count: 2, at: 20)
        buffer[22] = UInt8(ascii: ":")
        digits(secondOfDay % 60, count: 2, at: 23)
        buffer[25] = UInt8(ascii: " ")
        buffer[26] = UInt8(ascii: "G")
        buffer[27] = UInt8(ascii: "M")
        buffer[28] = UInt8(ascii: "T")
        return true
    }

    /// Same as `imfFixdate`.
    public var description: String { imfFixdate }

    /// Earlier dates order first.
    public static func < (lhs: HTTPDate, rhs: HTTPDate) -> Bool {
        lhs.secondsSinceEpoch < rhs.secondsSinceEpoch
    }

    // MARK: Formats

    private typealias Parts = (year: Int, month: Int, day: Int, time: (Int, Int, Int))

    /// `DD Mon YYYY HH:MM:SS GMT`, after `Sun, `.
    private static func parseIMFFixdate(_ scanner: inout FieldValueScanner) -> Parts? {
        guard let day = scanner.consumeDigits(2), scanner.consume(UInt8(ascii: " ")),
              let month = parseMonth(&scanner), scanner.consume(UInt8(ascii: " ")),
              let year = scanner.consumeDigits(4), scanner.consume(UInt8(ascii: " ")),
              let time = parseTime(&scanner), scanner.consume(UInt8(ascii: " ")),
              scanner.consumeCaseInsensitive("GMT")
        else { return nil }
        return (year, month, day, time)
    }

    /// `DD-Mon-YY HH:MM:SS GMT`, after `Sunday, `.
    private static func parseRFC850(_ scanner: inout FieldValueScanner) -> Parts? {
        guard let day = scanner.consumeDigits(2), scanner.consume(UInt8(ascii: "-")),
              let month = parseMonth(&scanner), scanner.consume(UInt8(ascii: "-")),
              let shortYear = scanner.consumeDigits(2), scanner.consume(UInt8(ascii: " ")),
              let time = parseTime(&scanner), scanner.consume(UInt8(ascii: " ")),
              scanner.consumeCaseInsensitive("GMT")
        else { return nil }
        return (shortYear < 70 ? 2000 + shortYear : 1900 + shortYear, month, day, time)
    }

    /// `Mon _D HH:MM:SS YYYY` (day padded with a space), after `Sun `.
    private static func parseAsctime(_ scanner: inout FieldValueScanner) -> Parts? {
        guard let month = parseMonth(&scanner), scanner.consume(UInt8(ascii: " ")) else { return nil }
        let day: Int?
        if scanner.consume(UInt8(ascii: " ")) {
            day = scanner.consumeDigits(1)
        } else {
            day = scanner.consumeDigits(2)
        }
        guard let day, scanner.consume(UInt8(ascii: " ")),
              let time = parseTime(&scanner), scanner.consume(UInt8(ascii: " ")),
              let year = scanner.consumeDigits(4)
        else { return nil }
        return (year, month, day, time)
    }

    private static func parseMonth(_ scanner: inout FieldValueScanner) -> Int? {
        scanner.consumeThreeByteName(among: monthKeys).map { $0 + 1 }
    }

    /// Whether `name` is a short day name (`Sun`...), ignoring ASCII case.
    private static func isShortDayName(_ name: ArraySlice<UInt8>) -> Bool {
        guard name.count == 3 else { return false }
        let start = name.startIndex
        return shortDayKeys.contains(FieldValueScanner.lowercasedKey(name[start], name[start + 1], name[start + 2]))
    }

    /// ``monthNames`` and ``shortDayNames`` as ``FieldValueScanner/lowercasedKey(_:_:_:)``s, in their order.
    private static let monthKeys = FieldValueScanner.lowercasedKeys(monthNameBytes)
    private static let shortDayKeys = FieldValueScanner.lowercasedKeys(shortDayNameBytes)
    private static let shortDayNameBytes: StaticString = "SunMonTueWedThuFriSat"
    private static let monthNameBytes: StaticString = "JanFebMarAprMayJunJulAugSepOctNovDec"

    /// `HH:MM:SS`; ranges are checked by the calendar initializer.
    private static func parseTime(_ scanner: inout FieldValueScanner) -> (Int, Int, Int)? {
        guard let hour = scanner.consumeDigits(2), scanner.consume(UInt8(ascii: ":")),
              let minute = scanner.consumeDigits(2), scanner.consume(UInt8(ascii: ":")),
              let second = scanner.consumeDigits(2)
        else { return nil }
        return (hour, minute, second)
    }

    // MARK: Calendar

    static let shortDayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(_ month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    ///
    /// Counting years from March puts the leap day last, so each 400-year era has a closed form.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let marchYear = month <= 2 ? year - 1 : year
        let era = floorDivide(marchYear, 400)
        let yearOfEra = marchYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysFromCivil` (Howard Hinnant's `civil_from_days`): the proleptic Gregorian date of
    /// day `days` since 1970-01-01. Package-wide: the CLI's ISO 8601 timestamps use it too.
    package static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let marchMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * marchMonth + 2) / 5 + 1
        let month = marchMonth < 10 ? marchMonth + 3 : marchMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : String(value)
    }

    private static func fourDigits(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        let padded = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }
}
