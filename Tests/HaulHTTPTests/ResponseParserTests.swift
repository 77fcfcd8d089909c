import Testing
import HaulHTTP

/// One input and what a correct parser must make of it.
struct ValidCase: CustomTestStringConvertible, Sendable {
    var name: String
    var input: String
    var requestWasHead = false
    var status: Int
    var fields: [String] = []          // "Name: value"
    var body = ""
    var framing: String
    var keepAlive: Bool
    var trailers: [String] = []
    var interim: [Int] = []
    /// The fields of each interim response, when the case checks them.
    var interimFields: [[String]]? = nil
    /// Bytes left unconsumed after the response (the start of the next response).
    var leftover = 0
    var testDescription: String { name }
}

let validCases: [ValidCase] = [
    ValidCase(name: "content-length", input: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello",
              status: 200, fields: ["Content-Length: 5", "X-A: 1"], body: "hello", framing: "content-length", keepAlive: true),
    ValidCase(name: "zero content-length", input: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "pipelined leftover", input: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n",
              status: 200, fields: ["Content-Length: 2"], body: "ok", framing: "content-length", keepAlive: true, leftover: 17),
    ValidCase(name: "chunked with extensions and trailers",
              input: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val;q=\"a \\\"b\\\"\"\r\nhello\r\n1 ; x\r\n!\r\n0\r\nDigest: abc\r\nX-T:  t  \r\n\r\n",
              status: 200, fields: ["Transfer-Encoding: chunked"], body: "hello!", framing: "chunked", keepAlive: true,
              trailers: ["Digest: abc", "X-T: t"]),
    ValidCase(name: "chunked uppercase hex, leading zeros",
              input: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n00A\r\n0123456789\r\n0\r\n\r\n",
              status: 200, fields: ["Transfer-Encoding: Chunked"], body: "0123456789", framing: "chunked", keepAlive: true),
    ValidCase(name: "close-delimited", input: "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nuntil the end",
              status: 200, fields: ["Server: x"], body: "until the end", framing: "close", keepAlive: false),
    ValidCase(name: "HEAD response keeps its Content-Length but has no body",
              input: "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", requestWasHead: true,
              status: 200, fields: ["Content-Length: 1000"], framing: "none", keepAlive: true),
    ValidCase(name: "204 has no body", input: "HTTP/1.1 204 No Content\r\n\r\nHTTP", status: 204, framing: "none",
              keepAlive: true, leftover: 4),
    ValidCase(name: "304 has no body", input: "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 9\r\n\r\n",
              status: 304, fields: ["ETag: \"x\"", "Content-Length: 9"], framing: "none", keepAlive: true),
    ValidCase(name: "interim responses first",
              input: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
              status: 200, fields: ["Content-Length: 1"], body: "x", framing: "content-length", keepAlive: true, interim: [100, 103]),
    ValidCase(name: "as many interim responses as allowed",
              input: String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 5) + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["Content-Length: 0"], framing: "content-length", keepAlive: true, interim: [100, 100, 100, 100, 100]),
    ValidCase(name: "Connection: close", input: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx",
              status: 200, fields: ["Connection: close", "Content-Length: 1"], body: "x", framing: "content-length", keepAlive: false),
    ValidCase(name: "HTTP/1.0 default close", input: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx",
              status: 200, fields: ["Content-Length: 1"], body: "x", framing: "content-length", keepAlive: false),
    ValidCase(name: "HTTP/1.0 keep-alive", input: "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx",
              status: 200, fields: ["Connection: Keep-Alive", "Content-Length: 1"], body: "x", framing: "content-length", keepAlive: true),
    ValidCase(name: "identical duplicate Content-Length", input: "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc",
              status: 200, fields: ["Content-Length: 3, 3", "Content-Length: 3"], body: "abc", framing: "content-length", keepAlive: true),
    // RFC 9112 §5.2: the whole fold, OWS CRLF RWS, becomes spaces (one per byte), tabs included.
    ValidCase(name: "obs-fold becomes spaces", input: "HTTP/1.1 200 OK\r\nX-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-Long: one    two   three", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-fold with whitespace on both sides", input: "HTTP/1.1 200 OK\r\nX-F: a \t\r\n\t b\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-F: a      b", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-fold keeps tabs inside the value", input: "HTTP/1.1 200 OK\r\nX-T: a\tb\r\n\tc\td\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-T: a\tb   c\td", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-fold onto an empty value", input: "HTTP/1.1 200 OK\r\nX-E:\r\n \tb\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-E: b", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-fold through a blank continuation line",
              input: "HTTP/1.1 200 OK\r\nX-W: a\r\n \t\r\n\tb \r\n\t\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-W: a       b", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-fold in the last field", input: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-L: a\t\r\n\tb\t\r\n\r\n",
              status: 200, fields: ["Content-Length: 0", "X-L: a    b"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-fold in a trailer",
              input: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: a\t\r\n\tb\r\n\r\n",
              status: 200, fields: ["Transfer-Encoding: chunked"], framing: "chunked", keepAlive: true, trailers: ["X-T: a    b"]),
    ValidCase(name: "obs-fold in an interim response",
              input: "HTTP/1.1 103 Early Hints\r\nLink: </a>,\r\n\t</b>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
              status: 204, framing: "none", keepAlive: true, interim: [103], interimFields: [["Link: </a>,   </b>"]]),
    // RFC 9110 §15: an unknown code is kept as sent; 6xx and up are the caller's to treat as 5xx.
    ValidCase(name: "status 600 is a final response", input: "HTTP/1.1 600 Unknown\r\nContent-Length: 2\r\n\r\nno",
              status: 600, fields: ["Content-Length: 2"], body: "no", framing: "content-length", keepAlive: true),
    ValidCase(name: "status 999 is a final response", input: "HTTP/1.1 999\r\nContent-Length: 0\r\n\r\n",
              status: 999, fields: ["Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "unknown 1xx is interim", input: "HTTP/1.1 199 Odd\r\n\r\nHTTP/1.1 799 Odder\r\n\r\nclosed",
              status: 799, body: "closed", framing: "close", keepAlive: false, interim: [199]),
    ValidCase(name: "empty value and OWS", input: "HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Pad: \t v \t\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-Empty: ", "X-Pad: v", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "no reason phrase", input: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "obs-text in value", input: "HTTP/1.1 200 OK\r\nX-Latin: caf\u{E9}\r\nContent-Length: 0\r\n\r\n",
              status: 200, fields: ["X-Latin: caf\u{E9}", "Content-Length: 0"], framing: "content-length", keepAlive: true),
    ValidCase(name: "HTTP/1.0 chunked is never reused", input: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
              status: 200, fields: ["Connection: keep-alive", "Transfer-Encoding: chunked"], body: "a", framing: "chunked", keepAlive: false),
]

/// Hostile or broken input and the exact error it must raise.
struct HostileCase: CustomTestStringConvertible, Sendable {
    var name: String
    var input: [UInt8]
    var kind: HTTPParseError.Kind
    var offset: Int
    var limits = ParserLimits()
    var testDescription: String { name }

    init(_ name: String, _ input: String, _ kind: HTTPParseError.Kind, at offset: Int, limits: ParserLimits = ParserLimits()) {
        self.name = name
        self.input = latin1Bytes(input)
        self.kind = kind
        self.offset = offset
        self.limits = limits
    }
}

func latin1Bytes(_ s: String) -> [UInt8] { s.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }

let hostileCases: [HostileCase] = [
    HostileCase("not HTTP", "SSH-2.0-OpenSSH\r\n", .invalidStatusLine("expected \"HTTP/\""), at: 0),
    HostileCase("lowercase http", "http/1.1 200 OK\r\n\r\n", .invalidStatusLine("expected \"HTTP/\""), at: 0),
    HostileCase("version without dot", "HTTP/11 200 OK\r\n\r\n", .invalidStatusLine("malformed HTTP version"), at: 6),
    HostileCase("HTTP/2 status line", "HTTP/2.0 200 OK\r\n\r\n", .unsupportedVersion(major: 2, minor: 0), at: 0),
    HostileCase("two spaces after version", "HTTP/1.1  200 OK\r\n\r\n", .invalidStatusCode(" "), at: 9),
    HostileCase("two-digit status", "HTTP/1.1 20 OK\r\n\r\n", .invalidStatusCode("20 "), at: 11),
    HostileCase("status out of range", "HTTP/1.1 099 Low\r\n\r\n", .invalidStatusCode("99"), at: 9),
    HostileCase("status 000", "HTTP/1.1 000 Zero\r\n\r\n", .invalidStatusCode("0"), at: 9),
    HostileCase("four-digit status", "HTTP/1.1 1000 X\r\n\r\n", .invalidStatusLine("expected a space after the status code"), at: 12),
    HostileCase("status glued to reason", "HTTP/1.1 200OK\r\n\r\n", .invalidStatusLine("expected a space after the status code"), at: 12),
    HostileCase("NUL in reason", "HTTP/1.1 200 O\u{0}K\r\n\r\n", .invalidReasonPhrase(byte: 0), at: 14),
    HostileCase("101 not requested", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", .unexpectedSwitchingProtocols, at: 0),
    HostileCase("bare CR in status line", "HTTP/1.1 200 OK\rX: y\r\n\r\n", .bareCR, at: 15),
    HostileCase("bare LF ends status line", "HTTP/1.1 200 OK\nX: y\r\n\r\n", .bareLF, at: 15),
    HostileCase("bare LF ends field", "HTTP/1.1 200 OK\r\nX: y\n\r\n", .bareLF, at: 21),
    HostileCase("bare CR in field value", "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", .bareCR, at: 21),
    HostileCase("NUL in field value", "HTTP/1.1 200 OK\r\nX-Evil: a\u{0}b\r\n\r\n", .invalidFieldValueCharacter(field: "X-Evil", byte: 0), at: 26),
    HostileCase("DEL in field value", "HTTP/1.1 200 OK\r\nX: a\u{7F}\r\n\r\n", .invalidFieldValueCharacter(field: "X", byte: 0x7F), at: 21),
    HostileCase("whitespace before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", .whitespaceBeforeColon(field: "Content-Length"), at: 31),
    HostileCase("space in field name", "HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n", .whitespaceBeforeColon(field: "Bad"), at: 20),
    HostileCase("invalid name byte", "HTTP/1.1 200 OK\r\nX(y): v\r\n\r\n", .invalidFieldNameCharacter(byte: 0x28), at: 18),
    HostileCase("missing colon", "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", .invalidFieldNameCharacter(byte: 0x0D), at: 24),
    HostileCase("empty field name", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", .emptyFieldName, at: 17),
    HostileCase("fold before any field", "HTTP/1.1 200 OK\r\n folded\r\n\r\n", .obsFoldWithoutField, at: 17),
    HostileCase("head too large", "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 100) + "\r\n\r\n",
                .headTooLarge(limit: 64), at: 64, limits: ParserLimits(maxHeadBytes: 64)),
    HostileCase("too many fields", "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", .tooManyFields(limit: 2), at: 29,
                limits: ParserLimits(maxFields: 2)),
    HostileCase("TE and CL together", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", .contentLengthWithTransferEncoding, at: 0),
    HostileCase("negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidContentLength("-1"), at: 33),
    HostileCase("Content-Length with sign", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", .invalidContentLength("+5"), at: 33),
    HostileCase("Content-Length overflow", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", .invalidContentLength("99999999999999999999"), at: 33),
    HostileCase("differing Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", .conflictingContentLengths("5", "6"), at: 52),
    HostileCase("differing Content-Length list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 7\r\n\r\nhello", .conflictingContentLengths("5", "7"), at: 33),
    HostileCase("empty Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", .invalidContentLength(""), at: 33),
    HostileCase("gzip transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .unsupportedTransferCoding("gzip, chunked"), at: 0),
    HostileCase("bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", .invalidChunkSize(byte: 0x7A), at: 47),
    HostileCase("empty chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", .invalidChunkSize(byte: 0x0D), at: 47),
    HostileCase("chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", .chunkSizeOverflow, at: 63),
    HostileCase("chunk size above Int64", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n", .chunkSizeOverflow, at: 62),
    HostileCase("chunk line too long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "a", count: 40) + "\r\n",
                .chunkLineTooLong(limit: 16), at: 63, limits: ParserLimits(maxChunkLineBytes: 16)),
    HostileCase("control byte in chunk extension", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;a\u{1}\r\n", .invalidChunkExtension(byte: 1), at: 50),
    HostileCase("unterminated quoted extension", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;a=\"x\r\n", .invalidChunkExtension(byte: 0x0D), at: 53),
    HostileCase("chunk data longer than size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", .missingCRLFAfterChunkData(byte: 0x62), at: 51),
    HostileCase("bare LF after chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\na\r\n", .bareLF, at: 48),
    HostileCase("trailers too large", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "t", count: 64) + "\r\n\r\n",
                .trailersTooLarge(limit: 32), at: 82, limits: ParserLimits(maxTrailerBytes: 32)),
    HostileCase("bad trailer field", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer: x\r\n\r\n", .whitespaceBeforeColon(field: "Bad"), at: 53),
    HostileCase("body cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", .incompleteMessage("body ended after 3 of 10 bytes"), at: 42),
    HostileCase("chunked cut inside a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", .incompleteMessage("chunked body ended inside a chunk after 2 bytes"), at: 52),
    HostileCase("chunked cut before last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", .incompleteMessage("chunked body ended before the last chunk after 2 bytes"), at: 54),
    HostileCase("chunked cut in trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\r\n", .incompleteMessage("trailer section cut short after 6 bytes"), at: 56),
    HostileCase("head cut short", "HTTP/1.1 200 OK\r\nContent-Len", .incompleteMessage("response head cut short after 28 bytes"), at: 28),
    HostileCase("nothing at all", "", .connectionClosedBeforeResponse, at: 0),
    HostileCase("sixth interim response", String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 6) + "HTTP/1.1 200 OK\r\n\r\n",
                .tooManyInterimResponses(limit: 5), at: 125),
    HostileCase("endless 100 Continue", String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 40),
                .tooManyInterimResponses(limit: 5), at: 125),
    HostileCase("mixed interim responses over the limit",
                "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n",
                .tooManyInterimResponses(limit: 2), at: 65, limits: ParserLimits(maxInterimResponses: 2)),
    HostileCase("no interim response allowed", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
                .tooManyInterimResponses(limit: 0), at: 0, limits: ParserLimits(maxInterimResponses: 0)),
    HostileCase("closed after interim", "HTTP/1.1 100 Continue\r\n\r\n", .incompleteMessage("connection closed after an interim response"), at: 25),
]

/// Every way we check a split: at each single position, and one byte at a time.
func splits(of input: [UInt8]) -> [[ArraySlice<UInt8>]] {
    var result: [[ArraySlice<UInt8>]] = [[input[...]]]
    for k in 0...input.count { result.append([input[..<k], input[k...]]) }
    result.append(input.indices.map { input[$0..<($0 + 1)] })
    // Three pieces around every pair of positions would be quadratic; a stride keeps it cheap but varied.
    for k in stride(from: 1, to: input.count, by: 7) {
        let m = min(input.count, k + 3)
        result.append([input[..<k], input[k..<m], input[m...]])
    }
    return result
}

func describe(_ head: ResponseHead) -> [String] {
    head.fields.pairs.map { "\($0.name): \($0.value)" }
}

/// Parses `c` whole and in every split; all must give what the case says.
func checkValidCase(_ c: ValidCase) throws {
    let input = latin1Bytes(c.input)
    let whole = CollectedResponse.parse(pieces: [input], requestWasHead: c.requestWasHead)
    #expect(whole.error == nil)
    let head = try #require(whole.head)
    #expect(head.status == c.status)
    #expect(describe(head) == c.fields)
    #expect(latin1String(whole.body) == c.body)
    #expect(head.framing.name == c.framing)
    #expect(head.keepAlive == c.keepAlive)
    #expect(whole.trailers.pairs.map { "\($0.name): \($0.value)" } == c.trailers)
    #expect(whole.interim.map(\.status) == c.interim)
    if let interimFields = c.interimFields { #expect(whole.interim.map(describe) == interimFields) }
    #expect(whole.isComplete)
    #expect(whole.consumed == input.count - c.leftover)

    for pieces in splits(of: input) {
        let split = CollectedResponse.parse(pieces: pieces, requestWasHead: c.requestWasHead)
        #expect(split == whole, "split into \(pieces.map(\.count)) differs")
    }
}

/// Parses `c` whole and in every split; all must fail with the case's error at its offset.
func checkHostileCase(_ c: HostileCase) {
    let whole = CollectedResponse.parse(pieces: [c.input], limits: c.limits)
    #expect(whole.error == HTTPParseError(c.kind, offset: c.offset), "got \(String(describing: whole.error))")
    #expect(!whole.isComplete)
    for pieces in splits(of: c.input) {
        let split = CollectedResponse.parse(pieces: pieces, limits: c.limits)
        #expect(split.error == whole.error, "split into \(pieces.map(\.count)) gave \(String(describing: split.error))")
    }
}

@Suite struct ResponseParserTests {
    @Test(arguments: validCases)
    func validResponse(_ c: ValidCase) throws { try checkValidCase(c) }

    @Test(arguments: hostileCases)
    func hostileInput(_ c: HostileCase) { checkHostileCase(c) }

    @Test func errorDescriptionNamesTheProblemAndOffset() {
        let error = HTTPParseError(.invalidFieldValueCharacter(field: "X-Evil", byte: 0), offset: 26)
        #expect(error.description == "invalid byte 0x00 in value of field \"X-Evil\" at byte offset 26")
    }

    @Test func reasonAndVersionAreReported() throws {
        let r = CollectedResponse.parse(pieces: [latin1Bytes("HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")])
        let head = try #require(r.head)
        #expect(head.reason == "Not Found")
        #expect(head.version == "1.0")
    }

    @Test func keepAliveReuseParsesTheNextResponse() throws {
        let input = latin1Bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 206 Partial Content\r\nContent-Length: 1\r\n\r\nc")
        var parser = ResponseParser()
        var bodies: [String] = []
        var statuses: [Int] = []
        try input.withUnsafeBytes { raw in
            var offset = 0
            var body: [UInt8] = []
            while true {
                let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                offset += consumed
                switch event {
                case .head(let head): statuses.append(head.status)
                case .body(let bytes): body.append(contentsOf: bytes)
                case .end:
                    bodies.append(latin1String(body))
                    body = []
                    #expect(parser.connectionReusable)
                    if offset == raw.count { return }
                    parser.prepareForNextResponse()
                case .needMoreInput: Issue.record("ran out of input"); return
                case .interim: break
                }
            }
        }
        #expect(statuses == [200, 206])
        #expect(bodies == ["ab", "c"])
    }

    @Test func bodyEventsAreSlicesOfTheCallersBuffer() throws {
        let input = latin1Bytes("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
        var parser = ResponseParser()
        try input.withUnsafeBytes { raw in
            _ = try parser.parse(raw)
            let (event, _) = try parser.parse(UnsafeRawBufferPointer(rebasing: raw[38...]))
            guard case .body(let slice) = event else { Issue.record("expected body"); return }
            #expect(slice.baseAddress == raw.baseAddress! + 38)
            #expect(slice.count == 4)
        }
    }

    @Test func manyInterimResponsesAreAllReportedWithinTheLimit() {
        let interim = String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 50)
        let r = CollectedResponse.parse(pieces: [latin1Bytes(interim + "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")],
                                        limits: ParserLimits(maxInterimResponses: 50))
        #expect(r.interim.count == 50)
        #expect(r.head?.status == 200)
    }

    @Test func tooManyInterimResponsesNamesTheLimitAndOffset() {
        #expect(ParserLimits().maxInterimResponses == 5)
        let r = CollectedResponse.parse(pieces: [latin1Bytes(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 6))])
        #expect(r.interim.count == 5)
        #expect(r.error?.description == "more than 5 interim (1xx) responses before the final response at byte offset 125")
    }

    /// The limit is per request: each response on a reused connection may have its own interim responses.
    @Test func interimCountStartsAfreshForTheNextResponse() throws {
        let one = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"
        let input = latin1Bytes(one + one + one)
        for pieces in splits(of: input) {
            var parser = ResponseParser(limits: ParserLimits(maxInterimResponses: 1))
            var finals = 0
            var interims = 0
            for piece in pieces {
                let bytes = Array(piece)
                try bytes.withUnsafeBytes { raw in
                    var offset = 0
                    while true {
                        let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                        offset += consumed
                        switch event {
                        case .needMoreInput: return
                        case .interim: interims += 1
                        case .head, .body: break
                        case .end:
                            finals += 1
                            parser.prepareForNextResponse()
                        }
                    }
                }
            }
            #expect(finals == 3, "split into \(pieces.map(\.count))")
            #expect(interims == 3, "split into \(pieces.map(\.count))")
        }
    }
}
