import Glibc
import HaulIO
import HaulJournal

/// Makes a download's progress durable from time to time, without stalling the event loop.
///
/// A checkpoint takes the set of written ranges *before* it syncs the data file, then `fdatasync`s the
/// data, then records that set in the journal (which syncs itself). So the journal never names a byte
/// that was not on disk first. The blocking steps run on a thread of their own, one checkpoint at a time;
/// a checkpoint asked for while one runs is merged into the next. Loop-confined apart from that thread.
///
/// A failed `fdatasync` of the data file ends the journal for good (``dataSyncFailure``): Linux may drop
/// the dirty pages whose write-back failed and report success on a later sync, so nothing written before
/// the failure can be vouched for again. Without data syncs (`syncsData` false) each record carries this
/// boot's id (``JournalState/bootID``), so that a resume after a reboot does not trust page-cache data.
final class Checkpointer: @unchecked Sendable {
    // @unchecked Sendable: mutable state is touched on `loop` only; the worker thread gets value copies
    // and reports back through `loop.execute`.

    let loop: EventLoop
    let journalPath: String
    let file: OutputFile
    let syncsData: Bool
    private(set) var state: JournalState
    private var journal: ResumeJournal?
    private var running = false
    private var runningState: JournalState?
    private var runningCompletions: [() -> Void] = []
    private var queued: (ByteRangeSet, [() -> Void], pausing: Bool)?
    /// Why the latest checkpoint failed; nil once one succeeds again. After a ``dataSyncFailure`` it stays
    /// that failure (as `.io(call: "fdatasync", ...)` naming the data file), since no checkpoint runs again.
    private(set) var lastError: JournalError?
    /// The first failed `fdatasync` of the data file, never cleared. From then on checkpoints write nothing
    /// (they only run their completions): pages written before the failure may have been dropped by the
    /// kernel, and a later successful sync does not bring them back. The download must fail with a disk
    /// error; the journal keeps the last ranges recorded before the failure, which were synced.
    private(set) var dataSyncFailure: SystemError?
    /// Set by ``discardWhenIdle(completion:)``: the journal is (being) removed and must not be written again.
    private(set) var isDiscarded = false
    /// How the data file is synced; a test seam (the default is `fdatasync` through the file).
    let synchronizeData: @Sendable (OutputFile) throws(SystemError) -> Void
    /// The boot id stamped into records when `syncsData` is false.
    private let bootID: [UInt8]?
    /// The verified pieces of a download with piece hashes, as the driver last learnt them; each record
    /// carries those of them inside its durable ranges (``JournalPieces/restricted(to:totalLength:)``).
    var pieces: JournalPieces?

    init(loop: EventLoop, journalPath: String, file: OutputFile, syncsData: Bool, state: JournalState, journal: ResumeJournal? = nil,
         synchronizeData: @escaping @Sendable (OutputFile) throws(SystemError) -> Void = { file throws(SystemError) in try file.synchronize() }) {
        self.loop = loop
        self.journalPath = journalPath
        self.file = file
        self.syncsData = syncsData
        self.state = state
        self.journal = journal
        self.synchronizeData = synchronizeData
        self.bootID = syncsData ? nil : JournalState.currentBootID()
    }

    /// Bytes recorded as durable by the last finished checkpoint.
    var durableBytes: Int64 { state.durable.count }

    /// Records `written` (every byte in it must already be written to the data file); `completion` runs on
    /// the loop once it (or a later checkpoint) is durable — or, after a ``dataSyncFailure`` or a discard,
    /// at once, without anything written (check ``dataSyncFailure`` and ``lastError`` in it).
    ///
    /// `pausing`: the process may be killed at once after this (a second Ctrl-C during a pause), before a
    /// data sync of many MiB ends. When no synced record is at stake (no journal yet, or one recording
    /// nothing synced), a record of `written` bound to this boot (as with `--no-sync`) is written first,
    /// without waiting for the data: the bytes are in the page cache, which outlives the process, and a
    /// resume after a reboot does not trust it. The synced record follows as usual. A synced record is
    /// never replaced by a boot-bound one: a power loss in between would lose it.
    func checkpoint(_ written: ByteRangeSet, pausing: Bool = false, completion: (() -> Void)? = nil) {
        precondition(loop.inEventLoop)
        if isDiscarded || dataSyncFailure != nil {
            completion?()
            return
        }
        let pausing = pausing || queued?.pausing == true
        if running {
            var waiting = queued?.1 ?? []
            if let completion { waiting.append(completion) }
            queued = (written, waiting, pausing)
            return
        }
        // Not running but queued: called from a completion of the checkpoint that just finished, before
        // the queued one started. This newer set supersedes it; its completions wait for this one.
        var completions = queued?.1 ?? []
        queued = nil
        if let completion { completions.append(completion) }
        run(written, completions: completions, pausing: pausing)
    }

