import Testing
import HaulHTTP
import HaulTestSupport
@testable import Haul

/// What a 206's head says about its body — MIME framing, a content coding — for the probe and for every
/// ranged request: one test per way of saying it.
@Suite struct PartialContentBodyTests {
    let url = "http://a.test/f"

    func facts(_ status: Int = 206, range: String? = "bytes 100-199/1000", framing: BodyFraming = .contentLength(100),
               types: [String] = [], codings: [String] = []) -> ResponseFacts {
        ResponseFacts(status: status, contentRange: range, framing: framing, contentTypes: types, contentEncodings: codings)
    }

    func ranged(_ facts: ResponseFacts) -> RangedResponseDecision {
        let known = RangedResponseDecision.Known(total: 1000, validators: Validators(), verified: true, sentIfRange: false)
        return RangedResponseDecision.decide(facts, requested: 100..<200, known: known, url: url)
    }

    static let multipartTypes = [
        "multipart/byteranges; boundary=THIS_STRING_SEPARATES",
        "Multipart/ByteRanges; BOUNDARY=\"quoted boundary\"",
        "MULTIPART/BYTERANGES",
        "multipart/byteranges; boundary=",
        "multipart/byteranges; charset=utf-8; boundary=\"x\"",
        "multipart/byteranges boundary=x",
        "  multipart/byteranges;boundary=\"unterminated",
    ]

    /// The head agrees with the request in every length and range: only the media type tells.
    @Test(arguments: multipartTypes, [BodyFraming.contentLength(100), .chunked, .untilClose])
    func aMultipartRangeIsFaultyWhateverItsParametersAndFraming(type: String, framing: BodyFraming) {
        guard case .faulty(let error) = ranged(facts(framing: framing, types: [type])), case .faultyResponse(let where_, let detail) = error.reason else {
            Issue.record("expected faulty for \(type)"); return
        }
        #expect(where_ == url && detail.contains(type) && detail.contains("100-199"), "\(detail)")
        #expect(error.isTransient, "a faulty response is retried")
    }

    /// A 200 with the download's strong ETag and length, after a failure, may give a range out of its body
    /// (``RangedResponseDecision/acceptFromWholeBody``): not when the body is coded or multipart.
    @Test(arguments: [([], ["gzip"]), (["multipart/byteranges; boundary=b"], [])] as [([String], [String])])
    func aWholeBodyIsNotTakenFromWhenCodedOrMultipart(types: [String], codings: [String]) {
        let tag = EntityTag("\"v1\"")!
        let known = RangedResponseDecision.Known(total: 1000, validators: Validators(entityTag: tag), verified: true,
                                                 sentIfRange: true, failuresInRow: 1)
        let plain = ResponseFacts(status: 200, entityTag: tag, framing: .contentLength(1000))
        guard case .acceptFromWholeBody = RangedResponseDecision.decide(plain, requested: 100..<200, known: known, url: url) else {
            Issue.record("the plain whole body is taken from"); return
        }
        let dressed = ResponseFacts(status: 200, entityTag: tag, framing: .contentLength(1000), contentTypes: types, contentEncodings: codings)
        guard case .faulty(let error) = RangedResponseDecision.decide(dressed, requested: 100..<200, known: known, url: url),
              case .faultyResponse(_, let detail) = error.reason else { Issue.record("expected faulty for \(types) \(codings)"); return }
        #expect(detail.contains("on the 200 for bytes 100-199"), "\(detail)")
    }

    @Test func aSecondContentTypeFieldCannotHideTheMultipartOne() {
        let both = facts(types: ["application/octet-stream", "multipart/byteranges; boundary=b"])
        #expect(both.contentType == "multipart/byteranges; boundary=b")
        guard case .faulty = ranged(both) else { Issue.record("expected faulty"); return }
    }

    @Test(arguments: ["application/octet-stream", "multipart/mixed; boundary=x", "text/html; charset=utf-8", "\"multipart/byteranges\"", ""])
    func otherTypesAreTheBytes(type: String) {
        guard case .accept = ranged(facts(types: [type])) else { Issue.record("expected accept for \(type)"); return }
        guard case .accept = ranged(facts()) else { Issue.record("expected accept without Content-Type"); return }
    }

