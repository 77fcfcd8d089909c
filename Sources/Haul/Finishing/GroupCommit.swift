import Glibc
import HaulIO
import HaulJournal
import Synchronization

/// Makes finished downloads durable in batches: one synchronous `fdatasync` plus a directory `fsync` per
/// file made many small downloads wait for the disk once or twice each, one after the other.
///
/// Files handed in while a batch is on the disk wait for the next batch, which takes all of them. That next
/// batch gathers company first (``BatchGathering``): it starts once it holds 64 files, or 5 ms after its first
/// file was queued, or at once when none of the submitters' running downloads is left to come, or when its
/// files would get an `fdatasync` each anyway. (A flush of a few files takes a fraction of a millisecond:
/// without the wait a run of small files went in batches of about three.) A file after a quiet spell
/// (nothing on the disk, nothing queued) is committed at once: a lone download's end waits for no timer. A batch after a quiet spell
/// starts when the turn of the thread that handed in its first file is over (``init(parallelSyncs:gathering:downloadsRunning:operations:start:gather:deliver:)``'s
/// `gather`: the client's event loop runs it after the current batch of events), so the files that finish
/// on one wake-up of the loop go together, and one thread is woken per batch, not per file. The outcomes of a
/// batch are handed back together too (`deliver`: one task on the loop for the whole batch). Each lane of a
/// client (an event loop) has a commit of its own: one shared by the lanes of a client was measured (a
/// `TaskGroup` of 16 durable downloads of 4 KiB on two lanes) 1.5–2× slower than one per lane (docs/benchmarks.md,
/// "Durable batches gathered"; likely because one run of batches has one flush on the disk at a time).
/// Each batch, in this order:
/// 1. makes the data of every file durable, as its ``FlushPlan`` says: the small files sharing a filesystem
///    with one `syncfs` of it, the others (large files, a lone file, every file on a kernel older than 5.8)
///    with an `fdatasync` each, in parallel (several threads, so the file system can merge the journal
///    commits those syncs need) and before the `syncfs`;
/// 2. renames each file whose data is durable from its `.part` name to its final name (a file without a name
///    is linked to it instead; ``FinalNaming``) — a final name only ever appears for complete, synced data;
/// 3. makes the renames durable: when the next batch follows at once and flushes the filesystem of a
///    directory with `syncfs` on a file opened before the renames, that `syncfs` does it (it began after the
///    renames, writes directories too and reports their failed write-back: ``RenameProof``; when every file
///    of the next batch there was opened after the renames, its `syncfs` is called on a file of this batch
///    that no `syncfs` has used yet, ``RenameProof/standIn(fileSystem:groupFirstOpened:openedBeforeRenames:awaiting:)``); each other
///    directory of the batch is synced once (`fsync`), before the next batch's flush, or when no batch
///    follows (after a wait of up to ``BatchGathering/longestWait`` for a next file while downloads may still
///    hand one in, ``BatchGathering/awaitsNextFile(queued:since:now:mayStillCome:sharesFlush:)``);
/// 4. removes the journals of the files now durable, and reports every file.
///
/// A file whose data sync fails keeps its `.part` file and journal and fails with a disk error; a file whose
/// rename fails likewise. A failed `syncfs` names no file (it reports any write-back error on the
/// filesystem since its descriptor was opened, other programs' included), so each file of that filesystem's
/// group is then synced on its own with `fdatasync`, which reports that file's own write-back error: the
/// files whose sync fails then fail (`.part` and journal kept), the others are proven and go on. When a
/// directory sync fails, the renames into that directory are not proven durable: they are undone (the files
/// go back to their `.part` names, journals kept) and those files fail; when the next batch's `syncfs` that
/// was to prove them fails, their directories are synced on their own, with that same rule. Files in other
/// directories, or whose syncs succeeded, are not affected.
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
        /// Throws when a file's `.part` is no longer the file written (``WorkingFileCheck``); tests' files pass.
        var checkWorkingFile: @Sendable (Entry) throws(HaulError) -> Void = { _ throws(HaulError) in }

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
            dirtyBytes: { RecentDirtyBytes.shared.read() },
            checkWorkingFile: { entry throws(HaulError) in
                try WorkingFileCheck.check(entry.file, partPath: entry.partPath, destination: entry.destination)
            })
    }

    /// How many threads sync data at once within one batch. Measured on ext4 (10,000 files of 4 KiB):
    /// one thread took 8–28 s, eight 1.2–1.7 s; sixteen were no better than eight.
    let parallelSyncs: Int
    /// When a batch that follows another starts (``BatchGathering``).
    let gathering: BatchGathering
    private let operations: Operations
    private let start: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let gather: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let deliver: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let lock = CommitLock()
    private var pending: [Entry] = []
    /// When the first of `pending` was queued.
    private var firstQueuedAt = MonotonicInstant(nanoseconds: 0)
    /// The committing thread waits for more files (``BatchGathering``): a submit that makes enough wakes it.
    private var waitingForCompany = false
    /// The committing thread waits for a next file after a batch whose renames await their proof
    /// (``BatchGathering/awaitsNextFile(queued:since:now:mayStillCome:sharesFlush:)``): any submit wakes it.
    private var waitingForNextFile = false
    /// Files submitted whose outcomes have not yet been handed over (their `deliver` has not run).
    private var undelivered = 0
    /// How many downloads of the submitters have begun and not ended (a client's running downloads); nil:
    /// unknown. Those not in the commit may still hand in a file: a batch waits for company only while some may.
    private let downloadsRunning: (@Sendable () -> Int)?
    private var committing = false
    /// A batch's start is asked for (`gather`) and has not run yet: later files join it without asking again.
    private var startAsked = false
    /// Batches committed so far.
    private var batches = 0

    /// `start` runs work on another thread (``BlockingWork`` unless a test runs it otherwise). `gather` runs
    /// the start of a batch once the submitting thread's current turn is over (a client's
    /// ``HaulIO/EventLoop/execute(_:)``: after the loop's current batch of events, whose finishing files then
    /// share the batch); by default at once. `deliver` runs a batch's reports, all in one call (the loop's
    /// `execute` again: one task for the batch instead of one per file); by default at once, on the commit's
    /// thread. `gathering`: when a batch that follows another starts (``BatchGathering``), knowing from
    /// `downloadsRunning` (nil: unknown) how many downloads have begun and not ended — a download ends only
    /// after its outcome is delivered, in the same turn of its loop.
    init(parallelSyncs: Int = 8, gathering: BatchGathering = .standard, downloadsRunning: (@Sendable () -> Int)? = nil,
         operations: Operations = .system,
         start: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { BlockingWork.start($0) },
         gather: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() },
         deliver: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void = { $0() }) {
        self.parallelSyncs = max(1, parallelSyncs)
        self.gathering = gathering
        self.downloadsRunning = downloadsRunning
        self.operations = operations
        self.start = start
        self.gather = gather
        self.deliver = deliver
    }

    /// Queues `entry` for the next batch; asks for that batch's start (through `gather`) unless
    /// one is on the disk already (it takes `entry` when it is done) or its start is asked for already.
    func submit(_ entry: Entry) {
        let asks = lock.withLock { () -> Bool in
            if pending.isEmpty { firstQueuedAt = MonotonicInstant.now() }
            pending.append(entry)
            undelivered += 1
            if waitingForCompany, pending.count >= gathering.enoughFiles || mayStillCome() == 0 { lock.signal() }
            if waitingForNextFile { lock.signal() }
            guard !committing, !startAsked else { return false }
            startAsked = true
            return true
        }
        if asks { gather { [self] in startBatch() } }
    }

    /// Starts a batch with every file queued by now, unless one is on the disk already.
    private func startBatch() {
        let starts = lock.withLock { () -> Bool in
            startAsked = false
            guard !committing, !pending.isEmpty else { return false }
            committing = true
            return true
        }
        if starts { start { [self] in commitWhilePending() } }
    }

    /// Number of batches committed so far.
    var batchCount: Int { lock.withLock { batches } }

    /// Commits batches while files are pending. The first starts at once; each later one gathers files first
    /// (``BatchGathering``: a few milliseconds at most). A batch's renames wait for their proof until the next
    /// batch is flushed (``RenameProof``): a directory on a filesystem that batch flushes with `syncfs` needs
    /// no `fsync` of its own; the others are synced before that batch's flush, and all of them at once when no
    /// batch follows.
    private func commitWhilePending() {
        var awaiting: Renamed?
        var follows = false
        while true {
            if follows, awaiting != nil, lock.withLock({ pending.isEmpty }) {
                // Renames await their proof and nothing is queued: a next file's batch may prove them.
                let sharesFlush = gatheredBatchSharesFlush()
                lock.withLock { waitForNextFile(sharesFlush: sharesFlush) }
            }
            // Read before the lock (it may read `/proc/meminfo`): whether a gathered batch would share a flush.
            // (Not when nothing is queued: a lone download's end reads nothing more.)
            let sharesFlush = follows && !lock.withLock({ pending.isEmpty }) && gatheredBatchSharesFlush()
            let batch = lock.withLock { () -> [Entry] in
                if follows { waitForCompany(sharesFlush: sharesFlush) }
                follows = true
                let taken = pending
                pending = []
                if taken.isEmpty, awaiting == nil { committing = false } else if !taken.isEmpty { batches += 1 }
                return taken
            }
            guard !batch.isEmpty else {
                // Nothing follows (yet): the renames are proven by their directories' own syncs now.
                guard var renamed = awaiting else { return }
                awaiting = nil
                syncDirectories(of: &renamed, where: { _ in true })
                report(renamed)
                continue
            }
            let (flushPlan, fileSystems) = plan(batch)
            // Each filesystem this batch flushes with `syncfs`, with the open order of the file it is called on: the
            // group's first-opened, or a file of the batch before that may prove its renames too (``RenameProof``).
            var syncfsOn: [UInt64: UInt64] = [:]
            var syncfsFiles: [OutputFile] = []
            for group in flushPlan.fileSystems {
                var file = batch[group[0]].file
                if let fileSystem = fileSystems[group[0]] {
                    if let renamed = awaiting,
                       let standIn = RenameProof.standIn(fileSystem: fileSystem, groupFirstOpened: file.openOrder,
                                                         openedBeforeRenames: renamed.openedBeforeRenames, awaiting: renamed.candidates) {
                        file = renamed.batch[standIn].file
                    }
                    syncfsOn[fileSystem] = file.openOrder
                }
                syncfsFiles.append(file)
            }
            if var renamed = awaiting {
                // A directory this batch's `syncfs` will not cover is synced now: its files need not wait.
                let openedBeforeRenames = renamed.openedBeforeRenames
                syncDirectories(of: &renamed) { fileSystem in
                    RenameProof.decide(directoryFileSystem: fileSystem, openedBeforeRenames: openedBeforeRenames,
                                       nextSyncfs: syncfsOn) == .ownDirectorySync
                }
                if renamed.directories.isEmpty {
                    report(renamed)
                    awaiting = nil
                } else {
                    awaiting = renamed
                }
            }
            let (failures, flushed) = flush(batch, flushPlan, fileSystems: fileSystems, syncfsFiles: syncfsFiles)
            if var renamed = awaiting {
                // The `syncfs` calls began after the renames had returned: they wrote the directories too. A
                // directory whose filesystem's `syncfs` failed is synced on its own (a failure there un-proves).
                renamed.proveDirectories { fileSystem in fileSystem.map { flushed.contains($0) } ?? false }
                syncDirectories(of: &renamed, where: { _ in true })
                report(renamed)
                awaiting = nil
            }
            awaiting = rename(batch, failures: failures, fileSystems: fileSystems)
            for (position, group) in flushPlan.fileSystems.enumerated() where syncfsFiles[position] === batch[group[0]].file {
                awaiting?.candidates[group[0]].usedForSyncfs = true
            }
        }
    }

    /// Waits (the lock held, released while waiting) until the queued files may start a batch, as
    /// ``gathering`` says.
    private func waitForCompany(sharesFlush: Bool) {
        while case .wait(let deadline) = gathering.next(queued: pending.count, firstQueuedAt: firstQueuedAt,
                                                        now: MonotonicInstant.now(), mayStillCome: mayStillCome(),
                                                        sharesFlush: sharesFlush) {
            waitingForCompany = true
            lock.wait(until: deadline)
            waitingForCompany = false
        }
    }

    /// Waits (the lock held, released while waiting) for a file to follow a batch whose renames await their
    /// proof, as ``gathering`` says.
    private func waitForNextFile(sharesFlush: Bool) {
        let since = MonotonicInstant.now()
        while case .wait(let deadline) = gathering.awaitsNextFile(queued: pending.count, since: since, now: MonotonicInstant.now(),
                                                                  mayStillCome: mayStillCome(), sharesFlush: sharesFlush) {
            waitingForNextFile = true
            lock.wait(until: deadline)
            waitingForNextFile = false
        }
    }

    /// Whether a batch of ``BatchGathering/enoughFiles`` small files would share a `syncfs` now (``FlushPlan``:
    /// the kernel reports its errors, and the machine holds no more dirty data than such a batch may wait for).
    private func gatheredBatchSharesFlush() -> Bool {
        guard operations.flushesFileSystems else { return false }
        guard let dirty = operations.dirtyBytes() else { return true }
        return dirty <= FlushPlan.dirtyAllowance(files: gathering.enoughFiles)
    }

    /// With the lock held: how many downloads that have begun and not ended are not in the commit (nil: unknown).
    private func mayStillCome() -> Int? {
        downloadsRunning.map { max(0, $0() - undelivered) }
    }

    /// `deliver` has handed over `count` outcomes (their downloads have ended): wakes a thread
    /// waiting for company, which may now have nobody left to wait for.
    private func delivered(_ count: Int) {
        lock.withLock {
            undelivered -= count
            if waitingForCompany || waitingForNextFile { lock.signal() }
        }
    }

    /// Commits one batch on its own (see the type's description) and reports every entry of it.
    func commit(_ batch: [Entry]) {
        lock.withLock { undelivered += batch.count }
        let (flushPlan, fileSystems) = plan(batch)
        var renamed = rename(batch, failures: flush(batch, flushPlan, fileSystems: fileSystems).failures, fileSystems: fileSystems)
        syncDirectories(of: &renamed, where: { _ in true })
        report(renamed)
    }

    /// A batch whose data is durable (or failed) and whose files are renamed, waiting for the proof that the
    /// renames are durable too.
    private struct Renamed {
        var batch: [Entry]
        var outcomes: [Result<Void, HaulError>?]
        /// The directories renamed into whose renames are not yet proven, in the order first renamed into:
        /// the filesystem holding each (nil: unknown) and the indices of its files.
        var directories: [(path: String, fileSystem: UInt64?, indices: [Int])] = []
        /// Files without a name, linked to their final names (``FinalNaming``).
        var linked = Set<Int>()
        /// ``HaulIO/OutputFile/latestOpenOrder`` just before the renames: a `syncfs` on a file opened by then
        /// reports a failed write-back of their directories (``RenameProof``).
        var openedBeforeRenames: UInt64 = 0
        /// Each file as the next batch's choice of a descriptor for its `syncfs` sees it (``RenameProof/standIn(fileSystem:groupFirstOpened:openedBeforeRenames:awaiting:)``).
        var candidates: [RenameProof.Candidate] = []

        /// Marks the renames into every directory whose filesystem `isProven` says was flushed as durable.
        mutating func proveDirectories(_ isProven: (UInt64?) -> Bool) {
            directories.removeAll { directory in
                guard isProven(directory.fileSystem) else { return false }
                for index in directory.indices { outcomes[index] = .success(()) }
                return true
            }
        }
    }

    /// Step 2 of a batch: renames each file whose data is durable (not in `failures`) to its final name.
    private func rename(_ batch: [Entry], failures: [(Int, SystemError)], fileSystems: [UInt64?]) -> Renamed {
        var renamed = Renamed(batch: batch, outcomes: [Result<Void, HaulError>?](repeating: nil, count: batch.count),
                              openedBeforeRenames: OutputFile.latestOpenOrder,
                              candidates: batch.indices.map { RenameProof.Candidate(fileSystem: fileSystems[$0], openOrder: batch[$0].file.openOrder, usedForSyncfs: false) })
        for (index, error) in failures {
            renamed.outcomes[index] = .failure(.disk(path: batch[index].partPath, error))
        }
        var positions: [String: Int] = [:]
        for index in batch.indices where renamed.outcomes[index] == nil {
            let entry = batch[index]
            let unnamed = entry.file.isUnnamed
            do throws(HaulError) {
                try operations.checkWorkingFile(entry)
            } catch {
                // Its journal describes a file no longer at its name: a rerun must not trust it with another's bytes.
                if let journalPath = entry.journalPath { operations.removeJournal(journalPath) }
                renamed.outcomes[index] = .failure(error)
                continue
            }
            do throws(SystemError) {
                // (A file without a name is linked instead, never replacing: see ``FinalNaming``.)
                try FinalNaming.name(entry.file, partPath: entry.partPath, destination: entry.destination, mustBeNew: entry.finalNameIsNew,
                                     link: operations.link, renameWithoutReplacing: operations.renameWithoutReplacing,
                                     rename: operations.rename)
            } catch where error.errno == EEXIST {
                FinalNaming.keepBytes(of: entry.file)
                renamed.outcomes[index] = .failure(.destinationExists(path: entry.destination))
                continue
            } catch {
                renamed.outcomes[index] = .failure(.disk(path: entry.destination, error))
                continue
            }
            if unnamed { renamed.linked.insert(index) }
            let directory = OutputFile.directory(containing: entry.destination)
            if let position = positions[directory] {
                renamed.directories[position].indices.append(index)
            } else {
                // A file and the directory it is renamed into are on one filesystem (`rename` and `linkat`
                // refuse to cross them).
                positions[directory] = renamed.directories.count
                renamed.directories.append((directory, fileSystems[index], [index]))
            }
        }
        return renamed
    }

    /// Step 3: one sync of each directory of `renamed` not yet proven for which `chosen` (given its
    /// filesystem) is true; a failure un-proves every rename into that directory.
    private func syncDirectories(of renamed: inout Renamed, where chosen: (UInt64?) -> Bool) {
        renamed.directories.removeAll { directory in
            guard chosen(directory.fileSystem) else { return false }
            do throws(SystemError) {
                try operations.syncDirectory(directory.path)
                for index in directory.indices { renamed.outcomes[index] = .success(()) }
            } catch {
                for index in directory.indices {
                    let entry = renamed.batch[index]
                    // Back to the `.part` name, so that nothing claims to be complete and a rerun resumes. (A
                    // linked file never had one: it takes it only if no other download's `.part` is there.)
                    if renamed.linked.contains(index) {
                        try? operations.renameWithoutReplacing(entry.destination, entry.partPath)
                    } else {
                        try? operations.rename(entry.destination, entry.partPath)
                    }
                    renamed.outcomes[index] = .failure(.disk(path: entry.destination, error))
                }
            }
            return true
        }
    }

    /// Step 4: removes the journals of the durable files, then reports every file of the batch (in one call
    /// of `deliver`).
    private func report(_ renamed: Renamed) {
        let batch = renamed.batch, outcomes = renamed.outcomes
        for index in batch.indices {
            if case .success = outcomes[index], let journal = batch[index].journalPath { operations.removeJournal(journal) }
        }
        let reports = batch.indices.map { index in
            (batch[index].completion, outcomes[index] ?? .failure(.unexpected("the commit did not decide this file")))
        }
        deliver { [self] in
            for (completion, outcome) in reports { completion(outcome) }
            delivered(reports.count)
        }
    }

    /// The plan for `batch` and the filesystem of each file (nil: unknown, or `syncfs` not used): the facts of
    /// each file gathered (what the finished download's size check found, else an `fstat`; and one read of
    /// `/proc/meminfo`), when `syncfs` may be used.
    func plan(_ batch: [Entry]) -> (FlushPlan, fileSystems: [UInt64?]) {
        guard operations.flushesFileSystems else {
            return (FlushPlan(perFile: Array(batch.indices), fileSystems: []), [UInt64?](repeating: nil, count: batch.count))
        }
        let facts = batch.map { operations.describe($0.file) }
        let fileSystems = facts.map { $0?.fileSystem }
        guard batch.count > 1 else { return (FlushPlan(perFile: Array(batch.indices), fileSystems: []), fileSystems) }
        let files = batch.indices.map { index in
            FlushPlan.File(fileSystem: facts[index]?.fileSystem, bytes: facts[index]?.bytes ?? 0, openOrder: batch[index].file.openOrder,
                           failedBefore: operations.failedBefore(batch[index].file))
        }
        let ours = files.reduce(Int64(0)) { $0 + $1.bytes }
        let dirtyElsewhere = operations.dirtyBytes().map { max(0, $0 - ours) }
        return (FlushPlan.make(files, syncfsReportsErrors: true, dirtyElsewhere: dirtyElsewhere), fileSystems)
    }

    /// Step 1: makes every file's data durable as `plan` says; returns the files that failed, with their
    /// errors, and the filesystems flushed whole by a successful `syncfs`.
    /// `syncfsFiles`: the file each group's `syncfs` is called on (nil: each group's first).
    private func flush(_ batch: [Entry], _ plan: FlushPlan, fileSystems: [UInt64?], syncfsFiles: [OutputFile]? = nil) -> (failures: [(Int, SystemError)], flushed: Set<UInt64>) {
        var failures: [(Int, SystemError)] = []
        var flushed = Set<UInt64>()
        for (position, error) in syncEach(plan.perFile.map { batch[$0].file }).enumerated() {
            if let error { failures.append((plan.perFile[position], error)) }
        }
        for (position, group) in plan.fileSystems.enumerated() {
            do throws(SystemError) {
                // The first-opened file of the group (or one opened before it, ``RenameProof``): its descriptor
                // was opened before any of the group's data was written, so its `syncfs` reports every
                // write-back error of theirs.
                try operations.syncFileSystem(syncfsFiles?[position] ?? batch[group[0]].file)
                if let fileSystem = fileSystems[group[0]] { flushed.insert(fileSystem) }
            } catch {
                // Whose data failed, `syncfs` does not say: each file's own `fdatasync` does (its descriptor
                // keeps its own write-back error), and a file it proves is durable.
                for (position, error) in syncEach(group.map { batch[$0].file }).enumerated() {
                    if let error { failures.append((group[position], error)) }
                }
            }
        }
        return (failures, flushed)
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

/// A plain mutex guarding several fields of its owner, with a condition to wait on under it.
private final class CommitLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        // Deadlines are ``HaulIO/MonotonicInstant``s: the condition's clock is the monotonic one.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Within ``withLock(_:)``: releases the lock until ``signal()`` or `deadline` (or a spurious wake-up),
    /// then holds it again. The caller checks its condition again either way.
    func wait(until deadline: MonotonicInstant) {
        var time = timespec(tv_sec: Int(deadline.nanoseconds / 1_000_000_000), tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        _ = pthread_cond_timedwait(condition, mutex, &time)
    }

    /// Within ``withLock(_:)``: wakes the thread waiting in ``wait(until:)``, if any.
    func signal() { pthread_cond_signal(condition) }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
