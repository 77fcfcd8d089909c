import Glibc
import HaulIO
import HaulJournal
import Synchronization

/// Makes finished downloads durable in batches: one synchronous `fdatasync` plus a directory `fsync` per
/// file made many small downloads wait for the disk once or twice each, one after the other.
///
/// Files handed in while a batch is on the disk wait for the next batch, which takes all of them: under load
/// the batches grow by themselves, and a lone file is committed at once (no timer, no added latency). A batch
/// starts when the turn of the thread that handed in its first file is over (``init(parallelSyncs:operations:start:gather:deliver:)``'s
/// `gather`: the client's event loop runs it after the current batch of events), so the files that finish
/// on one wake-up of the loop go together, and one thread is woken per batch, not per file. The outcomes of a
/// batch are handed back together too (`deliver`: one task on the loop for the whole batch).
/// Each batch, in this order:
/// 1. makes the data of every file durable, as its ``FlushPlan`` says: the small files sharing a filesystem
///    with one `syncfs` of it, the others (large files, a lone file, every file on a kernel older than 5.8)
///    with an `fdatasync` each, in parallel (several threads, so the file system can merge the journal
///    commits those syncs need) and before the `syncfs`;
/// 2. renames each file whose data is durable from its `.part` name to its final name (a file without a name
///    is linked to it instead; ``FinalNaming``) — a final name only ever appears for complete, synced data;
/// 3. syncs each distinct directory of the batch once, so the renames survive a power cut;
/// 4. removes the journals of the files now durable, and reports every file.
///
/// A file whose data sync fails keeps its `.part` file and journal and fails with a disk error; a file whose
/// rename fails likewise. A failed `syncfs` names no file (it reports any write-back error on the
/// filesystem since its descriptor was opened, other programs' included), so each file of that filesystem's
/// group is then synced on its own with `fdatasync`, which reports that file's own write-back error: the
/// files whose sync fails then fail (`.part` and journal kept), the others are proven and go on. When a
/// directory sync fails, the renames into that directory are not proven durable: they are undone (the files
/// go back to their `.part` names, journals kept) and those files fail. Files in other directories, or
/// whose syncs succeeded, are not affected.
///
/// The trade of `syncfs`: it flushes everything dirty on the filesystem, other programs' writes too, so a
/// batch may wait for data that is not Haul's. Files larger than ``FlushPlan/largeFile`` are therefore
/// synced on their own, a batch of one file is too, and so is every file of a batch while the machine holds
/// much dirty data besides the batch's (``FlushPlan/dirtyAllowance(files:)``: 8 MiB, or 64 KiB per file for
/// a batch of more than 128).
///
/// The work runs on ``BlockingWork`` threads, never on the event loop. Thread-safe.
final class GroupCommit: @unchecked Sendable {
    // @unchecked Sendable: `pending` and `committing` are guarded by `lock`; the rest is immutable.

    /// One file waiting for its commit.
    struct Entry: @unchecked Sendable {
        // @unchecked Sendable: `file` is an `OutputFile` (Sendable); the completion is called once, where the
        // commit's `deliver` runs it (the client's loop, or the commit's thread).
        var file: OutputFile
        var partPath: String
        var destination: String
        /// The journal to remove once the file is durable under its final name (nil: none was written).
        var journalPath: String?
        /// Called once with the outcome; a failure is a ``HaulError/disk(path:_:)``, or
        /// ``HaulError/Reason/destinationExists(path:)`` when the name was taken meanwhile (``FinalNaming``).
        var completion: @Sendable (Result<Void, HaulError>) -> Void
        /// The final name may not replace a file that appeared there since the start (``FinalNaming``).
        var finalNameIsNew = false
    }

