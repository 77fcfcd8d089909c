import Testing
import HaulJournal

@Suite struct ByteRangeSetTests {
    @Test func mergesOverlappingAndTouchingRanges() {
        var set = ByteRangeSet()
        set.insert(10..<20)
        set.insert(30..<40)
        set.insert(20..<25)
        #expect(set.ranges == [10..<25, 30..<40])
        set.insert(24..<31)
        #expect(set.ranges == [10..<40])
        set.insert(0..<5)
        #expect(set.ranges == [0..<5, 10..<40])
        #expect(set.count == 35)
    }

    @Test func gapsAreTheComplement() {
        let set = ByteRangeSet([0..<5, 10..<40])
        #expect(set.gaps(in: 0..<50) == [5..<10, 40..<50])
        #expect(ByteRangeSet().gaps(in: 0..<7) == [0..<7])
        #expect(ByteRangeSet([0..<7]).gaps(in: 0..<7) == [])
    }
}
