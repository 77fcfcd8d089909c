import Glibc

/// Makes a download's progress durable from time to time, without stalling the event loop.
///
/// A checkpoint takes the set of written ranges *before* it syncs the data file, then `fdatasync`s the
/// data, then records that set in the journal (which syncs itself). So the journal never names a byte
/// that was not on disk first. The blocking steps run on a thread of their own, one checkpoint at a time;
/// a checkpoint asked for while one runs is merged into the next. Loop-confined apart from that thread.
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
    private var queued: (ByteRangeSet, [() -> Void])?
    /// Why the latest checkpoint failed; nil once one succeeds again.
    private(set) var lastError: JournalError?

    init(loop: EventLoop, journalPath: String, file: OutputFile, syncsData: Bool, state: JournalState, journal: ResumeJournal? = nil) {
        self.loop = loop
        self.journalPath = journalPath
        self.file = file
        self.syncsData = syncsData
        self.state = state
        self.journal = journal
    }

    /// Bytes recorded as durable by the last finished checkpoint.
    var durableBytes: Int64 { state.durable.count }

    /// Records `written` (every byte in it must already be written to the data file); `completion` runs on
    /// the loop once it (or a later checkpoint) is durable.
    func checkpoint(_ written: ByteRangeSet, completion: (() -> Void)? = nil) {
        precondition(loop.inEventLoop)
        if running {
            var waiting = queued?.1 ?? []
            if let completion { waiting.append(completion) }
            queued = (written, waiting)
            return
        }
        run(written, completions: completion.map { [$0] } ?? [])
    }

    private func run(_ written: ByteRangeSet, completions: [() -> Void]) {
        running = true
        var next = state
        next.durable = written
        runningState = next
        runningCompletions = completions
        let job = Job(journal: journal, path: journalPath, file: file, syncsData: syncsData, state: next)
        BlockingWork.start(name: "haul-checkpoint") { [self] in
            let outcome = job.perform()
            loop.execute { [self] in finished(outcome) }
        }
    }

    private func finished(_ outcome: Result<ResumeJournal, JournalError>) {
        running = false
        switch outcome {
        case .success(let journal):
            self.journal = journal
            lastError = nil
            if let runningState { state = runningState }
        case .failure(let error):
            lastError = error
        }
        let completions = runningCompletions
        runningCompletions = []
        for completion in completions { completion() }
        if let (written, waiting) = queued {
            queued = nil
            run(written, completions: waiting)
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

    /// Deletes the journal (the download finished, or is starting over).
    static func discard(path: String) {
        try? ResumeJournal.remove(path: path)
    }

    /// The blocking part of a checkpoint, handed to the checkpoint thread by value.
    private struct Job: @unchecked Sendable {
        // @unchecked Sendable: `ResumeJournal` and `OutputFile` are safe across threads; one job runs at a time.
        let journal: ResumeJournal?
        let path: String
        let file: OutputFile
        let syncsData: Bool
        let state: JournalState

        func perform() -> Result<ResumeJournal, JournalError> {
            if syncsData {
                do { try file.synchronize() } catch {
                    return .failure(.io(call: "fdatasync", errno: error.errno, path: file.path))
                }
            }
            do {
                if let journal {
                    try journal.checkpoint(state)
                    return .success(journal)
                }
                return .success(try ResumeJournal.create(path: path, state: state))
            } catch {
                return .failure(error)
            }
        }
    }
}
