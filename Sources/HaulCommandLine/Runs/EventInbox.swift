import Synchronization

/// Events posted from any thread, taken by one consumer task in batches: everything posted since its last
/// take, in the order posted, with one wake-up for the batch.
///
/// The list runner hears of thousands of downloads' ends this way instead of through a child task each
/// (a task group's child that awaits the end, then wakes the group): when ends arrive while the runner is
/// busy, the next ``take()`` returns them all without suspending, and a burst costs one thread hop, not two
/// per download.
public final class EventInbox<Event: Sendable>: Sendable {
    // Inlinable, so that the runner's calls are specialized for its event type: unspecialized, the generic
    // code's metadata look-ups and value witnesses cost more per post than the rest of it.
    @usableFromInline struct State {
        @usableFromInline var pending: [Event] = []
        /// The consumer, while it waits for the first event of a batch.
        @usableFromInline var waiter: CheckedContinuation<[Event], Never>?
        @usableFromInline init() {}
    }

    @usableFromInline let state = Mutex(State())
    /// The most events ``post(_:wake:)`` leaves for a waiting consumer without waking it.
    public let quietLimit: Int
    /// ``quietLimit`` unless the initializer is told otherwise.
    public static var defaultQuietLimit: Int { 64 }

    /// `quietLimit`: how many events posted with `wake: false` may wait before one wakes the consumer anyway.
    public init(quietLimit: Int = defaultQuietLimit) {
        self.quietLimit = max(1, quietLimit)
    }

    /// Adds `event`; wakes the consumer when it waits, unless `wake` is false and fewer than ``quietLimit``
    /// events wait: an event that needs no prompt answer (a download that ended with nothing to show) is
    /// then taken with the next one that does, and a run of many small files costs a thread hop per batch,
    /// not per file. Quick and non-blocking: safe on an event loop.
    @inlinable public func post(_ event: Event, wake: Bool = true) {
        var batch: [Event] = []
        let waiter: CheckedContinuation<[Event], Never>? = state.withLock { state in
            state.pending.append(event)
            guard let waiter = state.waiter, wake || state.pending.count >= quietLimit else { return nil }
            state.waiter = nil
            swap(&batch, &state.pending)
            return waiter
        }
        if let waiter { Self.hand(&batch, to: waiter) }
    }

    /// Resumes `waiter` with `batch`, leaving none of it here: the consumer may be done with the batch
    /// before this returns, and a reference kept until then would make the poster (the event loop,
    /// mostly) the one that frees its events, and all that their downloads held.
    @inlinable static func hand(_ batch: inout [Event], to waiter: CheckedContinuation<[Event], Never>) {
        var handed: [Event] = []
        swap(&handed, &batch)
        waiter.resume(returning: consume handed)
    }

    /// Every event posted since the last take, oldest first; waits for one when there is none. One consumer
    /// at a time.
    @inlinable public func take() async -> [Event] {
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

    /// Wakes the consumer when it waits and events are pending (posted with `wake: false`): for a poster
    /// that learns only after posting that the consumer must answer now (the run's last download ended).
    @inlinable public func flush() {
        var batch: [Event] = []
        let waiter: CheckedContinuation<[Event], Never>? = state.withLock { state in
            guard !state.pending.isEmpty, let waiter = state.waiter else { return nil }
            state.waiter = nil
            swap(&batch, &state.pending)
            return waiter
        }
        if let waiter { Self.hand(&batch, to: waiter) }
    }

    /// Whether the consumer is suspended in ``take()``, waiting for a wake-up (for tests).
    public var consumerWaits: Bool {
        state.withLock { $0.waiter != nil }
    }

    @usableFromInline func takePending() -> [Event]? {
        state.withLock { state in
            guard !state.pending.isEmpty else { return nil }
            defer { state.pending = [] }
            return state.pending
        }
    }
}