    @Test(arguments: [["gzip"], ["GZIP"], ["identity, gzip"], ["identity", "br"], ["x-gzip"], ["gzip br"], ["\"gzip\""]])
    func aCodedRangeIsFaulty(codings: [String]) {
        guard case .faulty(let error) = ranged(facts(codings: codings)), case .faultyResponse(_, let detail) = error.reason else {
            Issue.record("expected faulty for \(codings)"); return
        }
        #expect(detail.contains("Content-Encoding"), "\(detail)")
    }

    @Test(arguments: [["identity"], ["Identity"], [""], ["identity, identity"]])
    func identityIsNoCoding(codings: [String]) {
        #expect(facts(codings: codings).contentCodings.isEmpty)
        guard case .accept = ranged(facts(codings: codings)) else { Issue.record("expected accept for \(codings)"); return }
    }

    @Test func aMalformedCodingIsKeptWholeSoItNeverPassesForIdentity() {
        #expect(facts(codings: ["gzip br"]).contentCodings == ["gzip br"])
        #expect(facts(codings: ["GZip", "identity", "br"]).contentCodings == ["gzip", "br"])
    }

    @Test(arguments: ProbeFormTests.forms)
    func theProbeTreatsMultipartAsFaulty(form: ProbeForm) {
        let response = facts(range: "bytes 0-999/1000", framing: .contentLength(1000), types: ["multipart/byteranges; boundary=b"])
        guard case .faulty(let error) = ProbeResponseDecision.decide(response, url: url, form: form),
              case .faultyResponse(_, let detail) = error.reason else { Issue.record("expected faulty"); return }
        #expect(detail.contains("multipart/byteranges") && detail.contains(form.rangeText), "\(detail)")
    }

    /// No range is taken over a coding: the whole file in one plain GET instead.
    @Test(arguments: [ProbeForm.bounded(end: 4 << 20), .openEnded])
    func aCodedProbeFallsBackToAPlainGet(form: ProbeForm) {
        let response = facts(range: "bytes 0-999/1000", framing: .contentLength(1000), codings: ["gzip"])
        guard case .retryProbe(.withoutRange, let error) = ProbeResponseDecision.decide(response, url: url, form: form),
              case .faultyResponse(_, let detail) = error.reason else { Issue.record("expected a plain GET"); return }
        #expect(detail.contains("gzip"))
        guard case .faulty = ProbeResponseDecision.decide(response, url: url, form: .withoutRange) else {
            Issue.record("a coded 206 to a request without Range is faulty"); return
        }
    }

    @Test(arguments: ProbeFormTests.forms)
    func aWholeFileCannotBeMultipartEither(form: ProbeForm) {
        let response = facts(200, range: nil, framing: .chunked, types: ["Multipart/ByteRanges; boundary=b"])
        guard case .faulty(let error) = ProbeResponseDecision.decide(response, url: url, form: form),
              case .faultyResponse(_, let detail) = error.reason else { Issue.record("expected faulty"); return }
        #expect(detail.contains("Multipart/ByteRanges; boundary=b"))
    }

    /// A coded `200` is the file as served, whole, as curl and wget save it (Haul asks for no coding).
    @Test func aCodedWholeFileIsTheFileAsServed() {
        let response = facts(200, range: nil, framing: .contentLength(1000), codings: ["gzip"])
        guard case .whole(1000, _) = ProbeResponseDecision.decide(response, url: url, form: .withoutRange) else {
            Issue.record("expected whole"); return
        }
    }
}

/// How the probe asks (``ProbeForm``), and what a refusal of each form leads to.
@Suite struct ProbeFormTests {
    let url = "http://a.test/f"
    static let forms: [ProbeForm] = [.bounded(end: 4 << 20), .openEnded, .withoutRange]

    func decide(_ status: Int, range: String? = nil, form: ProbeForm) -> ProbeResponseDecision {
        ProbeResponseDecision.decide(ResponseFacts(status: status, reason: "Refused", contentRange: range, framing: .contentLength(20)),
                                     url: url, form: form)
    }

    @Test func theFormsFallBackInOrderAndEnd() {
        #expect(ProbeForm.bounded(end: 10).fallback == .openEnded)
        #expect(ProbeForm.openEnded.fallback == .withoutRange)
        #expect(ProbeForm.withoutRange.fallback == nil)
        #expect(ProbeForm.bounded(end: 10).end == 10 && ProbeForm.openEnded.end == nil && ProbeForm.withoutRange.end == nil)
        #expect(ProbeForm.bounded(end: 4194304).rangeText == "0-4194303" && ProbeForm.openEnded.rangeText == "0-")
        #expect(!ProbeForm.withoutRange.sendsRange && ProbeForm.openEnded.sendsRange)
    }

