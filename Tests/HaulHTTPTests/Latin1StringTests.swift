import Testing
import HaulHTTP

/// Field bytes become text as ISO-8859-1: one scalar per byte, on the ASCII fast path and off it alike.
struct Latin1StringTests {
    @Test func asciiBytesAreTheSameText() {
        let bytes: [UInt8] = Array("Content-Type: text/plain; charset=utf-8".utf8)
        #expect(latin1String(bytes[...]) == "Content-Type: text/plain; charset=utf-8")
        #expect(latin1String([UInt8]()) == "")
    }

    @Test func bytesAbove127AreTheirOwnScalars() {
        // 0xE9 is é in Latin-1; as UTF-8 it would be an invalid byte (U+FFFD).
        let text = latin1String([0x63, 0x61, 0x66, 0xE9] as [UInt8])
        #expect(text.unicodeScalars.map(\.value) == [0x63, 0x61, 0x66, 0xE9])
        #expect(text == "café")
    }

    /// Sequences without contiguous storage take the scalar-by-scalar path: the same answer, seeded bytes.
    @Test func contiguousAndNonContiguousInputAgree() {
        var generator = SplitMix64(state: 23)
        print("Latin1StringTests seed 23")
        for _ in 0..<200 {
            let count = Int(generator.next() % 40)
            let highAllowed = generator.next() % 2 == 0
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) & (highAllowed ? 0xFF : 0x7F) }
            let expected = String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
            #expect(latin1String(bytes) == expected)
            #expect(latin1String(bytes.lazy.map { $0 }) == expected)
        }
    }
}
