import Synchronization

/// The list runner's slots, shared by the runner and the threads that end downloads: `jobs` downloads
/// transfer at once, and up to `finishingLimit` more wait for their durable commit. A thread that frees a
/// slot (the event loop, mostly) reserves the next download itself, so that starting it costs no hop to the
/// runner and back; the runner only reports.
///
/// A reserved download stays *open* until the runner has taken its end (``reported()``): the run is over
/// (``isDone``) when the list is exhausted and nothing is open, so no end can be missed however the threads
/// interleave.
public final class RunSlots: Sendable {
    // Inlinable, so that `reserve` is specialized for the runner's item: unspecialized, its generic
    // Optional and tuple handling cost more per download than the rest of it.
    @usableFromInline struct State {
        @usableFromInline var transferring = 0
        @usableFromInline var finishing = 0
        @usableFromInline var open = 0
        @usableFromInline var exhausted = false
    }

    public let jobs: Int
    public let finishingLimit: Int
    @usableFromInline let state = Mutex(State())

    public init(jobs: Int, finishingLimit: Int) {
        self.jobs = max(1, jobs)
        self.finishingLimit = max(1, finishingLimit)
    }

    /// The next item from `next` when a transfer slot is free (and the finishing ones are not all taken),
    /// counted as transferring and open; nil when no slot is free, or when `stopping` or `next` says the list
    /// is over (then for good). `next` is called under the slots' lock: one caller at a time.
    @inlinable public func reserve<Item>(stopping: Bool = false, _ next: () -> Item?) -> Item? {
        state.withLock { state in
            guard !state.exhausted, state.transferring < jobs, state.finishing < finishingLimit else { return nil }
            guard !stopping, let item = next() else {
                state.exhausted = true
                return nil
            }
            state.transferring += 1
            state.open += 1
            return item
        }
    }

    /// A reserved download's bytes are all in: its transfer slot is free, and it holds a finishing one.
    public func transferEnded() {
        state.withLock { state in
            state.transferring -= 1
            state.finishing += 1
        }
    }

    /// A reserved download ended (`transferring`: its transfer had not been released by ``transferEnded()``;
    /// also for one that was not started, since its file is already complete).
    public func release(transferring: Bool) {
        state.withLock { state in
            if transferring { state.transferring -= 1 } else { state.finishing -= 1 }
        }
    }

    /// The runner has taken a reserved download's end.
    public func reported() {
        state.withLock { $0.open -= 1 }
    }

    /// No download transfers or finishes, and none will start: the runner must be woken to end the run.
    public var isIdle: Bool {
        state.withLock { $0.exhausted && $0.transferring == 0 && $0.finishing == 0 }
    }

    /// The list is exhausted and every reserved download's end was taken.
    public var isDone: Bool {
        state.withLock { $0.exhausted && $0.open == 0 }
    }
}
