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
}