    /// The system calls a batch makes, replaceable for tests.
    struct Operations: Sendable {
        /// Starts writing a file's data without waiting (best effort: the sync reports any failure).
        var startWriteBack: @Sendable (OutputFile) -> Void = { _ in }
        var syncData: @Sendable (OutputFile) throws(SystemError) -> Void
        var rename: @Sendable (_ from: String, _ to: String) throws(SystemError) -> Void
        /// Syncs the directory itself (its path, not a file in it).
        var syncDirectory: @Sendable (String) throws(SystemError) -> Void
        var removeJournal: @Sendable (String) -> Void
        /// Names a file without a name (``FinalNaming``): `EEXIST` when the name is taken.
        var link: @Sendable (OutputFile, String) throws(SystemError) -> Void = { file, name throws(SystemError) in try file.link(to: name) }
        /// Renames without replacing (``FinalNaming``): `EEXIST` when the name is taken.
        var renameWithoutReplacing: @Sendable (_ from: String, _ to: String) throws(SystemError) -> Void = { from, to throws(SystemError) in
            try OutputFile.renameWithoutReplacing(from, to: to)
        }
        /// Whether a batch may flush a filesystem with `syncfs` (the kernel reports write-back errors through
        /// it, see ``FlushPlan/syncfsReportsErrors(kernelRelease:)``); false: every file gets its `fdatasync`.
        var flushesFileSystems = false
        /// The filesystem (`st_dev`) and size of a file; nil when unknown (the file is then synced alone).
        var describe: @Sendable (OutputFile) -> (fileSystem: UInt64, bytes: Int64)? = { _ in nil }
        /// An earlier write-back failure of the file, if any (its `syncData` would throw it).
        var failedBefore: @Sendable (OutputFile) -> Bool = { _ in false }
        /// `syncfs` of the filesystem holding the file.
        var syncFileSystem: @Sendable (OutputFile) throws(SystemError) -> Void = { _ throws(SystemError) in }
        /// The bytes dirty or under write-back on the machine (nil: unknown).
        var dirtyBytes: @Sendable () -> Int64? = { nil }

        static let system = Operations(
            startWriteBack: { file in try? file.startWriteBack(offset: 0, length: 0) },
            syncData: { file throws(SystemError) in try file.synchronize() },
            rename: { from, to throws(SystemError) in try OutputFile.rename(from, to: to) },
            syncDirectory: { directory throws(SystemError) in try OutputFile.synchronizeDirectory(directory) },
            removeJournal: { path in try? ResumeJournal.remove(path: path) },
            flushesFileSystems: FlushPlan.syncfsReportsErrors(kernelRelease: kernelRelease()),
            // A finished download's size was checked with an `fstat` after its last write (its filesystem
            // came with it): no second call per file.
            describe: { file in (file.lastKnownFileSystemAndSize ?? (try? file.fileSystemAndSize())).map { ($0.device, $0.size) } },
            failedBefore: { file in file.recordedSyncFailure != nil },
            syncFileSystem: { file throws(SystemError) in try file.synchronizeFileSystem() },
            dirtyBytes: { RecentDirtyBytes.shared.read() })
    }

    /// How many threads sync data at once within one batch. Measured on ext4 (10,000 files of 4 KiB):
    /// one thread took 8–28 s, eight 1.2–1.7 s; sixteen were no better than eight.
    let parallelSyncs: Int
    private let operations: Operations
    private let start: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let gather: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let deliver: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let lock = CommitLock()
    private var pending: [Entry] = []
    private var committing = false
    /// A batch's start is asked for (`gather`) and has not run yet: later files join it without asking again.
    private var gathering = false
    /// Batches committed so far.
    private var batches = 0

