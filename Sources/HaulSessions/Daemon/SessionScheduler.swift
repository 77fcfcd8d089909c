import Haul

/// The daemon's decisions, as a value: which queued task starts next under the session's limits, what an
/// engine's outcome or a client's pause or cancel does to a task, when a stop may finish, and what a
/// restart recovers. It returns actions; ``SessionDaemon`` carries them out (engines, files, the log,
/// replies). No I/O, no clock: unit-tested with scripted inputs (`SessionSchedulerTests`).
struct SessionScheduler: Sendable {
    /// Where the engine of a task is.
    enum Phase: Sendable, Equatable {
        /// Downloading (or connecting).
        case active
        /// Held paused in this process: a resume continues it without a new engine.
        case paused
        /// Finished; the digest is being computed before the completion is recorded.
        case finishing
    }

    /// What a client asked of a running engine, which its outcome answers.
    enum Intent: Sendable, Equatable { case none, pause, cancel }

    /// One task's engine, as far as decisions go.
    struct Slot: Sendable, Equatable {
        var phase: Phase = .active
        var intent: Intent = .none
        /// Connections it counts against the session's cap.
        let connections: Int
        /// Whether the daemon created the task's `.part` for this start (it may remove it if nothing was written).
        let createdPart: Bool
    }

    private(set) var slots: [Int: Slot] = [:]
    /// Tasks whose files are being removed for a cancel.
    private(set) var cancelling: Set<Int> = []
    /// A stop has begun: nothing new starts.
    private(set) var isStopping = false

    // MARK: Scheduling

    /// A task to start.
    enum Start: Sendable, Equatable {
        /// Its engine is held paused in this process: continue it.
        case continueHeld(id: Int)
        /// Start a new engine with `connections` (the task's, within the cap).
        case new(id: Int, connections: Int)

        var id: Int {
            switch self {
            case .continueHeld(let id), .new(let id, _): id
            }
        }
    }

    /// The queued tasks to start now, oldest first, while fewer than `jobs` run and their connections fit the
    /// cap (one task always runs, whatever its connections, so that a cap below a task's own count cannot
    /// stall the queue). The caller starts them in order and reports each with ``started(_:createdPart:)``;
    /// one that cannot start is simply not reported.
    func startsDue(_ tasks: [SessionState.Task], settings: SessionSettings) -> [Start] {
        guard !isStopping else { return [] }
        let active = slots.values.filter { $0.phase != .paused }
        var running = active.count
        var reserved = active.reduce(0) { $0 + $1.connections }
        var starts: [Start] = []
        for task in tasks where task.state == .queued || task.state == .running {
            if let slot = slots[task.id], slot.phase != .paused { continue }
            if cancelling.contains(task.id) { continue }
            guard running < settings.jobs else { break }
            let need = min(task.spec.options.connections, settings.maximumConnections)
            if running > 0 && reserved + need > settings.maximumConnections { break }
            starts.append(slots[task.id] == nil ? .new(id: task.id, connections: need) : .continueHeld(id: task.id))
            running += 1
            reserved += need
        }
        return starts
    }

    /// `start` has begun running (a new engine, or a held one continued).
    mutating func started(_ start: Start, createdPart: Bool = false) {
        switch start {
        case .continueHeld(let id):
            slots[id]?.phase = .active
            slots[id]?.intent = .none
        case .new(let id, let connections):
            slots[id] = Slot(connections: connections, createdPart: createdPart)
        }
    }

    // MARK: Engine outcomes

    /// How an engine's download ended.
    enum Outcome: Sendable {
        case completed
        case failed(HaulError, bytesWritten: Int64)
        /// Its pause returned with the download paused.
        case paused
    }

    /// What an outcome does to the task.
    enum OutcomeAction: Sendable, Equatable {
        /// Nothing (the engine is no longer the task's, or the outcome answers nothing).
        case none
        /// Compute the file's digest, then record the completion (``completionRecorded(_:)``).
        case computeDigest
        /// Record the failure; remove an empty `.part` the daemon created for this start when `removeEmptyPart`.
        case recordFailure(TaskFailure, removeEmptyPart: Bool)
        /// Record the cancel a client asked for.
        case recordCancelled
        /// Forget the engine without recording anything: a stop cancelled it, the task runs with the next daemon.
        case forget
        /// Record the pause a client asked for (the journal is complete).
        case recordPaused
    }

    /// Decides what `outcome` of task `id`'s engine does, given the task's state in the log.
    mutating func engineEnded(_ id: Int, _ outcome: Outcome, taskState: TaskState?) -> OutcomeAction {
        guard let slot = slots[id] else { return .none }
        switch outcome {
        case .completed:
            slots[id]?.phase = .finishing
            return .computeDigest
        case .failed(let error, _) where error.isCancelled:
            // A cancel that reached an engine whose download had already completed: the file is whole at its
            // destination, and the completion being recorded settles the task (and answers the cancel).
            if slot.phase == .finishing { return .none }
            slots[id] = nil
            if slot.intent == .cancel, let taskState, !taskState.hasEnded { return .recordCancelled }
            return .forget
        case .failed(let error, let bytesWritten):
            slots[id] = nil
            guard let taskState, !taskState.hasEnded else { return .forget }
            // Another download holds the `.part`: it is that download's, never removed here.
            let removable: Bool
            if case .destinationBusy = error.reason { removable = false } else { removable = slot.createdPart }
            return .recordFailure(TaskFailure(error), removeEmptyPart: removable && bytesWritten == 0)
        case .paused:
            // Ended meanwhile (completed, failed, cancelled): that outcome settles the task instead.
            guard slot.phase == .active, slot.intent == .pause else { return .none }
            slots[id]?.phase = .paused
            slots[id]?.intent = .none
            return .recordPaused
        }
    }

