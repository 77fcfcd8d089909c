import Testing
@testable import Haul

/// ``BodyReceivePath/decide(enabled:sink:rateLimited:window:draining:segmentEnd:)``: which body bytes may be
/// spliced into the file, and how many.
@Suite struct BodyReceivePathTests {
    func decide(enabled: Bool = true, sink: BodyReceivePath.Sink = .file, rateLimited: Bool = false,
                window: BodyWindow?, draining: Bool = false, segmentEnd: Int64? = nil) -> BodyReceivePath {
        BodyReceivePath.decide(enabled: enabled, sink: sink, rateLimited: rateLimited, window: window,
                               draining: draining, segmentEnd: segmentEnd)
    }

    @Test func aBoundedRangeIntoAFileIsSplicedToItsEnd() {
        var window = BodyWindow(start: 1000, end: 5000, bounded: true)
        #expect(decide(window: window) == .splice(upTo: 4000))
        _ = window.take(1500)
        #expect(decide(window: window) == .splice(upTo: 2500), "what is left of the range once some came by recv")
        _ = window.take(2500)
        #expect(decide(window: window) == .receive, "nothing left: an overrun is read, and refused")
    }

    @Test func aShrunkSegmentBoundsTheSplice() {
        let window = BodyWindow(start: 0, end: 8 << 20, bounded: true)
        #expect(decide(window: window, segmentEnd: 3 << 20) == .splice(upTo: 3 << 20))
        #expect(decide(window: window, segmentEnd: 0) == .receive, "another connection took the whole rest")
        #expect(decide(window: window, segmentEnd: 9 << 20) == .splice(upTo: 8 << 20), "the window bounds it too")
    }

    @Test func everyOtherDestinationAndModeIsReceived() {
        let window = BodyWindow(start: 0, end: 1 << 20, bounded: true)
        #expect(decide(enabled: false, window: window) == .receive, "turned off")
        #expect(decide(sink: .stream, window: window) == .receive, "an output stream keeps recv + write")
        #expect(decide(sink: .memory, window: window) == .receive, "memory keeps recv + pwrite")
        #expect(decide(rateLimited: true, window: window) == .receive, "a rate limit paces in receive-buffer steps")
        #expect(decide(window: window, draining: true) == .receive, "a drained remainder is not file content")
        #expect(decide(window: nil) == .receive, "a redirect's or an error's body")
    }

    @Test func aProvisionalWindowIsReceived() {
        // Chunked or close-delimited: no promised length, so its bytes are not proven until it ends.
        #expect(decide(window: BodyWindow(start: 0, end: 1 << 20, bounded: false)) == .receive)
        #expect(decide(window: BodyWindow(start: 0, end: nil, bounded: false)) == .receive)
    }

    @Test func aWholeBodyIsReceivedUntilItsRangeBegins() {
        var window = BodyWindow(wholeBodyTaking: 4096..<10_000)
        #expect(decide(window: window) == .receive, "the bytes before the range must be read to be dropped")
        _ = window.take(4000)
        #expect(decide(window: window) == .receive)
        _ = window.take(96)
        #expect(decide(window: window) == .splice(upTo: 10_000 - 4096))
    }

    @Test func aStreamOfUnknownLengthHasNothingToBoundItHere() {
        let window = BodyWindow(start: 0, end: nil, bounded: true)
        #expect(decide(window: window) == .receive)
        #expect(decide(window: window, segmentEnd: 500) == .splice(upTo: 500))
    }

    @Test func theBytesToSplice() {
        #expect(BodyReceivePath.receive.spliceBytes == 0)
        #expect(BodyReceivePath.splice(upTo: 7).spliceBytes == 7)
    }
}
