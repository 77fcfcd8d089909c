import Testing
import HaulHTTP

/// ``ResponseParser/skipBody(_:)``: body bytes received around the parser (spliced into a file) count as
/// delivered, and the response ends after the last of them as if they had been parsed.
@Suite struct ResponseParserSkipBodyTests {
    /// Parses `text` and returns the parser right after the head (and any body bytes in `text`).
    func parsed(_ text: String) throws -> (ResponseParser, body: Int) {
        var parser = ResponseParser()
        var body = 0
        let bytes = Array(text.utf8)
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while true {
                let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: raw[offset...]))
                offset += consumed
                if case .body(let piece) = event { body += piece.count }
                if case .needMoreInput = event { break }
                if case .end = event { break }
            }
        }
        return (parser, body)
    }

    @Test func aContentLengthBodyEndsAfterItsSkippedBytes() throws {
        var (parser, body) = try parsed("HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n\r\nabc")
        #expect(body == 3)
        #expect(parser.contentLengthRemaining == 7)
        let before = parser.bytesConsumed
        parser.skipBody(4)
        #expect(parser.contentLengthRemaining == 3)
        #expect(parser.bodyBytesDelivered == 7)
        parser.skipBody(3)
        #expect(parser.contentLengthRemaining == nil)
        #expect(parser.bytesConsumed == before + 7)
        let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(start: nil, count: 0))
        guard case .end = event else { Issue.record("expected the end, got \(event)"); return }
        #expect(consumed == 0)
        #expect(parser.connectionReusable)
        #expect(parser.bodyBytesDelivered == 10)
    }

    @Test func onlyAContentLengthBodyHasARemainder() throws {
        #expect(try parsed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").0.contentLengthRemaining == nil)
        #expect(try parsed("HTTP/1.1 200 OK\r\n\r\nabc").0.contentLengthRemaining == nil, "close-delimited")
        #expect(try parsed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").0.contentLengthRemaining == nil)
        #expect(try parsed("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc").0.contentLengthRemaining == nil, "complete")
        #expect(try parsed("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n").0.contentLengthRemaining == nil, "head unfinished")
    }

    @Test func endOfStreamAfterSkippedBytesIsTheSameShortBody() throws {
        var (parser, _) = try parsed("HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n\r\nab")
        parser.skipBody(5)
        #expect(throws: HTTPParseError.self) { _ = try parser.finish() }
        do {
            _ = try parser.finish()
        } catch {
            #expect("\(error)".contains("body ended after 7 of 10 bytes"))
        }
    }
}