    static let refusals: [(Int, String?)] = [(400, nil), (416, nil), (416, "bytes */1000"), (416, "garbage"), (501, nil)]

    /// webfs: 400 to `bytes=0-4194303` for a file under 4 MiB; others 416 or 501.
    @Test(arguments: refusals)
    func aRefusedBoundedProbeAsksOpenEnded(status: Int, range: String?) {
        guard case .retryProbe(.openEnded, let error) = decide(status, range: range, form: .bounded(end: 4 << 20)),
              case .httpStatus(status, "Refused", url) = error.reason else {
            Issue.record("expected open-ended for \(status) \(range ?? "")"); return
        }
    }

    @Test(arguments: refusals)
    func aRefusedOpenEndedProbeAsksWithoutRange(status: Int, range: String?) {
        guard case .retryProbe(.withoutRange, _) = decide(status, range: range, form: .openEnded) else {
            Issue.record("expected without Range for \(status) \(range ?? "")"); return
        }
    }

    /// No form is left: the error names the status and the URL.
    @Test(arguments: refusals + [(416, "bytes */0")])
    func aRefusedPlainGetFailsWithTheStatus(status: Int, range: String?) {
        guard case .failed(let error) = decide(status, range: range, form: .withoutRange),
              case .httpStatus(status, _, url) = error.reason else {
            Issue.record("expected HTTP \(status)"); return
        }
        #expect(error.description.contains(url) && error.description.contains("\(status)"))
    }

    /// `*/0` says the file is empty: that is an answer, not a refusal.
    @Test(arguments: [ProbeForm.bounded(end: 4 << 20), .openEnded])
    func anEmptyFileIsStillEmptyWhateverTheRange(form: ProbeForm) {
        guard case .empty = decide(416, range: "bytes */0", form: form) else { Issue.record("expected empty"); return }
    }

    @Test(arguments: forms, [403, 404, 500, 503])
    func otherErrorsAreNotRefusals(form: ProbeForm, status: Int) {
        guard case .failed(let error) = decide(status, form: form), case .httpStatus(status, _, _) = error.reason else {
            Issue.record("expected failure for \(status)"); return
        }
    }

    @Test func aWrongContentRangeNamesTheRangeAskedFor() {
        let response = ResponseFacts(status: 206, contentRange: "bytes 5-999/1000", framing: .contentLength(995))
        guard case .faulty(let error) = ProbeResponseDecision.decide(response, url: url, form: .bounded(end: 4 << 20)),
              case .wrongContentRange(_, "0-4194303", "bytes 5-999/1000") = error.reason else {
            Issue.record("expected the bounded range in the message"); return
        }
    }
}

