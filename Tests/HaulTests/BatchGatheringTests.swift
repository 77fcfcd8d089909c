import HaulHTTP
import HaulIO
import Testing
@testable import Haul

/// The rule for when a batch that follows another starts: at once with enough files, else once its first file
/// has waited the longest wait; never later.
@Suite struct BatchGatheringTests {
    let rule = BatchGathering(enoughFiles: 4, longestWait: .milliseconds(2))
    let queuedAt = MonotonicInstant(nanoseconds: 1_000_000_000)

    @Test func fewFilesWaitUntilTheFirstHasWaitedTheLongestWait() {
        let deadline = queuedAt.advanced(by: .milliseconds(2))
        #expect(rule.next(queued: 1, firstQueuedAt: queuedAt, now: queuedAt) == .wait(until: deadline))
        #expect(rule.next(queued: 3, firstQueuedAt: queuedAt, now: queuedAt.advanced(by: .microseconds(1_999))) == .wait(until: deadline),
                "the deadline counts from the first file, not the latest")
        #expect(rule.next(queued: 1, firstQueuedAt: queuedAt, now: deadline) == .start)
        #expect(rule.next(queued: 3, firstQueuedAt: queuedAt, now: deadline.advanced(by: .seconds(5))) == .start)
    }

    @Test func enoughFilesStartAtOnce() {
        #expect(rule.next(queued: 4, firstQueuedAt: queuedAt, now: queuedAt) == .start)
        #expect(rule.next(queued: 1_000, firstQueuedAt: queuedAt, now: queuedAt) == .start)
    }

    /// A caller whose every running download is already in the commit (a `TaskGroup` of 16 waiting for each
    /// to end) has nobody left to wait for: the batch starts at once; one download still running is worth the wait.
    @Test func nobodyLeftToComeStartsAtOnce() {
        #expect(rule.next(queued: 2, firstQueuedAt: queuedAt, now: queuedAt, mayStillCome: 0) == .start)
        #expect(rule.next(queued: 2, firstQueuedAt: queuedAt, now: queuedAt, mayStillCome: 1) == .wait(until: queuedAt.advanced(by: .milliseconds(2))))
        #expect(rule.next(queued: 2, firstQueuedAt: queuedAt, now: queuedAt, mayStillCome: nil) == .wait(until: queuedAt.advanced(by: .milliseconds(2))),
                "unknown: the wait is bounded anyway")
    }

    /// Files that would be flushed one by one anyway (an `fdatasync` each: much dirty data of others, an old
    /// kernel) save nothing by waiting: the batch starts at once.
    @Test func aBatchThatWouldNotShareAFlushDoesNotWait() {
        #expect(rule.next(queued: 2, firstQueuedAt: queuedAt, now: queuedAt, mayStillCome: 5, sharesFlush: false) == .start)
        #expect(rule.next(queued: 2, firstQueuedAt: queuedAt, now: queuedAt, mayStillCome: 5, sharesFlush: true) != .start)
    }

    @Test func nothingQueuedHasNothingToWaitFor() {
        #expect(rule.next(queued: 0, firstQueuedAt: queuedAt, now: queuedAt) == .start)
    }

    /// Whatever the files and the clock, a wait never ends later than the first file's time plus the longest
    /// wait (the bound a download's end may be held beyond its flush). Seeded; the seed is printed.
    @Test func noWaitOutlastsTheLongestWait() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("BatchGatheringTests seed \(seed)")
        var generator = SplitMixGenerator(seed: seed)
        for _ in 0..<10_000 {
            let rule = BatchGathering(enoughFiles: Int.random(in: 1...256, using: &generator),
                                      longestWait: .microseconds(Int64.random(in: 0...10_000, using: &generator)))
            let first = MonotonicInstant(nanoseconds: UInt64.random(in: 0...(1 << 50), using: &generator))
            let now = first.advanced(by: .microseconds(Int64.random(in: 0...20_000, using: &generator)))
            let queued = Int.random(in: 0...300, using: &generator)
            switch rule.next(queued: queued, firstQueuedAt: first, now: now) {
            case .start:
                #expect(queued == 0 || queued >= rule.enoughFiles || now >= first.advanced(by: rule.longestWait), "seed \(seed)")
            case .wait(let until):
                #expect(until == first.advanced(by: rule.longestWait) && now < until && queued < rule.enoughFiles, "seed \(seed)")
            }
        }
    }

    /// After a batch whose renames await their proof, with nothing queued: wait for a next file up to the
    /// longest wait from when the waiting began, only while someone may still hand one in (unknown counts as
    /// nobody) and its batch would share a `syncfs`; a file queued ends the wait.
    @Test func renamesAwaitingProofWaitForANextFileOnlyWhileOneMayComeAndShareAFlush() {
        let deadline = queuedAt.advanced(by: .milliseconds(2))
        #expect(rule.awaitsNextFile(queued: 0, since: queuedAt, now: queuedAt, mayStillCome: 3, sharesFlush: true) == .wait(until: deadline))
        #expect(rule.awaitsNextFile(queued: 0, since: queuedAt, now: queuedAt.advanced(by: .microseconds(1_999)), mayStillCome: 1,
                                    sharesFlush: true) == .wait(until: deadline))
        #expect(rule.awaitsNextFile(queued: 0, since: queuedAt, now: deadline, mayStillCome: 3, sharesFlush: true) == .start, "the bound")
        #expect(rule.awaitsNextFile(queued: 1, since: queuedAt, now: queuedAt, mayStillCome: 3, sharesFlush: true) == .start, "a file came")
        #expect(rule.awaitsNextFile(queued: 0, since: queuedAt, now: queuedAt, mayStillCome: 0, sharesFlush: true) == .start, "nobody left")
        #expect(rule.awaitsNextFile(queued: 0, since: queuedAt, now: queuedAt, mayStillCome: nil, sharesFlush: true) == .start, "unknown")
        #expect(rule.awaitsNextFile(queued: 0, since: queuedAt, now: queuedAt, mayStillCome: 3, sharesFlush: false) == .start,
                "the next batch would prove nothing: each file its own sync")
        #expect(BatchGathering.immediate.awaitsNextFile(queued: 0, since: queuedAt, now: queuedAt, mayStillCome: 3, sharesFlush: true) == .start)
    }

    @Test func theImmediateRuleNeverWaits() {
        #expect(BatchGathering.immediate.next(queued: 1, firstQueuedAt: queuedAt, now: queuedAt) == .start)
        #expect(BatchGathering.standard.longestWait <= .milliseconds(5), "the brief's bound on an added wait")
    }
}
