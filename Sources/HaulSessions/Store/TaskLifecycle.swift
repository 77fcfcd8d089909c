/// What one task's events say about it, folded: its state, its bytes, how it ended. The one fold of a
/// task's events, shared by the daemon's ``SessionState`` (which refuses an event that does not follow) and
/// a client's ``SessionTask`` (which applies the events pushed after a snapshot of the daemon's).
public struct TaskLifecycle: Sendable {
    public internal(set) var state: TaskState = .queued
    /// How many `started` events it has had.
    public internal(set) var starts = 0
    /// Bytes and total as of its latest `started` or `paused` event, or its completion.
    public internal(set) var bytes: Int64 = 0
    public internal(set) var total: Int64?
    /// Its completion: the event's sequence number, the path, bytes and digest.
    public internal(set) var completion: (sequence: UInt64, path: String, bytes: Int64, digest: String)?
    /// Why it failed, while it is failed.
    public internal(set) var failure: TaskFailure?
    /// Removed from the session's list by a client (it had ended).
    public internal(set) var removed = false

    public init() {}

    /// The states in which `kind` may happen to a task; nil when any state allows it (`added` and `hook`
    /// are checked by the session's state itself).
    static func allowedStates(for kind: SessionEvent.Kind) -> [TaskState]? {
        switch kind {
        case .added, .hook: nil
        case .started: [.queued, .running]
        case .paused, .completed, .failed: [.queued, .running, .paused]
        case .resumed: [.paused, .failed]
        case .cancelled: [.queued, .running, .paused, .failed]
        case .removed: [.completed, .failed, .cancelled]
        }
    }

    /// Applies `event`; throws and changes nothing when the task's state does not allow it.
    public mutating func apply(_ event: SessionEvent) throws(SessionStateError) {
        if let allowed = Self.allowedStates(for: event.kind), !allowed.contains(state) {
            throw SessionStateError("\(event.type) event for task \(event.task), which is \(state.rawValue)")
        }
        force(event)
    }

    /// Applies `event` whatever the task's state: a client's snapshot may be older or newer than the push.
    mutating func force(_ event: SessionEvent) {
        switch event.kind {
        case .added, .hook:
            break
        case .started(let bytes, let total):
            state = .running
            starts += 1
            self.bytes = bytes
            self.total = total
        case .paused(let bytes, let total):
            state = .paused
            self.bytes = bytes
            self.total = total
        case .resumed:
            state = .queued
            failure = nil
        case .completed(let path, let bytes, let digest, _):
            state = .completed
            self.bytes = bytes
            total = bytes
            completion = (event.sequence, path, bytes, digest)
        case .failed(let failure):
            state = .failed
            self.failure = failure
        case .cancelled:
            state = .cancelled
            failure = nil
        case .removed:
            removed = true
        }
    }
}

extension TaskLifecycle: Equatable {
    public static func == (lhs: TaskLifecycle, rhs: TaskLifecycle) -> Bool {
        lhs.state == rhs.state && lhs.starts == rhs.starts && lhs.bytes == rhs.bytes && lhs.total == rhs.total
            && lhs.completion?.sequence == rhs.completion?.sequence && lhs.completion?.path == rhs.completion?.path
            && lhs.completion?.bytes == rhs.completion?.bytes && lhs.completion?.digest == rhs.completion?.digest
            && lhs.failure == rhs.failure && lhs.removed == rhs.removed
    }
}

extension TaskInfo {
    /// The info with `event` applied (the client's side of the fold): state, bytes, path, digest, failure.
    func applying(_ event: SessionEvent) -> TaskInfo {
        var lifecycle = TaskLifecycle()
        lifecycle.state = state
        lifecycle.bytes = bytes
        lifecycle.total = total
        lifecycle.failure = failure
        lifecycle.force(event)
        var info = self
        info.state = lifecycle.state
        info.bytes = lifecycle.bytes
        info.total = lifecycle.total
        info.failure = lifecycle.failure
        if let completion = lifecycle.completion {
            info.path = completion.path
            info.digest = completion.digest
        }
        return info
    }
}
