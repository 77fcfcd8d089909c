import Testing
import HaulHTTP
@testable import Haul

/// A head that contradicts itself (``ResponseFacts/contradiction``): a field that names one thing sent twice
/// with different values, or a `204` that declares a body. Found by attack (`NetworkRedTeamTests`): a 204 with
/// `Content-Length: 5` and a body became an empty file, exit 0; a second `ETag` or `Content-Range` was
/// ignored, the first taken on trust. Each is a faulty response to every decision that would take it as content.
@Suite struct HeadContradictionTests {
    let url = "http://a.test/f"

    /// The facts of a head made of `lines` (status line first), as the engine reads them.
    func facts(_ lines: [String]) throws -> ResponseFacts {
        var parser = ResponseParser()
        let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        let event = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw).event }
        guard case .head(let head) = event else { throw HaulError.unexpected("not a head: \(lines)") }
        return ResponseFacts(head)
    }

    static let partial = ["HTTP/1.1 206 Partial Content", "Content-Length: 100"]

    @Test(arguments: [
        ["Content-Range: bytes 100-199/1000", "Content-Range: bytes 0-99/1000"],
        ["Content-Range: bytes 100-199/1000", "Content-Range: bytes 100-199/1001"],
        ["Content-Range: bytes 100-199/1000", "Content-Range: garbage"],
        ["ETag: \"v1\"", "ETag: \"v2\""],
        ["ETag: \"v1\"", "ETag: W/\"v1\""],
        ["ETag: \"v1\"", "Content-Range: bytes 100-199/1000", "etag: \"v1\"", "ETAG: \"v3\""],
        ["Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT", "Last-Modified: Sun, 06 Nov 1994 08:49:38 GMT"],
        ["Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT", "Last-Modified: yesterday"],
    ])
    func aSingletonFieldSentTwiceWithAnotherMeaningIsAContradiction(fields: [String]) throws {
        let facts = try facts(Self.partial + fields)
        let contradiction = try #require(facts.contradiction, "\(fields)")
        #expect(contradiction.contains("sent twice"), "\(contradiction)")
    }

    @Test(arguments: [
        ["Content-Range: bytes 100-199/1000", "Content-Range: bytes 100-199/1000"],
        ["Content-Range: bytes 100-199/1000", "content-range: BYTES 100-199/1000"],
        ["ETag: \"v1\"", "ETag: \"v1\""],
        ["Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT", "Last-Modified: Sunday, 06-Nov-94 08:49:37 GMT"],
        ["Location: /a", "Location: /b", "Content-Type: a/b", "Content-Type: c/d", "Content-Encoding: gzip", "Content-Encoding: br"],
        ["Content-Range: bytes 100-199/1000", "ETag: \"v1\"", "Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT"],
    ])
    func repeatsThatMeanTheSameAreNoContradiction(fields: [String]) throws {
        #expect(try facts(Self.partial + fields).contradiction == nil, "\(fields)")
    }

    @Test(arguments: [
        (["HTTP/1.1 204 No Content", "Content-Length: 5"], true),
        (["HTTP/1.1 204 No Content", "Content-Length: 0005"], true),
        (["HTTP/1.1 204 No Content", "Transfer-Encoding: chunked"], true),
        (["HTTP/1.1 204 No Content", "Content-Length: 0"], false),
        (["HTTP/1.1 204 No Content"], false),
        (["HTTP/1.1 304 Not Modified", "Content-Length: 5"], false),
    ] as [([String], Bool)])
    func aNoContentThatDeclaresABodyIsAContradiction(lines: [String], contradicts: Bool) throws {
        #expect((try facts(lines).contradiction != nil) == contradicts, "\(lines)")
    }

    @Test func theProbeRetriesAContradictionInsteadOfTakingIt() throws {
        guard case .faulty(let error) = ProbeResponseDecision.decide(try facts(["HTTP/1.1 204 No Content", "Content-Length: 5"]), url: url),
              case .faultyResponse(_, let detail) = error.reason else {
            Issue.record("a 204 with a body must be faulty, never an empty file"); return
        }
        #expect(detail.contains("204") && detail.contains("Content-Length"))
        let doubled = try facts(Self.partial + ["Content-Range: bytes 0-99/1000", "ETag: \"v1\"", "ETag: \"v2\""])
        guard case .faulty = ProbeResponseDecision.decide(doubled, url: url) else { Issue.record("two ETags on the probe must be faulty"); return }
        // An error status stays what it is.
        let notFound = try facts(["HTTP/1.1 404 Not Found", "Content-Length: 0", "ETag: \"v1\"", "ETag: \"v2\""])
        guard case .failed(let failure) = ProbeResponseDecision.decide(notFound, url: url) else { Issue.record("a 404 stays a failure"); return }
        #expect(failure.httpStatus == 404)
    }

    @Test(arguments: [
        ["Content-Range: bytes 100-199/1000", "ETag: \"v1\"", "ETag: \"v2\""],
        ["ETag: \"v1\"", "Content-Range: bytes 100-199/1000", "Content-Range: bytes 0-99/1000"],
        ["ETag: \"v1\"", "Content-Range: bytes 0-99/1000", "Content-Range: bytes 100-199/1000"],
    ])
    func aRangedAnswerThatContradictsItselfIsFaulty(fields: [String]) throws {
        let known = RangedResponseDecision.Known(total: 1000, validators: Validators(entityTag: EntityTag("\"v1\"")!), verified: true, sentIfRange: true)
        guard case .faulty(let error) = RangedResponseDecision.decide(try facts(Self.partial + fields), requested: 100..<200, known: known, url: url),
              case .faultyResponse(_, let detail) = error.reason else {
            Issue.record("expected faulty for \(fields)"); return
        }
        #expect(detail.contains("sent twice") && detail.contains("100-199"), "\(detail)")
    }

    @Test func aSingleRangeThatContradictsItselfIsRefused() throws {
        let facts = try facts(Self.partial + ["Content-Range: bytes 100-199/1000", "Content-Range: bytes 0-99/1000"])
        guard case .failed = SingleRangeDecision.decide(facts, asked: try ByteRange("100-199"), url: url) else {
            Issue.record("expected a refusal"); return
        }
    }

    /// A `200` is the whole representation; one whose `Content-Range` names a part of it (a `206` sent under
    /// the wrong status, as some servers answer a range) carries that part only. Taken as the whole file it
    /// made a 6 MiB download a 4 MiB file, exit 0 (the bounded probe's range).
    @Test(arguments: [
        (["Content-Length: 100", "Content-Range: bytes 0-99/3000"], true),
        (["Content-Length: 100", "Content-Range: bytes 100-199/3000"], true),
        (["Content-Length: 3000", "Content-Range: bytes 0-2999/3001"], true),
        (["Content-Length: 3000", "Content-Range: bytes 0-99/3000"], true),
        (["Transfer-Encoding: chunked", "Content-Range: bytes 0-99/3000"], true),
        (["Content-Length: 3000", "Content-Range: bytes 0-2999/3000"], false),
        (["Transfer-Encoding: chunked", "Content-Range: bytes 0-2999/3000"], false),
        (["Content-Length: 3000", "Content-Range: bytes 0-2999/*"], false),
        (["Content-Length: 3000", "Content-Range: whatever"], false),
        (["Content-Length: 3000"], false),
    ] as [([String], Bool)])
    func aWholeFileAnswerWhoseContentRangeNamesAPartIsAContradiction(fields: [String], contradicts: Bool) throws {
        let facts = try facts(["HTTP/1.1 200 OK"] + fields)
        #expect((facts.contradiction != nil) == contradicts, "\(fields): \(facts.contradiction ?? "none")")
        if contradicts {
            guard case .faulty = ProbeResponseDecision.decide(facts, url: url, form: .bounded(end: 100)) else {
                Issue.record("the probe must not take \(fields) as the whole file"); return
            }
        }
    }
}