/// ``ResponseFacts/init(_:)`` reads a head's fields without building the arrays of text that
/// ``ResponseFacts/init(status:reason:contentRange:entityTag:lastModified:framing:location:contentTypes:contentEncodings:retryAfter:)``
/// takes: for every combination of up to three `Content-Type` and two `Content-Encoding` fields it gives what
/// that initializer gives from the same field values.
@Suite struct ResponseFactsFromHeadTests {
    @Test func aHeadGivesTheFactsItsFieldValuesGive() throws {
        let types = ["text/html", "multipart/byteranges; boundary=x", "MULTIPART/BYTERANGES", "not a type", "application/octet-stream"]
        let encodings = ["gzip", "identity", "br, identity", "x y"]
        var compared = 0
        for typeCount in 0...3 {
            for encodingCount in 0...2 {
                let combinations = (0..<typeCount).reduce(1) { product, _ in product * types.count }
                    * (0..<encodingCount).reduce(1) { product, _ in product * encodings.count }
                for combination in 0..<combinations {
                    var rest = combination
                    var chosenTypes: [String] = []
                    for _ in 0..<typeCount { chosenTypes.append(types[rest % types.count]); rest /= types.count }
                    var chosenEncodings: [String] = []
                    for _ in 0..<encodingCount { chosenEncodings.append(encodings[rest % encodings.count]); rest /= encodings.count }
                    var lines = ["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-9/100", "Content-Length: 10",
                                 "ETag: \"v1\"", "Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT", "Location: /elsewhere"]
                    lines += chosenTypes.map { "Content-Type: \($0)" } + chosenEncodings.map { "Content-Encoding: \($0)" }
                    var parser = ResponseParser()
                    let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
                    let event = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw).event }
                    guard case .head(let head) = event else { Issue.record("not a head: \(lines)"); return }
                    let expected = ResponseFacts(
                        status: 206, reason: "Partial Content", contentRange: "bytes 0-9/100", entityTag: EntityTag("\"v1\""),
                        lastModified: HTTPDate("Sun, 06 Nov 1994 08:49:37 GMT"), framing: head.framing, location: "/elsewhere",
                        contentTypes: chosenTypes, contentEncodings: chosenEncodings)
                    #expect(ResponseFacts(head) == expected, "\(lines)")
                    compared += 1
                }
            }
        }
        #expect(compared == (1 + 5 + 25 + 125) * (1 + 4 + 16))
    }

    /// The facts are found in one pass over the fields: with names in any case and order, fields missing or
    /// repeated (the first counts), look-alike names and a `Content-Type` with obs-text, they are what a lookup
    /// per name gives.
    @Test func onePassOverTheFieldsGivesWhatALookupPerNameGives() throws {
        let seed = TestSeed(for: "onePassOverTheFieldsGivesWhatALookupPerNameGives", default: 0x4641_4354_5321)
        var random = seed.generator()
        let candidates = [
            "Content-Range: bytes 0-9/100", "content-range: bytes 1-2/3", "Content-Rangf: bytes 5-6/7", "ETAG: \"v1\"",
            "etag: W/\"w\"", "Date: Sun, 06 Nov 1994 08:49:37 GMT", "Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT",
            "LAST-MODIFIED: nonsense", "Location: /a", "location: /b", "Locatio: /c", "Content-Type: text/plain",
            "content-type: MULTIPART/byteranges; boundary=\u{E9}", "Content-Type: text/x; q=\"\u{E9}\"", "X-Content-Type: a/b",
            "Content-Encoding: gzip", "content-encoding: identity", "CONTENT-ENCODING: x y", "Vary: *", "Age: 1",
            "Retry-After: 120", "retry-after: Sun, 06 Nov 1994 08:49:37 GMT", "RETRY-AFTER: soon", "Retry-Afte: 5",
        ]
        for _ in 0..<400 {
            let count = Int(random.next() % 9)
            let lines = ["HTTP/1.1 206 Partial Content", "Content-Length: 10"]
                + (0..<count).map { _ in candidates[Int(random.next() % UInt64(candidates.count))] }
            var parser = ResponseParser()
            let bytes = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
            let event = try bytes.withUnsafeBytes { raw throws(HTTPParseError) in try parser.parse(raw).event }
            guard case .head(let head) = event else { Issue.record("not a head: \(lines), \(seed)"); return }
            let fields = head.fields
            // Repeats of a field that must be one contradict the head when they mean something else.
            let repeatsDiffer = fields.all("content-range").dropFirst().contains { ContentRange($0) != ContentRange(fields.first("content-range")!) }
                || fields.all("etag").dropFirst().contains { EntityTag($0) != EntityTag(fields.first("etag")!) }
                || fields.all("last-modified").dropFirst().contains { !($0.elementsEqual(fields.first("last-modified")!) || (HTTPDate($0) != nil && HTTPDate($0) == HTTPDate(fields.first("last-modified")!))) }
            var expected = ResponseFacts(
                status: head.status, reason: head.reason, contentRange: fields.firstString("content-range"),
                entityTag: fields.first("etag").flatMap { EntityTag($0) },
                lastModified: fields.first("last-modified").flatMap { HTTPDate($0) }, framing: head.framing,
                location: fields.firstString("location"), contentTypes: fields.all("content-type").map { latin1String($0) },
                contentEncodings: fields.all("content-encoding").map { latin1String($0) },
                retryAfter: fields.first("retry-after").flatMap { RetryAfter($0) })
            let facts = ResponseFacts(head)
            #expect((facts.contradiction != nil) == repeatsDiffer, "\(lines), \(seed): \(facts.contradiction ?? "no contradiction")")
            expected.contradiction = facts.contradiction
            #expect(facts == expected, "\(lines), \(seed)")
        }
    }
}
