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

    /// How many downloads may wait for their durable commit at once (each holds its file open until then):
    /// half of the open descriptors `openFileLimit` leaves after ``reservedDescriptors`` and two per job and
    /// per connection (a transferring file and its journal, a socket busy and one idle), at least 16 and at
    /// most ``maximumFinishing``; with the limit unknown, 8 per job (16 to 256).
    ///
    /// The group commit takes every file that finished while its previous batch was on the disk, so this
    /// bounds its batches. It was 8 per job (128 at `-j 16`): with a batch on the disk a list of small files
    /// then filled the finishing slots within a few milliseconds and the transfers stopped until the batch
    /// was reported (for 0.53 s of a 3.6 s run of 10,000 × 4 KiB, docs/benchmarks.md); and a `syncfs` costs
    /// about as much for 512 files as for 128 (5,000 files made durable 128 at a time took 0.80 s, 512 at a
    /// time 0.46 s).
    public static func finishingLimit(jobs: Int, maximumConnections: Int, openFileLimit: Int?) -> Int {
        guard let openFileLimit else { return min(256, max(16, jobs * 8)) }
        let inUse = reservedDescriptors + 2 * max(1, jobs) + 2 * max(1, maximumConnections)
        let free = openFileLimit > inUse ? openFileLimit - inUse : 0
        return min(maximumFinishing, max(16, free / 2))
    }

    /// Descriptors kept for what is neither a download's file nor a connection (64): the loop's epoll and
    /// eventfd, standard streams, the input list, directories being synced, DNS, the session log.
    public static let reservedDescriptors = 64

    /// The most downloads that wait for their commit at once (1,024): a batch of about 512 small files made
    /// durable with one `syncfs` cost no less per file than one of 2,048 (docs/benchmarks.md), and each
    /// waiting download holds its file and a few KiB.
    public static let maximumFinishing = 1024

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
