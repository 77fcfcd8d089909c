import HaulCommandLine
import Testing

/// The list runner's inbox of download ends: batches in posting order, one consumer woken by the first post.
struct EventInboxTests {
    @Test func eventsPostedBeforeATakeComeInOneBatchInOrder() async {
        let inbox = EventInbox<Int>()
        for event in 0..<5 { inbox.post(event) }
        let batch = await inbox.take()
        #expect(batch == [0, 1, 2, 3, 4])
        inbox.post(5)
        let next = await inbox.take()
        #expect(next == [5], "a take returns only what came after the previous one")
    }

    @Test func aWaitingTakeIsWokenByAPostFromAnotherThread() async {
        let inbox = EventInbox<Int>()
        // Posted from other tasks while the consumer may be suspended: every event arrives once, in each
        // poster's order.
        let posters = 4, perPoster = 250
        await withTaskGroup(of: Void.self) { group in
            for poster in 0..<posters {
                group.addTask { for i in 0..<perPoster { inbox.post(poster * perPoster + i) } }
            }
            var seen: [Int] = []
            while seen.count < posters * perPoster { seen += await inbox.take() }
            #expect(seen.count == posters * perPoster)
            #expect(Set(seen).count == seen.count, "no event twice")
            for poster in 0..<posters {
                let own = seen.filter { $0 / perPoster == poster }
                #expect(own == own.sorted(), "poster \(poster)'s events in the order posted")
            }
        }
    }

    /// Events that need no prompt answer wait for the next one that does, or for a full batch: the consumer
    /// is not woken for each.
    @Test func quietEventsWaitForAWakingOneOrAFullBatch() async throws {
        let inbox = EventInbox<Int>(quietLimit: 3)
        inbox.post(0, wake: false)
        // Events already pending: a take returns them at once, whether they woke anyone or not.
        #expect(await inbox.take() == [0])
        let consumer = Task { await inbox.take() }
        try await Self.waitUntil { inbox.consumerWaits }
        inbox.post(1, wake: false)
        inbox.post(2, wake: false)
        inbox.post(3, wake: true)
        #expect(await consumer.value == [1, 2, 3], "the waking post brings the quiet ones with it")
        let second = Task { await inbox.take() }
        try await Self.waitUntil { inbox.consumerWaits }
        for event in 4..<7 { inbox.post(event, wake: false) }
        #expect(await second.value == [4, 5, 6], "the third quiet event fills the batch and wakes the consumer")
    }

    @Test func aFlushWakesAWaitingConsumerOnlyWhenEventsArePending() async throws {
        let inbox = EventInbox<Int>(quietLimit: 100)
        let consumer = Task { await inbox.take() }
        try await Self.waitUntil { inbox.consumerWaits }
        inbox.flush()
        #expect(inbox.consumerWaits, "nothing pending: still waiting")
        inbox.post(1, wake: false)
        #expect(inbox.consumerWaits, "a quiet post does not wake it")
        inbox.flush()
        #expect(await consumer.value == [1])
    }

    /// Waits until `condition` holds, for at most 60 s (a bound on a hang: a loaded machine can keep the
    /// consumer task from running for seconds).
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "condition not met within 60 s")
            await Task.yield()
        }
    }
}
