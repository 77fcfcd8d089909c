import Testing
@testable import Haul
import HaulHTTP

/// curl's `-r`: only a `206` with exactly the asked range may become the output; every other answer is
/// refused before a byte is written.
@Suite struct SingleRangeDecisionTests {
    static let url = "http://files.example/a.bin"

    func decide(_ asked: String, status: Int = 206, contentRange: String?, framing: BodyFraming? = nil,
                contentTypes: [String] = [], contentEncodings: [String] = []) throws -> SingleRangeDecision {
        let range = try ByteRange(asked)
        let count = ContentRange(contentRange ?? "")?.count ?? 0
        let facts = ResponseFacts(status: status, reason: status == 206 ? "Partial Content" : "OK", contentRange: contentRange,
                                  framing: framing ?? .contentLength(count), contentTypes: contentTypes,
                                  contentEncodings: contentEncodings)
        return SingleRangeDecision.decide(facts, asked: range, url: Self.url)
    }

    func isWrongRange(_ decision: SingleRangeDecision) -> Bool {
        if case .failed(let error) = decision, case .wrongContentRange = error.reason { return true }
        return false
    }

    func isFaulty(_ decision: SingleRangeDecision) -> Bool {
        if case .failed(let error) = decision, case .faultyResponse = error.reason { return true }
        return false
    }

    @Test func theExactRangeIsAccepted() throws {
        #expect(try decide("100-199", contentRange: "bytes 100-199/1000") == .accept(served: 100...199, total: 1000))
        #expect(try decide("100-", contentRange: "bytes 100-999/1000") == .accept(served: 100...999, total: 1000))
        #expect(try decide("-50", contentRange: "bytes 950-999/1000") == .accept(served: 950...999, total: 1000))
        // The end clipped to the resource's end, as RFC 9110 lets a server answer; a suffix longer than it.
        #expect(try decide("900-5000", contentRange: "bytes 900-999/1000") == .accept(served: 900...999, total: 1000))
        #expect(try decide("-5000", contentRange: "bytes 0-999/1000") == .accept(served: 0...999, total: 1000))
        // An unknown length: the asked range itself.
        #expect(try decide("0-9", contentRange: "bytes 0-9/*") == .accept(served: 0...9, total: nil))
        #expect(try decide("0-9", contentRange: "bytes 0-9/1000", framing: .chunked) == .accept(served: 0...9, total: 1000))
    }

    @Test func aWholeFileAnswerIsRefusedNotCut() throws {
        let whole = try decide("100-199", status: 200, contentRange: nil, framing: .contentLength(1000))
        #expect(isFaulty(whole))
        if case .failed(let error) = whole { #expect(error.description.contains("200")) }
    }

    @Test func anotherRangeIsRefused() throws {
        #expect(isWrongRange(try decide("100-199", contentRange: "bytes 0-99/1000")))
        #expect(isWrongRange(try decide("100-199", contentRange: "bytes 100-198/1000")), "one byte short")
        #expect(isWrongRange(try decide("100-199", contentRange: "bytes 100-200/1000")), "one byte more")
        #expect(isWrongRange(try decide("100-", contentRange: "bytes 100-998/1000")), "not to the end")
        #expect(isWrongRange(try decide("-50", contentRange: "bytes 949-999/1000")))
        #expect(isWrongRange(try decide("100-", contentRange: "bytes 100-999/*")), "an open range needs the length")
        #expect(isWrongRange(try decide("100-199", contentRange: nil, framing: .contentLength(100))), "no Content-Range")
        #expect(isWrongRange(try decide("100-199", contentRange: "bytes */1000", framing: .contentLength(0))))
        #expect(isWrongRange(try decide("2000-2099", contentRange: "bytes 900-999/1000")), "past the end")
    }

    @Test func multipartAndCodedBodiesAreRefused() throws {
        #expect(isFaulty(try decide("0-9", contentRange: "bytes 0-9/1000", contentTypes: ["multipart/byteranges; boundary=x"])))
        #expect(isFaulty(try decide("0-9", contentRange: "bytes 0-9/1000", contentEncodings: ["gzip"])))
    }

    @Test func aLengthThatDisagreesIsRefused() throws {
        #expect(isFaulty(try decide("0-9", contentRange: "bytes 0-9/1000", framing: .contentLength(11))))
        #expect(isFaulty(try decide("0-9", contentRange: "bytes 0-9/1000", framing: BodyFraming.none)))
    }

    @Test func errorStatusesAndRedirectsAreWhatTheyAre() throws {
        #expect(try decide("0-9", status: 302, contentRange: nil) == .redirect)
        let refused = try decide("5000-", status: 416, contentRange: "bytes */1000", framing: .contentLength(0))
        if case .failed(let error) = refused { #expect(error.httpStatus == 416) } else { Issue.record("\(refused)") }
    }

    @Test func rangesAreParsedAsCurlWritesThem() throws {
        #expect(try ByteRange("0-99").form == .closed(first: 0, last: 99))
        #expect(try ByteRange("100-").form == .from(first: 100))
        #expect(try ByteRange("-500").form == .suffix(length: 500))
        #expect(try ByteRange("7-7").description == "7-7")
        for bad in ["", "-", "9-3", "a-b", "0-9,20-29", "1-2-3", "-0", " 1-2", "99999999999999999999-"] {
            #expect(throws: ByteRangeError.self, "\(bad)") { try ByteRange(bad) }
        }
        do {
            _ = try ByteRange("0-9,20-29")
        } catch {
            #expect(error.description.contains("one range only"), "\(error)")
        }
    }
}