    /// The completion of task `id` is recorded (or could not be): its engine is gone.
    mutating func completionRecorded(_ id: Int) {
        slots[id] = nil
    }

    // MARK: Client requests

    /// What a client's pause does.
    enum PauseAction: Sendable, Equatable {
        /// The task is not queued or running: nothing to do.
        case none
        /// No engine: record the pause with the bytes its journal holds.
        case recordFromJournal
        /// Its engine is held paused already: record the pause with the engine's bytes.
        case recordHeld
        /// Its engine is finishing: answer once the completion is recorded.
        case waitForOutcome
        /// Pause the engine; its ``Outcome/paused`` answers.
        case pauseEngine
    }

    mutating func pause(_ id: Int, taskState: TaskState?) -> PauseAction {
        guard taskState == .queued || taskState == .running else { return .none }
        guard let slot = slots[id] else { return .recordFromJournal }
        switch slot.phase {
        case .finishing: return .waitForOutcome
        case .paused: return .recordHeld
        case .active:
            slots[id]?.intent = .pause
            return .pauseEngine
        }
    }

    /// Whether a client's resume records anything: only a paused or failed task is queued again.
    static func resumes(taskState: TaskState?) -> Bool {
        taskState == .paused || taskState == .failed
    }

    /// What a client's cancel does.
    enum CancelAction: Sendable, Equatable {
        /// Completed or cancelled already, or unknown.
        case none
        /// Its engine is finishing, or its files are being removed: answer once that outcome is recorded.
        case waitForOutcome
        /// Cancel the engine; its outcome (a cancelled failure) answers.
        case cancelEngine
        /// No engine: remove its files, then record the cancel (``filesRemoved(_:taskState:)``).
        case removeFiles
    }

    mutating func cancel(_ id: Int, taskState: TaskState?) -> CancelAction {
        guard let taskState, taskState != .completed, taskState != .cancelled else { return .none }
        if let slot = slots[id] {
            if slot.phase == .finishing { return .waitForOutcome }
            slots[id]?.intent = .cancel
            return .cancelEngine
        }
        if cancelling.contains(id) { return .waitForOutcome }
        cancelling.insert(id)
        return .removeFiles
    }

    /// The files of a cancelled task without an engine are gone; returns whether to record the cancel.
    mutating func filesRemoved(_ id: Int, taskState: TaskState?) -> Bool {
        cancelling.remove(id)
        guard let taskState else { return false }
        return taskState != .completed && taskState != .cancelled
    }

    // MARK: Stopping

    /// A stop begins: returns the tasks whose engines to pause (each writes its journal).
    mutating func beginStop() -> [Int] {
        isStopping = true
        return slots.filter { $0.value.phase == .active }.map(\.key).sorted()
    }

    /// Whether a stop may finish: every pause returned, no completion being recorded, no files being removed.
    func stopMayFinish(pausesLeft: Int) -> Bool {
        isStopping && pausesLeft == 0 && !slots.values.contains { $0.phase == .finishing } && cancelling.isEmpty
    }

    /// Whether the daemon has work that keeps it from an idle exit (hooks and clients aside).
    func isBusy(_ tasks: [SessionState.Task]) -> Bool {
        slots.values.contains { $0.phase != .paused } || !cancelling.isEmpty
            || tasks.contains { $0.state == .queued || $0.state == .running }
    }

    // MARK: Views and recovery

    /// The state `list` shows: a task the log says runs but that has no active engine here is queued.
    func listedState(_ task: SessionState.Task) -> TaskState {
        guard task.state == .running else { return task.state }
        guard let slot = slots[task.id], slot.phase != .paused else { return .queued }
        return .running
    }

    /// The identity of a file as `lstat` gives it.
    struct FileFacts: Sendable, Equatable {
        var isRegularFile: Bool
        var device: UInt64
        var inode: UInt64
        var size: Int64
    }

    /// Whether `task`, which a restarted daemon finds running (or queued after a start), completed just
    /// before the last daemon died, between the rename and the record: the file at its destination is the
    /// `.part` its start recorded (same device and inode) and no `.part` is left.
    static func completedBeforeRestart(_ task: SessionState.Task, destination: FileFacts?, partialExists: Bool) -> Bool {
        guard mayHaveCompletedBeforeRestart(task), let part = task.part,
              let destination, destination.isRegularFile, !partialExists else { return false }
        return destination.device == part.device && destination.inode == part.inode
    }

    /// Whether `task` is one whose files a restarted daemon looks at (running, or queued after a start, with a
    /// recorded `.part`): the others need no `lstat`.
    static func mayHaveCompletedBeforeRestart(_ task: SessionState.Task) -> Bool {
        (task.state == .running || task.state == .queued) && task.starts > 0 && task.part != nil
    }
}
