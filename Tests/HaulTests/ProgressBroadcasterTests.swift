import Testing
import HaulIO
import HaulJournal
@testable import Haul

struct ProgressBroadcasterTests {
    @Test func aStreamStartsWithTheLatestAndEndsWithTheFinalSnapshot() async {
        let broadcaster = ProgressBroadcaster<Int, String>(0)
        broadcaster.publish(1)
        var iterator = broadcaster.stream.makeAsyncIterator()
        #expect(await iterator.next() == 1, "a new subscriber gets the latest snapshot first")
        broadcaster.publish(2)
        broadcaster.publish(3)
        #expect(await iterator.next() == 3, "an unread snapshot is replaced by a newer one")
        #expect(broadcaster.end("done", final: 4))
        #expect(await iterator.next() == 4)
        #expect(await iterator.next() == nil, "the stream finishes at the end")
        #expect(broadcaster.latest == 4)
    }

    @Test func theFirstEndWinsAndLaterSubscribersGetTheFinalSnapshotOnly() async {
        let broadcaster = ProgressBroadcaster<Int, String>(0)
        #expect(broadcaster.end("first", final: 7))
        #expect(!broadcaster.end("second", final: 8))
        #expect(broadcaster.outcome == "first" && broadcaster.latest == 7)
        var snapshots: [Int] = []
        for await snapshot in broadcaster.stream { snapshots.append(snapshot) }
        #expect(snapshots == [7])
        #expect(await broadcaster.outcome() == "first")
    }

    @Test func waitersGetTheOutcome() async {
        let broadcaster = ProgressBroadcaster<Int, String>(0)
        async let outcome = broadcaster.outcome()
        // The waiter may or may not be registered yet when the end comes: either way it gets the outcome.
        broadcaster.end("done", final: 1)
        #expect(await outcome == "done")
    }

    @Test func aCancelledSubscriberIsForgotten() async throws {
        let broadcaster = ProgressBroadcaster<Int, String>(0)
        let consumer = Task {
            for await _ in broadcaster.stream {}
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while broadcaster.subscriberCount == 0, ContinuousClock.now < deadline { await Task.yield() }
        #expect(broadcaster.subscriberCount == 1)
        consumer.cancel()
        await consumer.value
        #expect(broadcaster.subscriberCount == 0, "a cancelled subscriber is removed, not published to until the end")
        broadcaster.publish(1)
        #expect(broadcaster.end("done", final: 2))
    }

    /// `update` changes the latest snapshot where it lies and delivers the result; `end(_:changingLatest:)`
    /// changes it only when it is the end that wins.
    @Test func anUpdateAndAnEndChangeTheLatestInPlace() async {
        let broadcaster = ProgressBroadcaster<[Int], String>([0])
        var iterator = broadcaster.stream.makeAsyncIterator()
        #expect(await iterator.next() == [0])
        broadcaster.update { $0.append(1) }
        #expect(broadcaster.latest == [0, 1])
        #expect(await iterator.next() == [0, 1], "a subscriber gets the changed snapshot")
        #expect(broadcaster.end("done") { $0.append(2) })
        #expect(await iterator.next() == [0, 1, 2])
        #expect(await iterator.next() == nil)
        #expect(!broadcaster.end("again") { $0.append(3) })
        #expect(broadcaster.latest == [0, 1, 2] && broadcaster.outcome == "done", "a second end changes nothing")
    }

    /// A published snapshot is taken, not shared: the caller's later changes to its own copy are not seen.
    @Test func aPublishedSnapshotIsTheValuePublished() {
        let broadcaster = ProgressBroadcaster<[Int], String>([])
        var snapshot = [1, 2]
        broadcaster.publish(snapshot)
        snapshot.append(3)
        #expect(broadcaster.latest == [1, 2] && snapshot == [1, 2, 3])
    }

    /// The meter overwrites every field of the latest snapshot: nothing of the one before (a notice, a
    /// checkpoint failure, a path, the connections) survives into the next.
    @Test func theMeterSetsEveryFieldInPlace() {
        var meter = ProgressMeter(runStarted: MonotonicInstant(nanoseconds: 1_000_000_000))
        var progress = DownloadProgress(phase: .paused, bytesDone: 99, total: 999, bytesPerSecond: 5, estimatedTimeRemaining: .seconds(9),
                                        activeConnections: 7, completedRanges: [0..<99], segments: [.init(start: 0, next: 99, end: 999, isActive: true)],
                                        elapsed: .seconds(9), partialPath: "/old.part")
        progress.notices = ["old"]
        progress.canResume = false
        progress.checkpointFailure = .headerChecksumMismatch(stored: 1, computed: 2)
        let snapshot = SegmentedDownload.Snapshot(bytesDone: 10, total: nil, activeConnections: 2, completedRanges: [0..<10], segments: [],
                                                  checkpointFailure: nil, partialPath: "/new.part", notices: [])
        meter.update(&progress, from: snapshot, phase: .connecting, at: MonotonicInstant(nanoseconds: 3_000_000_000))
        var expected = DownloadProgress(phase: .connecting, bytesDone: 10, total: nil, bytesPerSecond: 0, estimatedTimeRemaining: nil,
                                        activeConnections: 0, completedRanges: [0..<10], segments: [], elapsed: .seconds(2),
                                        partialPath: "/new.part")
        expected.canResume = true
        #expect(progress == expected, "\(progress)")
    }

    @Test func timeRemainingNeedsATotalAndARate() {
        #expect(DownloadProgress.estimatedTimeRemaining(done: 0, total: nil, bytesPerSecond: 10) == nil)
        #expect(DownloadProgress.estimatedTimeRemaining(done: 0, total: 100, bytesPerSecond: 0) == nil)
        #expect(DownloadProgress.estimatedTimeRemaining(done: 50, total: 150, bytesPerSecond: 50) == .seconds(2))
        #expect(DownloadProgress.estimatedTimeRemaining(done: 200, total: 150, bytesPerSecond: 50) == .zero, "never negative")
    }
}
