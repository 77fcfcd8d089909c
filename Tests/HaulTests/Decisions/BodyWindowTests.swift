import Testing
@testable import Haul

/// No body byte is ever written outside the range that was asked for.
@Suite struct BodyWindowTests {
    @Test func anExactBodyIsWrittenWhole() {
        var window = BodyWindow(start: 100, end: 200, bounded: true)
        #expect(window.take(60) == .init(writable: 60, overrun: 0))
        #expect(window.position == 160 && !window.isFilled)
        #expect(window.take(40) == .init(writable: 40, overrun: 0))
        #expect(window.isFilled && window.endedExactly)
    }

    @Test func bytesPastTheRangeAreNeverWritable() {
        var window = BodyWindow(start: 100, end: 200, bounded: false)
        #expect(window.take(90) == .init(writable: 90, overrun: 0))
        #expect(window.take(30) == .init(writable: 10, overrun: 20))
        #expect(window.take(5) == .init(writable: 0, overrun: 5))
        #expect(!window.endedExactly)
    }

    @Test func aShortBodyDidNotEndExactly() {
        var window = BodyWindow(start: 0, end: 10, bounded: false)
        _ = window.take(9)
        #expect(!window.endedExactly && !window.isFilled)
    }

    @Test func aStreamOfUnknownLengthTakesEverything() {
        var window = BodyWindow(start: 0, end: nil, bounded: false)
        #expect(window.take(1 << 20) == .init(writable: 1 << 20, overrun: 0))
        #expect(window.endedExactly && !window.isFilled)
    }
}
