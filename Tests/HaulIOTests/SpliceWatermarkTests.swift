import Testing
@testable import HaulIO

/// ``SpliceWatermark``: raised only for a stream that proved fast and a body that still owes the level.
@Suite struct SpliceWatermarkTests {
    let watermark = SpliceWatermark(pipeCapacity: 256 << 10)

    @Test func theRaisedLevelIsThreeQuartersOfThePipe() {
        #expect(watermark.raised == 192 << 10)
        #expect(SpliceWatermark(pipeCapacity: 65536).raised == 49152)
        #expect(SpliceWatermark(pipeCapacity: 0).raised == SpliceWatermark.none, "no pipe, no watermark")
    }

    @Test func aWakeUpThatFoundHalfTheLevelRaisesIt() {
        #expect(watermark.level(afterMoving: 96 << 10, nextSpliceLimit: 10 << 20) == watermark.raised)
        #expect(watermark.level(afterMoving: 250_000, nextSpliceLimit: 10 << 20) == watermark.raised)
    }

    @Test func aTrickleReadsAtOnce() {
        #expect(watermark.level(afterMoving: (96 << 10) - 1, nextSpliceLimit: 10 << 20) == SpliceWatermark.none)
        #expect(watermark.level(afterMoving: 0, nextSpliceLimit: 10 << 20) == SpliceWatermark.none)
        #expect(watermark.level(afterMoving: 1448, nextSpliceLimit: 10 << 20) == SpliceWatermark.none)
    }

    @Test func neverAboveWhatTheBodyStillOwes() {
        #expect(watermark.level(afterMoving: 250_000, nextSpliceLimit: Int64(watermark.raised)) == watermark.raised)
        #expect(watermark.level(afterMoving: 250_000, nextSpliceLimit: Int64(watermark.raised) - 1) == SpliceWatermark.none)
        #expect(watermark.level(afterMoving: 250_000, nextSpliceLimit: 0) == SpliceWatermark.none, "the next read is not a splice")
    }
}
