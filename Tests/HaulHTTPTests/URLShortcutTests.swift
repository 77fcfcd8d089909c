import Testing
@testable import HaulHTTP

/// The one-pass shortcuts of URL parsing (issue 23: every small download parses its URL) agree with the
/// rules they stand for, on seeded random inputs made of the characters the rules look at.
struct URLShortcutTests {
    @Test func ipv4HostsAsTheRulesSay() {
        #expect(HTTPHost.parseIPv4(Array("127.0.0.1".utf8)[...]) == "127.0.0.1")
        #expect(HTTPHost.parseIPv4(Array("255.255.255.255".utf8)[...]) == "255.255.255.255")
        for invalid in ["256.0.0.1", "1.2.3", "1.2.3.4.5", "01.2.3.4", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.0000", "a.b.c.d", ""] {
            #expect(HTTPHost.parseIPv4(Array(invalid.utf8)[...]) == nil, "\(invalid)")
        }
        var random = SeededDraws(seed: 4242)
        print("URLShortcutTests seed 4242")
        let alphabet = Array("0123456789.a".utf8)
        for _ in 0..<5000 {
            let bytes = (0..<random.below(18)).map { _ in alphabet[random.below(alphabet.count)] }
            #expect(HTTPHost.parseIPv4(bytes[...]) == Self.referenceIPv4(bytes[...]), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func pathsWithoutDotSegmentsAreKeptAndOthersResolved() {
        #expect(URIReference.removeDotSegments(Array("/many/m00001.bin".utf8)) == Array("/many/m00001.bin".utf8))
        #expect(URIReference.removeDotSegments(Array("/a/./b/../c".utf8)) == Array("/a/c".utf8))
        var random = SeededDraws(seed: 77)
        print("URLShortcutTests seed 77")
        let alphabet = Array("/./..ab".utf8)
        for _ in 0..<5000 {
            let path = (0..<random.below(14)).map { _ in alphabet[random.below(alphabet.count)] }
            #expect(URIReference.removeDotSegments(path) == Self.referenceRemoveDotSegments(path), "\(String(decoding: path, as: UTF8.self))")
        }
    }

    /// The octet rules, written out with split (the form the parser had before its one-pass scan).
    static func referenceIPv4(_ bytes: ArraySlice<UInt8>) -> String? {
        let octets = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        for octet in octets {
            guard (1...3).contains(octet.count), octet.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  octet.count == 1 || octet.first != UInt8(ascii: "0"),
                  octet.reduce(0, { $0 * 10 + Int($1 - UInt8(ascii: "0")) }) <= 255
            else { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// RFC 3986 §5.2.4, rules A to E, without a shortcut.
    static func referenceRemoveDotSegments(_ path: [UInt8]) -> [UInt8] {
        var input = path[...]
        var output: [UInt8] = []
        func removeLastSegment() {
            if let slash = output.lastIndex(of: UInt8(ascii: "/")) { output.removeSubrange(slash...) } else { output.removeAll() }
        }
        while !input.isEmpty {
            if input.starts(with: "../".utf8) { input = input.dropFirst(3) }
            else if input.starts(with: "./".utf8) { input = input.dropFirst(2) }
            else if input.starts(with: "/./".utf8) { input = input.dropFirst(2) }
            else if input.elementsEqual("/.".utf8) { output.append(UInt8(ascii: "/")); input = [] }
            else if input.starts(with: "/../".utf8) { input = input.dropFirst(3); removeLastSegment() }
            else if input.elementsEqual("/..".utf8) { removeLastSegment(); output.append(UInt8(ascii: "/")); input = [] }
            else if input.elementsEqual(".".utf8) || input.elementsEqual("..".utf8) { input = [] }
            else {
                let searchStart = input.first == UInt8(ascii: "/") ? input.startIndex + 1 : input.startIndex
                let end = input[searchStart...].firstIndex(of: UInt8(ascii: "/")) ?? input.endIndex
                output.append(contentsOf: input[..<end])
                input = input[end...]
            }
        }
        return output
    }
}

/// A seeded generator (splitmix64) for the tests above.
private struct SeededDraws {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func below(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int((z ^ (z >> 31)) % UInt64(bound))
    }
}
