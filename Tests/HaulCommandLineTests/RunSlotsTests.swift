import HaulCommandLine
import Testing

/// ``RunSlots``: `-j` transfers and a bounded number of finishing downloads at once; the run is over only when
/// the list is exhausted and every reserved download's end was taken.
struct RunSlotsTests {
    /// A list of `count` items handed out in order.
    final class List: @unchecked Sendable {
        var next = 0
        let count: Int
        init(_ count: Int) { self.count = count }
        func take() -> Int? {
            guard next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }

    @Test func transfersAreBoundedByJobsAndFinishingOnesByTheirLimit() {
        let slots = RunSlots(jobs: 2, finishingLimit: 2)
        let list = List(10)
        #expect(slots.reserve(list.take) == 0)
        #expect(slots.reserve(list.take) == 1)
        #expect(slots.reserve(list.take) == nil, "both transfer slots taken")
        #expect(list.next == 2, "the list is not asked without a free slot")
        slots.transferEnded()
        #expect(slots.reserve(list.take) == 2, "a download whose bytes are in frees its transfer slot")
        slots.transferEnded()
        #expect(slots.reserve(list.take) == nil, "both finishing slots are taken: nothing starts")
        slots.release(transferring: false)
        #expect(slots.reserve(list.take) == 3)
        #expect(!slots.isIdle && !slots.isDone)
    }

    @Test func theRunIsDoneOnlyWhenExhaustedAndEveryEndWasTaken() {
        let slots = RunSlots(jobs: 4, finishingLimit: 4)
        let list = List(2)
        #expect(slots.reserve(list.take) == 0)
        #expect(slots.reserve(list.take) == 1)
        #expect(slots.reserve(list.take) == nil)
        #expect(!slots.isIdle, "exhausted, but two transfer")
        slots.release(transferring: true)
        slots.reported()
        slots.release(transferring: true)
        #expect(slots.isIdle, "nothing transfers, nothing will start")
        #expect(!slots.isDone, "one end not taken yet")
        slots.reported()
        #expect(slots.isDone)
    }

    @Test func aStopEndsTheListForGood() {
        let slots = RunSlots(jobs: 1, finishingLimit: 1)
        let list = List(5)
        #expect(slots.reserve(stopping: true, list.take) == nil)
        #expect(list.next == 0, "nothing taken from the list")
        #expect(slots.reserve(list.take) == nil, "and nothing starts after the stop")
        #expect(slots.isIdle && slots.isDone)
    }

    /// Reserved and ended from several threads at once: every item is handed out once, and the run ends
    /// done with nothing transferring.
    @Test func concurrentReservesHandOutEachItemOnce() async {
        let slots = RunSlots(jobs: 3, finishingLimit: 2)
        let list = List(2_000)
        let taken = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<4 {
                group.addTask {
                    var mine: [Int] = []
                    while !slots.isIdle {
                        guard let item = slots.reserve(list.take) else { await Task.yield(); continue }
                        mine.append(item)
                        if item % 2 == 0 {
                            slots.release(transferring: true)
                        } else {
                            slots.transferEnded()
                            slots.release(transferring: false)
                        }
                        slots.reported()
                    }
                    return mine
                }
            }
            var all: [Int] = []
            for await mine in group { all += mine }
            return all
        }
        #expect(taken.sorted() == Array(0..<2_000))
        #expect(slots.isDone)
    }

    /// The finishing limit grows with the descriptors the process may open (half of what the transfers and the
    /// reserve leave), between 16 and ``RunSlots/maximumFinishing``; unknown, it stays 8 per job.
    @Test func theFinishingLimitIsHalfTheFreeDescriptorsBetweenSixteenAndTheMaximum() {
        // 1,024 descriptors, -j 16, 16 connections: 1,024 - 64 - 32 - 32 = 896 free, half of them.
        #expect(RunSlots.finishingLimit(jobs: 16, maximumConnections: 16, openFileLimit: 1024) == 448)
        #expect(RunSlots.finishingLimit(jobs: 16, maximumConnections: 16, openFileLimit: 20_000) == RunSlots.maximumFinishing)
        #expect(RunSlots.finishingLimit(jobs: 16, maximumConnections: 16, openFileLimit: Int.max) == RunSlots.maximumFinishing)
        #expect(RunSlots.finishingLimit(jobs: 16, maximumConnections: 16, openFileLimit: 256) == 64)
        #expect(RunSlots.finishingLimit(jobs: 16, maximumConnections: 16, openFileLimit: 100) == 16, "never below 16")
        #expect(RunSlots.finishingLimit(jobs: 64, maximumConnections: 256, openFileLimit: 512) == 16, "nothing free")
        #expect(RunSlots.finishingLimit(jobs: 16, maximumConnections: 16, openFileLimit: nil) == 128)
        #expect(RunSlots.finishingLimit(jobs: 1, maximumConnections: 16, openFileLimit: nil) == 16)
        #expect(RunSlots.finishingLimit(jobs: 64, maximumConnections: 64, openFileLimit: nil) == 256)
    }
}

/// ``QuietEnd``: only a successful, ordinary download's end in a run that shows nothing per download is taken
/// without a wake-up; any failure, a Metalink document or a stop wakes the run loop.
struct QuietEndTests {
    @Test func onlyAnOrdinarySuccessInASilentRunIsQuiet() {
        #expect(QuietEnd.isQuiet(runShowsNothing: true, succeeded: true, isMetalinkDocument: false, stopping: false))
        for (silent, succeeded, metalink, stopping) in [(false, true, false, false), (true, false, false, false),
                                                        (true, true, true, false), (true, true, false, true)] {
            #expect(!QuietEnd.isQuiet(runShowsNothing: silent, succeeded: succeeded,
                                      isMetalinkDocument: metalink, stopping: stopping),
                    "shows nothing \(silent), succeeded \(succeeded), Metalink \(metalink), stopping \(stopping)")
        }
    }
}