    private func run(_ written: ByteRangeSet, completions: [() -> Void], pausing: Bool = false) {
        running = true
        var next = state
        next.durable = written
        // Never a verified byte the record does not list as durable (a run without piece hashes keeps an earlier record's).
        next.pieces = (pieces ?? state.pieces)?.restricted(to: written, totalLength: state.totalLength)
        // Synced data is durable whatever happens to this boot; unsynced data only as long as it lasts.
        next.bootID = syncsData ? nil : bootID
        runningState = next
        runningCompletions = completions
        var quick: JournalState?
        if pausing, syncsData, let thisBoot = JournalState.currentBootID(), state.durable.count == 0 || state.bootID != nil,
           written.count > 0 {
            quick = next
            quick!.bootID = thisBoot
        }
        let job = Job(journal: journal, path: journalPath, file: file, syncsData: syncsData, state: next, quick: quick,
                      previous: state, synchronizeData: synchronizeData)
        BlockingWork.start { [self] in
            let outcome = job.perform()
            loop.execute { [self] in finished(outcome) }
        }
    }

    private func finished(_ outcome: Outcome) {
        running = false
        switch outcome {
        case .recorded(let journal):
            self.journal = journal
            lastError = nil
            if let runningState { state = runningState }
        case .journalFailed(let error):
            lastError = error
        case .dataSyncFailed(let error):
            if dataSyncFailure == nil { dataSyncFailure = error }
            lastError = JournalError(error, path: file.path)
        }
        runningState = nil
        let completions = runningCompletions
        runningCompletions = []
        for completion in completions { completion() }
        // A completion may have started the next checkpoint already (then `queued` waits for that one).
        if !running, let (written, waiting, pausing) = queued {
            queued = nil
            if isDiscarded || dataSyncFailure != nil {
                for completion in waiting { completion() }
            } else {
                run(written, completions: waiting, pausing: pausing)
            }
        }
    }

    /// Calls `completion` on the loop once no checkpoint is running or queued (at once when idle).
    func whenIdle(_ completion: @escaping () -> Void) {
        precondition(loop.inEventLoop)
        if !running { return completion() }
        if var waiting = queued {
            waiting.1.append(completion)
            queued = waiting
        } else {
            runningCompletions.append(completion)
        }
    }

    /// Removes the journal once no checkpoint is running or queued, then calls `completion` on the loop;
    /// no later checkpoint of this checkpointer writes it again (they only run their completions). For a
    /// restart, which must not race a checkpoint still writing (or about to create) the journal.
    ///
    /// A checkpoint queued behind a running one is dropped (its completions run), since its record would
    /// be deleted anyway; the running one finishes first. Removal errors are ignored, like ``discard(path:)``.
    func discardWhenIdle(completion: @escaping () -> Void) {
        precondition(loop.inEventLoop)
        isDiscarded = true
        whenIdle { [self] in
            journal = nil  // closes its descriptor
            Checkpointer.discard(path: journalPath)
            completion()
        }
    }

    /// Deletes the journal (the download finished, or is starting over).
    static func discard(path: String) {
        try? ResumeJournal.remove(path: path)
    }

    /// How a checkpoint's blocking part ended.
    private enum Outcome: Sendable {
        /// The state is recorded in this journal.
        case recorded(ResumeJournal)
        /// Syncing the data worked but the journal could not be written; the next checkpoint tries again.
        case journalFailed(JournalError)
        /// `fdatasync` of the data file failed; nothing was written, and nothing will be.
        case dataSyncFailed(SystemError)
    }

    /// The blocking part of a checkpoint, handed to the checkpoint thread by value.
    private struct Job: @unchecked Sendable {
        // @unchecked Sendable: `ResumeJournal` and `OutputFile` are safe across threads; one job runs at a time.
        let journal: ResumeJournal?
        let path: String
        let file: OutputFile
        let syncsData: Bool
        let state: JournalState
        /// A boot-bound record to write before the data sync (a pause's, see ``checkpoint(_:pausing:completion:)``).
        let quick: JournalState?
        /// What the journal recorded before this job, restored if the data sync fails after `quick`.
        let previous: JournalState
        let synchronizeData: @Sendable (OutputFile) throws(SystemError) -> Void

        func perform() -> Outcome {
            var journal = self.journal
            if let quick {
                // Best effort: if it cannot be written, the synced record below is tried all the same.
                if let written = try? record(quick, in: journal) { journal = written }
            }
            if syncsData {
                do { try synchronizeData(file) } catch {
                    // Pages that failed to sync may be gone: the boot-bound record must not vouch for them.
                    if quick != nil, let journal, (try? journal.checkpoint(previous)) == nil { Checkpointer.discard(path: path) }
                    return .dataSyncFailed(error)
                }
            }
            do {
                return .recorded(try record(state, in: journal))
            } catch {
                return .journalFailed(error)
            }
        }

        /// Records `state` in `journal`, creating the journal when there is none yet.
        private func record(_ state: JournalState, in journal: ResumeJournal?) throws(JournalError) -> ResumeJournal {
            if let journal {
                try journal.checkpoint(state)
                return journal
            }
            return try ResumeJournal.create(path: path, state: state)
        }
    }
}
