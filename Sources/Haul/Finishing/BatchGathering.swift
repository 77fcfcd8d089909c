import HaulIO

/// When the next batch of a ``GroupCommit`` starts while files keep arriving. Pure.
///
/// Without it a batch held what arrived while the batch before it was on the disk: a flush of a few small
/// files takes about 0.2 ms on this project's disk, so a run of 10,000 small files went in batches of about
/// three, each paying its own `syncfs` (or, alone, `fdatasync`) and directory sync — about 5,000 flushes where
/// a few hundred do (docs/benchmarks.md, "Durable batches gathered"). So while batches follow each other (one
/// has just been committed and files are queued) the next one waits for company: it starts once it holds
/// ``enoughFiles`` files, or ``longestWait`` after its first file was queued, whichever comes first. A file
/// thus waits at most ``longestWait`` before its batch starts. The first batch after a quiet spell (nothing
/// on the disk, nothing queued) starts at once, as before: a lone download's end waits for nothing but its
/// own flush.
struct BatchGathering: Equatable, Sendable {
    /// A batch holding this many files starts at once.
    var enoughFiles: Int
    /// The longest the first file of a batch waits for others before the batch starts.
    var longestWait: Duration

    /// 64 files or 5 ms (the most a file's batch start may be held). Measured on this project's 2-core VM
    /// (10,000 × 4 KiB durable, `-j 16`, two lanes, docs/benchmarks.md "Durable batches gathered"): the files
    /// reach each lane's commit at 4–8 per millisecond, so without the wait a batch held what arrived during a
    /// flush of well under a millisecond; with 2 ms the flushes (`syncfs`, `fdatasync`, directory `fsync`)
    /// fell by about a quarter, with 5 ms to a fifth or less. Larger bounds were measured too (docs/benchmarks.md,
    /// "Durable small files against a durable peer"): 256 files / 20 ms and 1,024 / 50 ms cut the `syncfs` calls
    /// a further 2–4× but neither the wall time nor the CPU of a run measurably (same-round medians 0.92× and
    /// 0.93× of this rule's wall time over 10 rounds, each spread 0.6–1.7×; the run is bound by CPU, not by
    /// its flushes), while a final name would appear up to 20 or 50 ms after its file is complete.
    static let standard = BatchGathering(enoughFiles: 64, longestWait: .milliseconds(5))
    /// Every batch starts as soon as the one before it is done (the behaviour before the rule; for tests).
    static let immediate = BatchGathering(enoughFiles: 1, longestWait: .zero)

    /// What the commit does with the files queued.
    enum Decision: Equatable, Sendable {
        /// Start the batch now, with every file queued.
        case start
        /// Wait for more files until this instant (or until ``BatchGathering/enoughFiles`` are queued), then ask again.
        case wait(until: MonotonicInstant)
    }

    /// The decision at `now` for `queued` files waiting, the first of them queued at `firstQueuedAt`, when
    /// `mayStillCome` downloads could still hand in a file (those of the client that have begun and are neither
    /// in the commit nor ended; nil: unknown). Nothing queued: `.start` (there is nothing to wait for; the
    /// commit then ends its run of batches). Nobody left to come: `.start` — a caller running 16 downloads at a
    /// time and waiting for each to end (a `TaskGroup`) has all 16 in the commit, and would otherwise wait
    /// the whole ``longestWait`` for company that cannot come.
    ///
    /// `sharesFlush` false: the batch's files would be flushed one by one anyway (an `fdatasync` each: an old
    /// kernel, or much dirty data of others on the machine, ``FlushPlan``) — then waiting saves no flush and
    /// only holds the syncs back, so the batch starts at once.
    func next(queued: Int, firstQueuedAt: MonotonicInstant, now: MonotonicInstant, mayStillCome: Int? = nil, sharesFlush: Bool = true) -> Decision {
        guard queued > 0, queued < enoughFiles, sharesFlush, mayStillCome.map({ $0 > 0 }) ?? true else { return .start }
        let deadline = firstQueuedAt.advanced(by: longestWait)
        return now < deadline ? .wait(until: deadline) : .start
    }

    /// Whether the commit waits for a next file before it syncs the directories of a batch whose renames
    /// await their proof (``RenameProof``) with nothing queued after it: `.wait` until ``longestWait`` after
    /// `since` (when it began waiting), while none is queued, some download may still hand one in
    /// (`mayStillCome`, nil: unknown, counted as none) and the next batch would share a `syncfs` (`sharesFlush`);
    /// `.start`: go on now (with the files queued, or with the directories' own syncs when none is).
    ///
    /// Without it a run of batches ended whenever the queue was empty for a moment: the renames then got a
    /// directory `fsync` of their own (a second flush of the disk), and the next file began a new run whose first
    /// batch gathers nobody. Waiting, the next batch's `syncfs` proves those renames too (with
    /// ``RenameProof/standIn(fileSystem:groupFirstOpened:openedBeforeRenames:awaiting:)``), and that batch
    /// gathers as a following one: 10,000 files of 4 KiB went with a median of 32 directory `fsync`s and 251
    /// `syncfs` instead of 141 and 344 (docs/benchmarks.md, "Durable small files: the directory syncs"). The
    /// renamed files' reports (not their names, there already) come later by up to ``longestWait`` and the
    /// next batch's gathering.
    func awaitsNextFile(queued: Int, since: MonotonicInstant, now: MonotonicInstant, mayStillCome: Int?, sharesFlush: Bool) -> Decision {
        guard queued == 0, sharesFlush, let mayStillCome, mayStillCome > 0 else { return .start }
        let deadline = since.advanced(by: longestWait)
        return now < deadline ? .wait(until: deadline) : .start
    }
}