    /// `start` runs work on another thread (``BlockingWork`` unless a test runs it otherwise). `gather` runs
    /// the start of a batch once the submitting thread's current turn is over (a client's
    /// ``HaulIO/EventLoop/execute(_:)``: after the loop's current batch of events, whose finishing files then
    /// share the batch); by default at once. `deliver` runs a batch's reports, all in one call (the loop's
    /// `execute` again: one task for the batch instead of one per file); by default at once, on the commit's
    /// thread.
    init(parallelSyncs: Int = 8, operations: Operations = .system,
         start: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { BlockingWork.start($0) },
         gather: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() },
         deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() }) {
        self.parallelSyncs = max(1, parallelSyncs)
        self.operations = operations
        self.start = start
        self.gather = gather
        self.deliver = deliver
    }

    /// Queues `entry` for the next batch; asks for that batch's start (through `gather`) unless one is on the
    /// disk already (it takes `entry` when it is done) or its start is asked for already.
    func submit(_ entry: Entry) {
        let asks = lock.withLock { () -> Bool in
            pending.append(entry)
            guard !committing, !gathering else { return false }
            gathering = true
            return true
        }
        if asks { gather { [self] in startBatch() } }
    }

    /// Starts a batch with every file queued by now, unless one is on the disk already.
    private func startBatch() {
        let starts = lock.withLock { () -> Bool in
            gathering = false
            guard !committing, !pending.isEmpty else { return false }
            committing = true
            return true
        }
        if starts { start { [self] in commitWhilePending() } }
    }

    /// Number of batches committed so far.
    var batchCount: Int { lock.withLock { batches } }

    private func commitWhilePending() {
        while true {
            let batch = lock.withLock { () -> [Entry] in
                let taken = pending
                pending = []
                if taken.isEmpty { committing = false } else { batches += 1 }
                return taken
            }
            guard !batch.isEmpty else { return }
            commit(batch)
        }
    }

    /// Commits one batch (see the type's description) and reports every entry of it.
    func commit(_ batch: [Entry]) {
        var outcomes = [Result<Void, HaulError>?](repeating: nil, count: batch.count)

        // 1. Data: files on their own first (in parallel), then one `syncfs` per filesystem shared.
        for (index, error) in flushAll(batch) {
            outcomes[index] = .failure(.disk(path: batch[index].partPath, error))
        }

        // 2. Renames, only of files whose data is durable.
        var renamedByDirectory: [String: [Int]] = [:]
        var directories: [String] = []
        // (A file without a name is linked instead, never replacing: see ``FinalNaming``.)
        var linked = Set<Int>()
        for index in batch.indices where outcomes[index] == nil {
            let entry = batch[index]
            let unnamed = entry.file.isUnnamed
            do throws(SystemError) {
                try FinalNaming.name(entry.file, partPath: entry.partPath, destination: entry.destination, mustBeNew: entry.finalNameIsNew,
                                     link: operations.link, renameWithoutReplacing: operations.renameWithoutReplacing,
                                     rename: operations.rename)
            } catch where error.errno == EEXIST {
                FinalNaming.keepBytes(of: entry.file)
                outcomes[index] = .failure(.destinationExists(path: entry.destination))
                continue
            } catch {
                outcomes[index] = .failure(.disk(path: entry.destination, error))
                continue
            }
            if unnamed { linked.insert(index) }
            let directory = OutputFile.directory(containing: entry.destination)
            if renamedByDirectory[directory] == nil { directories.append(directory) }
            renamedByDirectory[directory, default: []].append(index)
        }

        // 3. One sync per directory; a failure un-proves every rename into it.
        for directory in directories {
            let indices = renamedByDirectory[directory] ?? []
            do throws(SystemError) {
                try operations.syncDirectory(directory)
                for index in indices { outcomes[index] = .success(()) }
            } catch {
                for index in indices {
                    let entry = batch[index]
                    // Back to the `.part` name, so that nothing claims to be complete and a rerun resumes. (A
                    // linked file never had one: it takes it only if no other download's `.part` is there.)
                    if linked.contains(index) {
                        try? operations.renameWithoutReplacing(entry.destination, entry.partPath)
                    } else {
                        try? operations.rename(entry.destination, entry.partPath)
                    }
                    outcomes[index] = .failure(.disk(path: entry.destination, error))
                }
            }
        }

        // 4. Journals of durable files, then the reports.
        for index in batch.indices {
            if case .success = outcomes[index], let journal = batch[index].journalPath { operations.removeJournal(journal) }
        }
        let reports = batch.indices.map { index in
            (batch[index].completion, outcomes[index] ?? .failure(.unexpected("the commit did not decide this file")))
        }
        deliver { for (completion, outcome) in reports { completion(outcome) } }
    }

    /// The plan for `batch`: the facts of each file gathered (what the finished download's size check found,
    /// else an `fstat`; and one read of `/proc/meminfo`), when `syncfs` may be used.
    func plan(_ batch: [Entry]) -> FlushPlan {
        guard operations.flushesFileSystems, batch.count > 1 else { return FlushPlan(perFile: Array(batch.indices), fileSystems: []) }
        let files = batch.map { entry in
            let facts = operations.describe(entry.file)
            return FlushPlan.File(fileSystem: facts?.fileSystem, bytes: facts?.bytes ?? 0, openOrder: entry.file.openOrder,
                                  failedBefore: operations.failedBefore(entry.file))
        }
        let ours = files.reduce(Int64(0)) { $0 + $1.bytes }
        let dirtyElsewhere = operations.dirtyBytes().map { max(0, $0 - ours) }
        return FlushPlan.make(files, syncfsReportsErrors: true, dirtyElsewhere: dirtyElsewhere)
    }

    /// Makes every file's data durable as ``plan(_:)`` says; returns the files that failed, with their errors.
    private func flushAll(_ batch: [Entry]) -> [(Int, SystemError)] {
        let plan = plan(batch)
        var failures: [(Int, SystemError)] = []
        for (position, error) in syncEach(plan.perFile.map { batch[$0].file }).enumerated() {
            if let error { failures.append((plan.perFile[position], error)) }
        }
        for group in plan.fileSystems {
            do throws(SystemError) {
                // The first-opened file of the group: its descriptor was opened before any of the group's data
                // was written, so its `syncfs` reports every write-back error of theirs.
                try operations.syncFileSystem(batch[group[0]].file)
            } catch {
                // Whose data failed, `syncfs` does not say: each file's own `fdatasync` does (its descriptor
                // keeps its own write-back error), and a file it proves is durable.
                for (position, error) in syncEach(group.map { batch[$0].file }).enumerated() {
                    if let error { failures.append((group[position], error)) }
                }
            }
        }
        return failures
    }

    /// Syncs the data of each of `files` (`fdatasync`), using up to ``parallelSyncs`` threads (this one
    /// included); returns the error of each file, nil where the sync succeeded.
    private func syncEach(_ files: [OutputFile]) -> [SystemError?] {
        guard !files.isEmpty else { return [] }
        // Every file's write-back starts first, so the blocks of the whole batch are allocated and on their
        // way before the first sync waits: its journal commit then covers the batch, and the later syncs
        // find little left to do.
        if files.count > 1 {
            for file in files { operations.startWriteBack(file) }
        }
        let results = SyncResults(count: files.count)
        let helpers = min(parallelSyncs, files.count) - 1
        let work: @Sendable () -> Void = { [operations] in
            while let index = results.claim() {
                do throws(SystemError) {
                    try operations.syncData(files[index])
                    results.finish(index, nil)
                } catch {
                    results.finish(index, error)
                }
            }
        }
        for _ in 0..<max(0, helpers) { start(work) }
        work()
        return results.waitForAll()
    }
}

