import Testing
import HaulHTTP

/// The parser overwrites one array per section (bytes, then entries) when nobody kept the last section's
/// fields; these check that fields a caller keeps never change, whatever the parser does next.
@Suite struct HTTPFieldsStorageTests {
    /// Parses each head in turn on one reused parser (as on a keep-alive connection) and keeps every head.
    func parseInTurn(_ heads: [String]) throws -> [ResponseHead] {
        var parser = ResponseParser()
        var kept: [ResponseHead] = []
        for text in heads {
            parser.prepareForNextResponse(requestWasHead: true)
            let bytes = latin1Bytes(text)
            let event = try bytes.withUnsafeBytes { try parser.parse($0).event }
            guard case .head(let head) = event else {
                Issue.record("expected a head for \(text.debugDescription)")
                continue
            }
            kept.append(head)
        }
        return kept
    }

    func bigHead(fields: Int) -> String {
        "HTTP/1.1 200 OK\r\n" + (0..<fields).map { "X-Field-\($0): value number \($0) of \(fields)\r\n" }.joined() + "\r\n"
    }

    @Test func keptHeadsKeepTheirFieldsWhileTheParserGoesOn() throws {
        // Small, then larger than the parser's first array (so it is replaced), then small again.
        let texts = ["HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"a\"\r\n\r\n", bigHead(fields: 60),
                     "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1/2\r\n\r\n"]
        let kept = try parseInTurn(texts)
        let fresh = try texts.map { try #require(parseInTurn([$0]).first) }
        #expect(kept.count == 3)
        #expect(kept.map(describe) == fresh.map(describe))
        #expect(kept == fresh)
        #expect(kept[0].fields.firstString("etag") == "\"a\"")
        #expect(kept[1].fields.count == 60)
        #expect(kept[1].fields.firstString("x-field-59") == "value number 59 of 60")
        #expect(kept[2].reason == "Partial Content")
        #expect(kept[2].fields.firstString("CONTENT-RANGE") == "bytes 0-1/2")
    }

    @Test func droppedHeadsLeaveTheNextOneIntact() throws {
        // Each head is dropped before the next is parsed, so the parser overwrites its array in place; a
        // shorter head must not show what a longer one left behind.
        var parser = ResponseParser()
        let texts = [bigHead(fields: 40), "HTTP/1.1 200 OK\r\nA: 1\r\n\r\n", bigHead(fields: 3), "HTTP/1.1 204 No Content\r\n\r\n"]
        for text in texts {
            parser.prepareForNextResponse(requestWasHead: true)
            let bytes = latin1Bytes(text)
            let event = try bytes.withUnsafeBytes { try parser.parse($0).event }
            guard case .head(let head) = event else {
                Issue.record("expected a head")
                continue
            }
            let expected = try #require(parseInTurn([text]).first)
            #expect(describe(head) == describe(expected))
            #expect(head.fields == expected.fields)
        }
    }

    @Test func appendingToParsedFieldsCopiesThem() throws {
        let head = try #require(parseInTurn(["HTTP/1.1 200 OK\r\nServer: s\r\nVary: x\r\n\r\n"]).first)
        var extended = head.fields
        extended.append(name: Array("X-Added".utf8), value: Array("yes".utf8))
        extended.append(name: Array("Server".utf8), value: Array("second".utf8))
        #expect(head.fields.count == 2)
        #expect(head.fields.all("server").map { latin1String($0) } == ["s"])
        #expect(extended.pairs.map { "\($0.name): \($0.value)" } == ["Server: s", "Vary: x", "X-Added: yes", "Server: second"])
        #expect(extended == HTTPFields([("Server", "s"), ("Vary", "x"), ("X-Added", "yes"), ("Server", "second")]))
        #expect(extended != head.fields)
    }

    @Test func builtFieldsKeepOrderAndValueSemantics() {
        var a = HTTPFields()
        #expect(a.isEmpty)
        // Names and values of every length around the 16-byte alignment of the entries.
        for k in 0..<40 {
            a.append(name: Array("N\(k)".utf8), value: Array(String(repeating: "v", count: k).utf8))
        }
        let b = a
        a.append(name: Array("Last".utf8), value: Array("1".utf8))
        #expect(a.count == 41)
        #expect(b.count == 40)
        for k in 0..<40 {
            #expect(latin1String(b.name(at: k)) == "N\(k)")
            #expect(b.value(at: k).count == k)
            #expect(a.value(at: k) == b.value(at: k))
        }
        #expect(a.firstString("last") == "1")
        #expect(b.first("last") == nil)
        #expect(HTTPFields() == HTTPFields([]))
    }
}
