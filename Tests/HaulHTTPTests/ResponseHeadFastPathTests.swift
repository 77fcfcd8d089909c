import Testing
import HaulHTTP

// The head parser takes plain lines through a fast path (line ends found 64 bytes at a time, framing fields
// picked out by name length) and leaves every other line to the general loop. These cases sit on that
// path's edges: line ends on either side of a 64-byte block boundary, errors right after plain lines,
// framing fields past the 64th field, and Content-Length values read eight digits at a time. Each is also
// parsed in every split, where the general loop does the work, so both paths must agree.

/// "HTTP/1.1 200 OK\r\n" (17 bytes), then "X-Pad: " and `count` bytes of value: its CR lands at 24 + count.
func paddedHead(_ count: Int, then rest: String) -> String {
    "HTTP/1.1 200 OK\r\nX-Pad: " + String(repeating: "a", count: count) + rest
}

let fastPathValidCases: [ValidCase] = (36...42).map { count in
    ValidCase(name: "CR at \(24 + count), around the 64-byte block boundary",
              input: paddedHead(count, then: "\r\nContent-Length: 2\r\n\r\nok"), status: 200,
              fields: ["X-Pad: " + String(repeating: "a", count: count), "Content-Length: 2"], body: "ok",
              framing: "content-length", keepAlive: true)
} + [
    ValidCase(name: "framing fields past the 64th field",
              input: "HTTP/1.1 200 OK\r\n" + (0..<65).map { "X-\($0): v\r\n" }.joined() + "Connection: close\r\n"
                  + (65..<68).map { "X-\($0): v\r\n" }.joined() + "Content-Length: 1\r\n\r\nx",
              status: 200, fields: (0..<65).map { "X-\($0): v" } + ["Connection: close"] + (65..<68).map { "X-\($0): v" }
                  + ["Content-Length: 1"],
              body: "x", framing: "content-length", keepAlive: false),
    ValidCase(name: "plain lines after an obs-fold", input: "HTTP/1.1 200 OK\r\nA: 1\r\nB: x\r\n y\r\nC: 3\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["A: 1", "B: x   y", "C: 3", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "tabs in the reason and a value", input: "HTTP/1.1 200 O\tK\r\nX-Tab: a\tb\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-Tab: a\tb", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "empty reason after the space", input: "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "Content-Length of 18 digits", input: "HTTP/1.1 200 OK\r\nContent-Length: 000000000000000003\r\n\r\nabc",
              status: 200, fields: ["Content-Length: 000000000000000003"], body: "abc", framing: "content-length", keepAlive: true),
    ValidCase(name: "Content-Length of 19 digits", input: "HTTP/1.1 200 OK\r\nContent-Length: 0000000000000000003\r\n\r\nabc",
              status: 200, fields: ["Content-Length: 0000000000000000003"], body: "abc", framing: "content-length", keepAlive: true),
    ValidCase(name: "Connection in capitals and as a list",
              input: "HTTP/1.1 200 OK\r\nCONNECTION: KEEP-ALIVE\r\nconnection: x, Close\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["CONNECTION: KEEP-ALIVE", "connection: x, Close", "Content-Length: 0"],
              framing: "content-length", keepAlive: false),
]

let fastPathHostileCases: [HostileCase] = [
    HostileCase("non-digit inside the first eight digits", "HTTP/1.1 200 OK\r\nContent-Length: 1234567a90\r\n\r\n",
                .invalidContentLength("1234567a90"), at: 33),
    HostileCase("colon among eight digits", "HTTP/1.1 200 OK\r\nContent-Length: 1234567:\r\n\r\n",
                .invalidContentLength("1234567:"), at: 33),
    HostileCase("non-digit after eight digits", "HTTP/1.1 200 OK\r\nContent-Length: 12345678/\r\n\r\n",
                .invalidContentLength("12345678/"), at: 33),
    HostileCase("whitespace before colon after plain lines",
                "HTTP/1.1 200 OK\r\n" + (0..<5).map { "X-\($0): v\r\n" }.joined() + "X-Bad : v\r\n\r\n",
                .whitespaceBeforeColon(field: "X-Bad"), at: 62),
    HostileCase("DEL at the end of a 64-byte block", paddedHead(39, then: "\u{7F}\r\n\r\n"),
                .invalidFieldValueCharacter(field: "X-Pad", byte: 0x7F), at: 63),
    HostileCase("bare LF at the start of a 64-byte block", paddedHead(40, then: "\n\r\n"), .bareLF, at: 64),
    HostileCase("bare CR at the end of a 64-byte block", paddedHead(39, then: "\rX\r\n\r\n"), .bareCR, at: 63),
    HostileCase("bad byte in a name longer than 16", "HTTP/1.1 200 OK\r\nX-Very-Long-Name(x): v\r\n\r\n",
                .invalidFieldNameCharacter(byte: 0x28), at: 33),
    HostileCase("field over the limit after plain lines", "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n",
                .tooManyFields(limit: 3), at: 35, limits: ParserLimits(maxFields: 3)),
]

@Suite struct ResponseHeadFastPathTests {
    @Test(arguments: fastPathValidCases)
    func validResponse(_ c: ValidCase) throws { try checkValidCase(c) }

    @Test(arguments: fastPathHostileCases)
    func hostileInput(_ c: HostileCase) { checkHostileCase(c) }
}
