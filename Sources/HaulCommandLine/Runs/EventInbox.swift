import Synchronization

/// Events posted from any thread, taken by one consumer task in batches: everything posted since its last
/// take, in the order posted, with one wake-up for the batch.
///
/// The list runner hears of thousands of downloads' ends this way instead of through a child task each
/// (a task group's child that awaits the end, then wakes the group): when ends arrive while the runner is
/// busy, the next ``take()`` returns them all without suspending, and a burst costs one thread hop, not two
/// per download.
public final class EventInbox<Event: Sendable>: Sendable {
    private struct State {
        var pending: [Event] = []
        /// The consumer, while it waits for the first event of a batch.
        var waiter: CheckedContinuation<[Event], Never>?
    }

    private let state = Mutex(State())

    public init() {}

    /// Adds `event`; wakes the consumer when it waits. Quick and non-blocking: safe on an event loop.
    public func post(_ event: Event) {
        let woken: (CheckedContinuation<[Event], Never>, [Event])? = state.withLock { state in
            state.pending.append(event)
            guard let waiter = state.waiter else { return nil }
            state.waiter = nil
            defer { state.pending = [] }
            return (waiter, state.pending)
        }
        if let (waiter, batch) = woken { waiter.resume(returning: batch) }
    }

    /// Every event posted since the last take, oldest first; waits for one when there is none. One consumer
    /// at a time.
    public func take() async -> [Event] {
        // Events waiting already: no suspension at all.
        if let batch = takePending() { return batch }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[Event], Never>) in
            let batch: [Event]? = state.withLock { state in
                guard state.pending.isEmpty else {
                    defer { state.pending = [] }
                    return state.pending
                }
                precondition(state.waiter == nil, "EventInbox has one consumer")
                state.waiter = continuation
                return nil
            }
            if let batch { continuation.resume(returning: batch) }
        }
    }

    private func takePending() -> [Event]? {
        state.withLock { state in
            guard !state.pending.isEmpty else { return nil }
            defer { state.pending = [] }
            return state.pending
        }
    }
}
