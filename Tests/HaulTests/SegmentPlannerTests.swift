import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

@Suite struct SegmentPlannerTests {
    let mib: Int64 = 1 << 20

    @Test func startsWithEqualSharesRequestedAChunkAtATime() {
        var planner = SegmentPlanner(total: 64 * mib, minimumSegment: mib)
        planner.splitForStart(connections: 8)
        var ranges: [Range<Int64>] = []
        for worker in 0..<8 { if let work = planner.nextRequest(for: worker) { ranges.append(work.range) } }
        #expect(ranges == (0..<8).map { Int64($0) * 8 * mib ..< Int64($0) * 8 * mib + planner.requestChunk })
    }

    @Test func requestsGrowWhileMuchIsLeftAndEndInBaseSizedRequests() throws {
        // 1 GiB over 8 connections: each 128 MiB segment in growing requests (4, 8, 16, then at most a quarter
        // of what is unrequested), never past 32 MiB, and its last 16 MiB in 4 MiB requests others can share.
        var planner = SegmentPlanner(total: 1024 * mib, minimumSegment: mib)
        planner.splitForStart(connections: 8)
        let firstWork = planner.nextRequest(for: 0)
        var work = try #require(firstWork)
        var sizes: [Int64] = []
        var covered: Int64 = 0
        while true {
            let size = work.range.upperBound - work.range.lowerBound
            #expect(work.range.lowerBound == covered, "requests follow each other without gaps")
            sizes.append(size)
            covered += size
            planner.advance(work.segment, by: size)
            guard covered < 128 * mib, let next = planner.nextRequest(for: 0, continuing: work.segment) else { break }
            work = next
        }
        #expect(covered == 128 * mib)
        #expect(Array(sizes.prefix(3)) == [4 * mib, 8 * mib, 16 * mib])
        #expect(sizes.allSatisfy { $0 <= 32 * mib })
        #expect(sizes.dropLast().allSatisfy { $0 >= 4 * mib }, "only the segment's last request is below 4 MiB")
        #expect(zip(sizes, sizes.dropFirst()).allSatisfy { $1 <= 2 * $0 }, "at most twice the previous request")
        var unrequested = 128 * mib
        for size in sizes {
            if unrequested <= 16 * mib { #expect(size == min(4 * mib, unrequested), "the tail goes in base-sized requests") }
            unrequested -= size
        }
        #expect(sizes.count < 32, "fewer requests than 4 MiB at a time: \(sizes.map { $0 / mib })")
    }

    @Test func requestSizes() {
        #expect(SegmentPlanner.chunk(base: 4 * mib, maximum: 32 * mib, previous: 0, unrequested: 128 * mib) == 4 * mib)
        #expect(SegmentPlanner.chunk(base: 4 * mib, maximum: 32 * mib, previous: 4 * mib, unrequested: 124 * mib) == 8 * mib)
        #expect(SegmentPlanner.chunk(base: 4 * mib, maximum: 32 * mib, previous: 32 * mib, unrequested: 900 * mib) == 32 * mib)
        #expect(SegmentPlanner.chunk(base: 4 * mib, maximum: 32 * mib, previous: 16 * mib, unrequested: 40 * mib) == 10 * mib)
        #expect(SegmentPlanner.chunk(base: 4 * mib, maximum: 32 * mib, previous: 16 * mib, unrequested: 6 * mib) == 4 * mib)
        #expect(SegmentPlanner.chunk(base: 4 * mib, maximum: 4 * mib, previous: 4 * mib, unrequested: 900 * mib) == 4 * mib)
    }

    @Test func aChosenRequestSizeAndAReleasedSegmentDoNotGrow() throws {
        // A stream's planner asks for its chosen size every time.
        var stream = SegmentPlanner(total: 256 * mib, minimumSegment: mib, requestChunk: 2 * mib)
        let streamFirst = stream.nextRequest(for: 0)
        var work = try #require(streamFirst)
        for _ in 0..<5 {
            #expect(work.range.count == Int(2 * mib))
            stream.advance(work.segment, by: 2 * mib)
            let next = stream.nextRequest(for: 0, continuing: work.segment)
            work = try #require(next)
        }
        // A segment given up by its connection starts again at the base size under its next owner.
        var planner = SegmentPlanner(total: 256 * mib, minimumSegment: mib)
        let plannerFirst = planner.nextRequest(for: 0)
        let first = try #require(plannerFirst)
        planner.advance(first.segment, by: 4 * mib)
        let secondWork = planner.nextRequest(for: 0, continuing: first.segment)
        let second = try #require(secondWork)
        #expect(second.range == (4 * mib)..<(12 * mib))
        planner.release(first.segment)
        let retried = planner.nextRequest(for: 1)
        #expect(retried?.range == (4 * mib)..<(8 * mib))
    }

    @Test func smallFilesUseFewerConnections() {
        var planner = SegmentPlanner(total: 3 * mib, minimumSegment: mib)
        #expect(planner.usefulConnections(limit: 16) == 3)
        planner.splitForStart(connections: 3)
        var assigned = 0
        for worker in 0..<3 where planner.nextRequest(for: worker) != nil { assigned += 1 }
        #expect(assigned == 3)
        let extra = planner.nextRequest(for: 3)
        #expect(extra == nil)
    }

    @Test func stealingTakesTheSecondHalfOfTheLargestUnrequestedRemainder() throws {
        var planner = SegmentPlanner(total: 16 * mib, minimumSegment: mib)
        planner.splitForStart(connections: 2)
        let aWork = planner.nextRequest(for: 0)
        let a = try #require(aWork)
        let bWork = planner.nextRequest(for: 1)
        let b = try #require(bWork)
        #expect(a.range == 0..<(4 * mib))
        #expect(b.range == (8 * mib)..<(12 * mib))
        planner.advance(a.segment, by: 4 * mib)
        let aNext = planner.nextRequest(for: 0, continuing: a.segment)
        #expect(aNext?.range == (4 * mib)..<(8 * mib), "the owner continues its own segment first")
        planner.advance(a.segment, by: 4 * mib)            // worker 0 finished its segment
        planner.advance(b.segment, by: 2 * mib)            // worker 1: 12..16 not yet requested
        let stolenWork = planner.nextRequest(for: 0, continuing: a.segment)
        let stolen = try #require(stolenWork)
        #expect(stolen.range == (14 * mib)..<(16 * mib))
        #expect(planner.end(of: b.segment) == 14 * mib)    // the owner's range shrank: no byte requested twice
    }

    @Test func aBoundedProbeLeavesTheRestOfItsSegmentToShare() throws {
        // The probe asked for the first request's worth of its 32 MiB segment: the other connection, out of
        // work, takes half of what is not yet asked for, not nothing (as with an open-ended probe).
        var planner = SegmentPlanner(total: 64 * mib, minimumSegment: mib)
        planner.splitForStart(connections: 2)
        let probeWork = planner.nextRequest(for: 0)
        let probe = try #require(probeWork)
        planner.markRequested(probe.segment, upTo: planner.requestChunk)
        #expect(planner.nextRequest(for: 1) != nil)
        planner.advance(1, by: 32 * mib)
        let stolenWork = planner.nextRequest(for: 1)
        let stolen = try #require(stolenWork)
        let unrequested = 32 * mib - planner.requestChunk
        #expect(stolen.range.lowerBound == planner.requestChunk + unrequested / 2)
        #expect(planner.end(of: probe.segment) == stolen.range.lowerBound)

        var openEnded = SegmentPlanner(total: 64 * mib, minimumSegment: mib)
        openEnded.splitForStart(connections: 2)
        let firstWork = openEnded.nextRequest(for: 0)
        let first = try #require(firstWork)
        openEnded.markRequestedToEnd(first.segment)
        #expect(openEnded.nextRequest(for: 1) != nil)
        openEnded.advance(1, by: 32 * mib)
        #expect(openEnded.nextRequest(for: 1) == nil)
    }

    @Test func markingRequestedNeverGoesBackOrPastTheEnd() throws {
        var planner = SegmentPlanner(total: 8 * mib, minimumSegment: mib)
        let firstWork = planner.nextRequest(for: 0)
        let work = try #require(firstWork)
        #expect(work.range == 0..<(4 * mib))
        planner.markRequested(work.segment, upTo: mib)
        #expect(planner.segments[work.segment]?.requested == 4 * mib)
        planner.markRequested(work.segment, upTo: 100 * mib)
        #expect(planner.segments[work.segment]?.requested == 8 * mib)
    }

    @Test func nothingToStealBelowTwiceTheMinimum() throws {
        var planner = SegmentPlanner(total: 3 * mib, minimumSegment: mib)
        let aWork = planner.nextRequest(for: 0)
        let a = try #require(aWork)
        planner.advance(a.segment, by: mib + 1)
        let none = planner.nextRequest(for: 1)
        #expect(none == nil)
    }

    @Test func releasedWorkIsPickedUpAndResumesWhereItStopped() throws {
        var planner = SegmentPlanner(total: 4 * mib, minimumSegment: mib)
        let aWork = planner.nextRequest(for: 0)
        let a = try #require(aWork)
        planner.advance(a.segment, by: 1000)
        planner.release(a.segment)                         // connection failed
        let retryWork = planner.nextRequest(for: 5)
        let retry = try #require(retryWork)
        #expect(retry.range == 1000..<(4 * mib))           // only the unfinished part
    }

    @Test func resumePlansOnlyTheGaps() {
        var planner = SegmentPlanner(total: 10 * mib, minimumSegment: mib, alreadyDone: ByteRangeSet([0..<(4 * mib), (6 * mib)..<(10 * mib)]))
        #expect(planner.remainingBytes == 2 * mib)
        let work = planner.nextRequest(for: 0)
        #expect(work?.range == (4 * mib)..<(6 * mib))
    }

    /// A byte is requested a second time only after the request that held it was released before writing it.
    @Test func randomWorkloadsNeverRequestAByteTwiceAndFinish() {
        let seed = TestSeed(for: "SegmentPlannerTests.randomWorkloads", default: 0x5345_474D)
        var generator = seed.generator()
        for workload in 0..<300 {
            let total = Int64.random(in: 1...(40 * mib), using: &generator)
            var planner = SegmentPlanner(total: total, minimumSegment: Int64.random(in: 1...mib, using: &generator))
            let workers = Int.random(in: 1...16, using: &generator)
            planner.splitForStart(connections: workers)
            // Each worker's in-flight request: segment, next byte, end of the request.
            var inFlight: [Int: (segment: Int, next: Int64, end: Int64)] = [:]
            var requestedBytes: Int64 = 0
            var lostBytes: Int64 = 0
            // Bytes ever handed back unwritten (by `release`): the only ones that may be requested again.
            var released = ByteRangeSet()
            var requested = ByteRangeSet()
            var overlapBytes: Int64 = 0
            var steps = 0
            while !planner.isComplete && steps < 200_000 {
                steps += 1
                let worker = Int.random(in: 0..<workers, using: &generator)
                if var work = inFlight[worker] {
                    // Another connection may have taken the end of this request's segment away... it may not:
                    // requests never extend past the segment's end.
                    #expect(planner.end(of: work.segment).map { work.end <= $0 } ?? true)
                    if Int.random(in: 0..<40, using: &generator) == 0 {
                        lostBytes += work.end - work.next
                        released.insert(work.next..<work.end)
                        planner.release(work.segment)
                        inFlight[worker] = nil
                        continue
                    }
                    let chunk = min(work.end - work.next, Int64.random(in: 1...(mib / 2), using: &generator))
                    planner.advance(work.segment, by: chunk)
                    work.next += chunk
                    if work.next == work.end {
                        inFlight[worker] = nil
                        if let next = planner.nextRequest(for: worker, continuing: work.segment) {
                            record(next)
                        }
                    } else {
                        inFlight[worker] = work
                    }
                } else if let next = planner.nextRequest(for: worker) {
                    record(next)
                }

                func record(_ next: (segment: Int, range: Range<Int64>)) {
                    inFlight[worker] = (next.segment, next.range.lowerBound, next.range.upperBound)
                    requestedBytes += Int64(next.range.count)
                    // The parts of this request some earlier request already covered.
                    var cursor = next.range.lowerBound
                    for fresh in requested.gaps(in: next.range) + [next.range.upperBound..<next.range.upperBound] {
                        let again = cursor..<fresh.lowerBound
                        if !again.isEmpty {
                            overlapBytes += Int64(again.count)
                            #expect(released.contains(again),
                                    "workload \(workload): \(again) requested twice without being released (\(seed))")
                        }
                        cursor = fresh.upperBound
                    }
                    requested.insert(next.range)
                }
            }
            let context = "workload \(workload), total \(total), \(workers) workers (\(seed))"
            #expect(planner.isComplete, "\(context)")
            #expect(planner.written.ranges == [0..<total], "\(context)")
            #expect(requestedBytes == total + lostBytes, "only lost bytes are requested again: \(context)")
            #expect(overlapBytes == lostBytes, "every released byte is requested once more, no other byte is: \(context)")
        }
    }

    @Test func aHorizonHandsOutNothingPastItUntilItMoves() {
        var planner = SegmentPlanner(total: 10 << 20, minimumSegment: 1 << 20, horizon: 3 << 20, requestChunk: 1 << 20)
        planner.splitForStart(connections: 3)
        var handedOut: [Range<Int64>] = []
        for worker in 0..<5 {
            if let work = planner.nextRequest(for: worker) { handedOut.append(work.range) }
        }
        #expect(handedOut.allSatisfy { $0.upperBound <= 3 << 20 }, "\(handedOut)")
        #expect(handedOut.reduce(0) { $0 + $1.count } == 3 << 20)
        let beyond = planner.nextRequest(for: 9)
        #expect(beyond == nil, "nothing past the horizon")
        let moved = planner.advanceHorizon(to: 4 << 20)
        let again = planner.advanceHorizon(to: 4 << 20)
        #expect(moved && !again, "it only grows")
        let next = planner.nextRequest(for: 9)
        #expect(next?.range == (3 << 20)..<(4 << 20))
        let toEnd = planner.advanceHorizon(to: 100 << 20)
        #expect(toEnd && planner.horizon == 10 << 20)
    }
}
