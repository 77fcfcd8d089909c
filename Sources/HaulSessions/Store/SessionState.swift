/// A record that does not fit the log before it (an event for a task that does not exist, a completion of a
/// cancelled task, a sequence number out of turn).
public struct SessionStateError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// What a session's log says, folded: the queue (every task with its spec and state), the events, each
/// consumer's acknowledged position, the settings. Pure: the same records always give the same state, and a
/// record that does not follow from the ones before is refused without changing anything.
public struct SessionState: Sendable {
    /// The hook of a completed task.
    public enum HookState: Sendable, Hashable {
        /// No hook was configured when the task completed.
        case none
        /// A hook is owed and has not started (the daemon runs it, even after a restart).
        case owed(command: String)
        /// It started; it is never started again, whatever happens to the daemon.
        case started(command: String)
        case finished(status: Int32)
    }

    /// One task of the queue.
    public struct Task: Sendable, Hashable {
        public let id: Int
        public let spec: TaskSpec
        /// What its events say: state, bytes, completion, failure (the fold clients share).
        public internal(set) var lifecycle = TaskLifecycle()
        /// The partial file it writes, as recorded by its latest start.
        public internal(set) var part: PartIdentity?
        public internal(set) var hook: HookState = .none

        public var state: TaskState { lifecycle.state }
        /// How many `started` events it has had.
        public var starts: Int { lifecycle.starts }
        /// Bytes and total as of its latest `started` or `paused` event.
        public var bytes: Int64 { lifecycle.bytes }
        public var total: Int64? { lifecycle.total }
        /// Its completion: the event's sequence number, the path, bytes and digest.
        public var completion: (sequence: UInt64, path: String, bytes: Int64, digest: String)? { lifecycle.completion }
        /// Why it failed, while it is failed.
        public var failure: TaskFailure? { lifecycle.failure }
        /// Removed from the session's list by a client (it had ended): not listed, not waited for.
        public var removed: Bool { lifecycle.removed }

        init(id: Int, spec: TaskSpec) {
            self.id = id
            self.spec = spec
        }

        public static func == (lhs: Task, rhs: Task) -> Bool {
            lhs.id == rhs.id && lhs.spec == rhs.spec && lhs.lifecycle == rhs.lifecycle && lhs.part == rhs.part && lhs.hook == rhs.hook
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(id)
            hasher.combine(state)
        }

        /// The final path when known: a `.file` destination, or what the latest start recorded.
        public var knownPath: String? { completion?.path ?? spec.filePath ?? part?.path }

        /// The hook command this task's completion runs: its own, else the session's.
        func hookCommand(settings: SessionSettings) -> String? { spec.hook ?? settings.hook }
    }

    public private(set) var tasks: [Task] = []
    public private(set) var events: [SessionEvent] = []
    public private(set) var acknowledgements: [String: UInt64] = [:]
    public private(set) var settings = SessionSettings()
    /// Records applied so far (the next record's number is this plus one).
    public private(set) var recordCount: UInt64 = 0

    public init() {}

    /// The sequence number of the latest event (0 before the first).
    public var lastSequence: UInt64 { events.last?.sequence ?? 0 }
    /// The id the next added task gets.
    public var nextTaskID: Int { tasks.count + 1 }

    public func task(_ id: Int) -> Task? {
        guard id >= 1, id <= tasks.count else { return nil }
        return tasks[id - 1]
    }

    /// Events after `sequence`, in order.
    public func events(after sequence: UInt64) -> ArraySlice<SessionEvent> {
        // Sequence numbers are 1, 2, 3, ...: event N is at index N-1.
        let start = Int(min(sequence, UInt64(events.count)))
        return events[start...]
    }

    /// The folded state of `records`, or the first that does not fit (with its index).
    public static func replay(_ records: [LogRecord]) throws(IndexedStateError) -> SessionState {
        var state = SessionState()
        for (index, record) in records.enumerated() {
            do { try state.apply(record) } catch { throw IndexedStateError(index: index, error: error) }
        }
        return state
    }

    /// A state error and the index of the record that caused it.
    public struct IndexedStateError: Error, Sendable {
        public var index: Int
        public var error: SessionStateError
    }

    /// Applies one record, or throws and changes nothing.
    public mutating func apply(_ record: LogRecord) throws(SessionStateError) {
        switch record {
        case .event(let event, let spec, let part):
            try applyEvent(event, spec: spec, part: part)
        case .acknowledged(let consumer, let sequence):
            guard sequence <= lastSequence else {
                throw SessionStateError("acknowledgement of event \(sequence), beyond the last event \(lastSequence)")
            }
            if let previous = acknowledgements[consumer], previous > sequence {
                throw SessionStateError("acknowledgement of event \(sequence) by \(consumer) after \(previous)")
            }
            acknowledgements[consumer] = sequence
        case .settings(let settings):
            self.settings = settings
        case .hookStarted(let id):
            guard let task = task(id) else { throw SessionStateError("hook of task \(id), which does not exist") }
            guard case .owed(let command) = task.hook else {
                throw SessionStateError("hook of task \(id) started, but none was owed (\(task.hook))")
            }
            tasks[id - 1].hook = .started(command: command)
        case .part(let id, let part):
            guard let task = task(id) else { throw SessionStateError("part file of task \(id), which does not exist") }
            guard task.state == .running else {
                throw SessionStateError("part file of task \(id), which is \(task.state.rawValue)")
            }
            tasks[id - 1].part = part
        }
        recordCount += 1
    }

    private mutating func applyEvent(_ event: SessionEvent, spec: TaskSpec?, part: PartIdentity?) throws(SessionStateError) {
        guard event.sequence == lastSequence + 1 else {
            throw SessionStateError("event \(event.sequence) where \(lastSequence + 1) was due")
        }
        if case .added = event.kind {
            guard event.task == nextTaskID else {
                throw SessionStateError("task \(event.task) added where task \(nextTaskID) was due")
            }
            guard let spec else { throw SessionStateError("task \(event.task) added without its spec") }
            tasks.append(Task(id: event.task, spec: spec))
            events.append(event)
            return
        }
        guard let current = task(event.task) else {
            throw SessionStateError("\(event.type) event for task \(event.task), which does not exist")
        }
        var task = current
        if task.removed {
            // Only the hook of a completion, which may still be running, can follow a removal.
            guard case .hook = event.kind else {
                throw SessionStateError("\(event.type) event for task \(task.id), which was removed")
            }
        }
        switch event.kind {
        case .added:
            break  // handled above
        case .started:
            try task.lifecycle.apply(event)
            if let part { task.part = part }
        case .completed:
            try task.lifecycle.apply(event)
            task.hook = task.hookCommand(settings: settings).map { .owed(command: $0) } ?? .none
        case .hook(let status):
            guard case .started = task.hook else {
                throw SessionStateError("hook event for task \(task.id), whose hook had not started")
            }
            task.hook = .finished(status: status)
        case .paused, .resumed, .failed, .cancelled, .removed:
            try task.lifecycle.apply(event)
        }
        tasks[task.id - 1] = task
        events.append(event)
    }
}
