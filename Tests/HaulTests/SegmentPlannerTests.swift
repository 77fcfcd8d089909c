import Testing
@testable import Haul

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

@Suite struct SegmentPlannerTests {
    let mib: Int64 = 1 << 20

    @Test func startsWithEqualShares() {
        var planner = SegmentPlanner(total: 64 * mib, minimumSegment: mib)
        planner.splitForStart(connections: 8)
        var ranges: [Range<Int64>] = []
        for worker in 0..<8 { if let work = planner.assignWork(to: worker) { ranges.append(work.range) } }
        #expect(ranges.count == 8)
        #expect(Set(ranges.map { $0.count }) == [Int(8 * mib)])
        #expect(ByteRangeSet(ranges).ranges == [0..<(64 * mib)])
    }

    @Test func smallFilesUseFewerConnections() {
        var planner = SegmentPlanner(total: 3 * mib, minimumSegment: mib)
        #expect(planner.usefulConnections(limit: 16) == 3)
        planner.splitForStart(connections: 3)
        var assigned = 0
        for worker in 0..<3 where planner.assignWork(to: worker) != nil { assigned += 1 }
        #expect(assigned == 3)
        let extra = planner.assignWork(to: 3)
        #expect(extra == nil)
    }

    @Test func stealingTakesTheSecondHalfOfTheLargestRemainder() throws {
        var planner = SegmentPlanner(total: 16 * mib, minimumSegment: mib)
        planner.splitForStart(connections: 2)
        let aWork = planner.assignWork(to: 0)
        let a = try #require(aWork)
        let bWork = planner.assignWork(to: 1)
        let b = try #require(bWork)
        planner.advance(a.segment, by: 8 * mib)           // worker 0 finished
        planner.advance(b.segment, by: 2 * mib)           // worker 1 has 6 MiB left
        let stolenWork = planner.assignWork(to: 0)
        let stolen = try #require(stolenWork)
        #expect(stolen.range == (13 * mib)..<(16 * mib))
        #expect(planner.end(of: b.segment) == 13 * mib)   // the owner's range shrank: no byte twice
    }

    @Test func nothingToStealBelowTwiceTheMinimum() throws {
        var planner = SegmentPlanner(total: 3 * mib, minimumSegment: mib)
        let aWork = planner.assignWork(to: 0)
        let a = try #require(aWork)
        planner.advance(a.segment, by: mib + 1)
        let none = planner.assignWork(to: 1)
        #expect(none == nil)
    }

    @Test func releasedWorkIsPickedUpAndResumesWhereItStopped() throws {
        var planner = SegmentPlanner(total: 4 * mib, minimumSegment: mib)
        let aWork = planner.assignWork(to: 0)
        let a = try #require(aWork)
        planner.advance(a.segment, by: 1000)
        planner.release(a.segment)                         // connection failed
        let retryWork = planner.assignWork(to: 5)
        let retry = try #require(retryWork)
        #expect(retry.range == 1000..<(4 * mib))           // only the unfinished part
    }

    @Test func resumePlansOnlyTheGaps() {
        var planner = SegmentPlanner(total: 10 * mib, minimumSegment: mib, alreadyDone: ByteRangeSet([0..<(4 * mib), (6 * mib)..<(10 * mib)]))
        #expect(planner.remainingBytes == 2 * mib)
        let work = planner.assignWork(to: 0)
        #expect(work?.range == (4 * mib)..<(6 * mib))
    }

    @Test func randomWorkloadsNeverOverlapAndFinish() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let total = Int64.random(in: 1...(40 * mib), using: &generator)
            var planner = SegmentPlanner(total: total, minimumSegment: Int64.random(in: 1...mib, using: &generator))
            let workers = Int.random(in: 1...16, using: &generator)
            planner.splitForStart(connections: workers)
            var owned: [Int: Int] = [:]                 // worker → segment
            var requested = ByteRangeSet()
            var requestedBytes: Int64 = 0
            var steps = 0
            while !planner.isComplete && steps < 100_000 {
                steps += 1
                let worker = Int.random(in: 0..<workers, using: &generator)
                if let segment = owned[worker], planner.end(of: segment) > planner.next(of: segment) {
                    let left = planner.end(of: segment) - planner.next(of: segment)
                    let chunk = min(left, Int64.random(in: 1...(mib / 2), using: &generator))
                    if Int.random(in: 0..<50, using: &generator) == 0 {
                        planner.release(segment)
                        owned[worker] = nil
                    } else {
                        planner.advance(segment, by: chunk)
                    }
                } else if let work = planner.assignWork(to: worker) {
                    owned[worker] = work.segment
                    requestedBytes += Int64(work.range.count)
                    requested.insert(work.range)
                } else {
                    owned[worker] = nil
                }
            }
            #expect(planner.isComplete)
            #expect(planner.written.ranges == [0..<total])
        }
    }
}