/// The machine's dirty bytes (``FlushPlan/dirtyBytes(memoryInformation:)``), read from `/proc/meminfo` at most
/// once per ``maximumAge``: reading it is four calls (open, two reads, close), and batches of small files
/// follow each other every few milliseconds, four calls a batch being about one per file. What other writers
/// hold dirty changes over seconds (the kernel writes it back after 5–30 s); an answer 50 ms old says as much.
final class RecentDirtyBytes: Sendable {
    static let shared = RecentDirtyBytes()
    /// How old an answer may be (50 ms).
    static let maximumAge: Duration = .milliseconds(50)
    private let recent = Mutex<(bytes: Int64?, at: MonotonicInstant)?>(nil)
    private let measure: @Sendable () -> Int64?

    init(measure: @escaping @Sendable () -> Int64? = { FlushPlan.dirtyBytes(memoryInformation: OutputFile.memoryInformation()) }) {
        self.measure = measure
    }

    /// The latest answer if it is younger than ``maximumAge`` at `now`, else a new one.
    func read(now: MonotonicInstant = .now()) -> Int64? {
        if let answer = recent.withLock({ $0 }), now < answer.at.advanced(by: Self.maximumAge) { return answer.bytes }
        let bytes = measure()
        recent.withLock { $0 = (bytes, now) }
        return bytes
    }
}

/// The per-file outcomes of one batch's data syncs, claimed and filled in by several threads. Claiming a
/// file and reporting its sync are atomic counters, not a lock: eight threads whose syncs end together (one
/// journal commit, one cache flush) would otherwise queue on a mutex, a `futex` each; only the last report
/// takes the lock, to wake the waiter.
private final class SyncResults: @unchecked Sendable {
    // @unchecked Sendable: each slot of `errors` is written by the one thread that claimed its index and read
    // only after `unfinished` has reached 0 (its last decrement releases those writes, `waitForAll` acquires
    // them under `mutex`); `done` is guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let errors: UnsafeMutablePointer<SystemError?>
    private let count: Int
    private let next = Atomic<Int>(0)
    private let unfinished: Atomic<Int>
    private var done = false

    init(count: Int) {
        self.count = count
        errors = .allocate(capacity: count)
        errors.initialize(repeating: nil, count: count)
        unfinished = Atomic(count)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(finished, nil)
    }

    deinit {
        pthread_cond_destroy(finished)
        pthread_mutex_destroy(mutex)
        finished.deallocate()
        mutex.deallocate()
        errors.deinitialize(count: count)
        errors.deallocate()
    }

    func claim() -> Int? {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < count ? index : nil
    }

    func finish(_ index: Int, _ error: SystemError?) {
        errors[index] = error
        guard unfinished.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        pthread_mutex_lock(mutex)
        done = true
        pthread_mutex_unlock(mutex)
        // After the unlock, so that the waiter does not wake only to wait for the mutex.
        pthread_cond_broadcast(finished)
    }

    /// Waits until every file is synced (helpers that start late find nothing left to claim and return).
    func waitForAll() -> [SystemError?] {
        pthread_mutex_lock(mutex)
        while !done { pthread_cond_wait(finished, mutex) }
        pthread_mutex_unlock(mutex)
        return Array(UnsafeBufferPointer(start: errors, count: count))
    }
}

/// A plain mutex guarding several fields of its owner.
private final class CommitLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
