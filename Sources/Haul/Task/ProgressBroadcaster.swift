import HaulIO
import Synchronization

/// The latest progress of something that runs until it ends, handed to any number of readers: a snapshot
/// to read at any time, a stream per subscriber, and waiters for the outcome.
///
/// The one implementation behind ``DownloadTask`` and HaulSessions' `SessionTask`, so that both deliver
/// progress the same way:
/// - each ``stream`` starts with the latest snapshot and keeps only the newest one unread
///   (`bufferingNewest(1)`): a slow consumer never slows the producer and never holds a backlog;
/// - every stream finishes, with the final snapshot, when ``end(_:final:)`` is called, and a stream asked
///   for afterwards delivers that final snapshot and finishes;
/// - ``outcome()`` waits for the end and returns at once after it.
///
/// Publishing is meant to come from one place at a time (the download's event loop, the session's lock):
/// snapshots are delivered in the order ``publish(_:)`` is called, so concurrent publishers would need to
/// order themselves. Continuations are resumed and streams finished outside the lock, because a finishing
/// stream runs its termination handler, which takes the lock again.
package final class ProgressBroadcaster<Progress: Sendable, Outcome: Sendable>: Sendable {
    private struct State {
        var latest: Progress
        var outcome: Outcome?
        /// Who waits for the outcome: awaiting tasks' continuations and ``whenEnded(_:)``'s callbacks alike.
        var waiters: [@Sendable (Outcome) -> Void] = []
        var subscribers: [Int: AsyncStream<Progress>.Continuation] = [:]
        var nextSubscriber = 0
    }

    private let state: Mutex<State>

    /// A broadcaster whose first snapshot is `initial`; one created with an `outcome` has already ended.
    package init(_ initial: Progress, outcome: Outcome? = nil) {
        state = Mutex(State(latest: initial, outcome: outcome))
    }

    /// The latest snapshot.
    package var latest: Progress { state.withLock { $0.latest } }

    /// The outcome, once ended.
    package var outcome: Outcome? { state.withLock { $0.outcome } }

    /// How many streams are subscribed (for tests).
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Snapshots from now until the end; each call is its own subscription.
    package var stream: AsyncStream<Progress> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let id: Int? = state.withLock { state in
                continuation.yield(state.latest)
                guard state.outcome == nil else { return nil }
                let id = state.nextSubscriber
                state.nextSubscriber += 1
                state.subscribers[id] = continuation
                return id
            }
            guard let id else { return continuation.finish() }
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        }
    }

    /// Makes `progress` the latest snapshot and delivers it to every subscriber (none after the end).
    ///
    /// `progress` is taken, not copied: it is swapped into place under the lock, and the snapshot it replaces
    /// is destroyed after the lock is released. Only subscribers (most downloads have none) get copies.
    package func publish(_ progress: consuming Progress) {
        var progress = progress
        let delivery: (Progress, [AsyncStream<Progress>.Continuation])? = state.withLock { state in
            swap(&state.latest, &progress)
            return state.subscribers.isEmpty ? nil : (state.latest, Array(state.subscribers.values))
        }
        guard let delivery else { return }
        for subscriber in delivery.1 { subscriber.yield(delivery.0) }
    }

    /// Changes the latest snapshot in place and publishes the result. `change` runs under the lock (it must
    /// be quick and must not call back into the broadcaster): the snapshot is changed where it lies, not
    /// copied out and back.
    package func update(_ change: (inout Progress) -> Void) {
        let delivery: (Progress, [AsyncStream<Progress>.Continuation])? = state.withLock { state in
            change(&state.latest)
            return state.subscribers.isEmpty ? nil : (state.latest, Array(state.subscribers.values))
        }
        guard let delivery else { return }
        for subscriber in delivery.1 { subscriber.yield(delivery.0) }
    }

    /// Ends: `final` becomes the latest snapshot, every subscriber gets it and finishes, every waiter gets
    /// `outcome`. Returns false (and changes nothing) when it had ended already.
    @discardableResult
    package func end(_ outcome: Outcome, final: consuming Progress) -> Bool {
        var final = Optional(final)
        return end(outcome) { latest in latest = final.take()! }
    }

    /// Ends as ``end(_:final:)`` does, the final snapshot made by changing the latest one in place
    /// (`change` runs under the lock, only when it had not ended already; the same rules as ``update(_:)``).
    @discardableResult
    package func end(_ outcome: Outcome, changingLatest change: (inout Progress) -> Void) -> Bool {
        let ended: (final: Progress?, waiters: [@Sendable (Outcome) -> Void], subscribers: [AsyncStream<Progress>.Continuation])? =
            state.withLock { state in
                guard state.outcome == nil else { return nil }
                change(&state.latest)
                state.outcome = outcome
                defer { state.waiters = []; state.subscribers = [:] }
                return (state.subscribers.isEmpty ? nil : state.latest, state.waiters, Array(state.subscribers.values))
            }
        guard let ended else { return false }
        if let final = ended.final {
            for subscriber in ended.subscribers {
                subscriber.yield(final)
                subscriber.finish()
            }
        }
        for waiter in ended.waiters { waiter(outcome) }
        return true
    }

    /// Calls `body` with the outcome once ended: at once, on this thread, when it has ended already, else on
    /// the thread that calls ``end(_:final:)``. For a caller that follows many of them without a Swift task
    /// (and a thread hop) each; `body` must be quick and must not block.
    package func whenEnded(_ body: @escaping @Sendable (Outcome) -> Void) {
        let done: Outcome? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.waiters.append(body)
            return nil
        }
        if let done { body(done) }
    }

    /// Waits for the end (returns at once after it).
    ///
    /// An unchecked continuation: ``whenEnded(_:)`` calls its body exactly once (at once, or from the one
    /// ``end(_:final:)`` that takes the waiters), and every `HaulClient.download` waits here, so the
    /// checked kind's extra allocation and its bookkeeping are spent per download for nothing.
    package func outcome() async -> Outcome {
        await withUnsafeContinuation { continuation in
            whenEnded { continuation.resume(returning: $0) }
        }
    }
}
