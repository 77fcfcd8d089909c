/// One entry of a session's durable event log: something that happened to a task, numbered.
///
/// Sequence numbers start at 1 and grow by exactly one per event, for the whole life of the session; an event
/// is on disk (and synced) before anyone hears of it, and it is never rewritten. A client that saw events up
/// to N asks for those after N and misses nothing.
public struct SessionEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// A task was queued: its URL and where the file goes (a path, or a directory for the server's name).
        case added(url: String, path: String?, directory: String?)
        /// The daemon started (or, after a restart or a resume, restarted) the download; `bytes` were already
        /// on disk from an earlier run (its journal).
        case started(bytes: Int64, total: Int64?)
        /// Paused by a client; the journal holds `bytes`.
        case paused(bytes: Int64, total: Int64?)
        /// A paused or failed task was queued again by a client.
        case resumed
        /// The file is complete under its final name, its checksum verified when one was given. `digest` is
        /// `ALGO=HEX` of the file (the given checksum's algorithm, else SHA-256). `recovered` says the daemon
        /// found the finished file at start-up (it had died between the rename and this record).
        case completed(path: String, bytes: Int64, digest: String, recovered: Bool)
        /// The download stopped for good: the engine's error (``TaskFailure/error``, a `HaulError`), its class
        /// and the exit code `haul` gives it.
        ///
        /// Before failures were typed this case carried `(error: String, className: String, code: Int32)`;
        /// those are ``TaskFailure/message``, ``TaskFailure/failureClass`` and ``TaskFailure/exitCode`` now.
        case failed(TaskFailure)
        /// Cancelled by a client; the partial file and its journal are gone.
        case cancelled
        /// The completion hook ran once and exited with `status` (128 + N when killed by signal N).
        case hook(status: Int32)
        /// A client removed the ended task from the session's list (`haul queue remove`): it is no longer
        /// listed or waited for, and no event but its hook's follows; its events stay in the log.
        case removed
    }

    /// Position in the log: 1, 2, 3, ...
    public var sequence: UInt64
    /// Wall-clock time, milliseconds since the Unix epoch.
    public var time: Int64
    /// The task it is about.
    public var task: Int
    public var kind: Kind

    public init(sequence: UInt64, time: Int64, task: Int, kind: Kind) {
        self.sequence = sequence
        self.time = time
        self.task = task
        self.kind = kind
    }

    /// The `type` field: `added`, `started`, `paused`, `resumed`, `completed`, `failed`, `cancelled`, `hook`,
    /// `removed`.
    public var type: String {
        switch kind {
        case .added: "added"
        case .started: "started"
        case .paused: "paused"
        case .resumed: "resumed"
        case .completed: "completed"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .hook: "hook"
        case .removed: "removed"
        }
    }

    /// Whether the task has ended with this event (completed, failed or cancelled).
    public var endsTask: Bool {
        switch kind {
        case .completed, .failed, .cancelled: true
        default: false
        }
    }
}

extension SessionEvent {
    /// The event as one JSON object: `seq`, `time`, `task`, `type`, then the kind's fields
    /// (`docs/sessions.md`, "Events").
    public var json: JSONValue {
        var object = JSONObject()
        object["seq"] = .int(sequence)
        object["time"] = .int(time)
        object["task"] = .int(task)
        object["type"] = .string(type)
        switch kind {
        case .added(let url, let path, let directory):
            object["url"] = .string(url)
            if let path { object["path"] = .string(path) }
            if let directory { object["dir"] = .string(directory) }
        case .started(let bytes, let total), .paused(let bytes, let total):
            object["bytes"] = .int(bytes)
            object["total"] = total.map { .int($0) } ?? .null
        case .resumed, .cancelled, .removed:
            break
        case .completed(let path, let bytes, let digest, let recovered):
            object["path"] = .string(path)
            object["bytes"] = .int(bytes)
            object["digest"] = .string(digest)
            if recovered { object["recovered"] = .bool(true) }
        case .failed(let failure):
            // `error`, `class` and `code` as before failures were structured, for readers that know only those.
            object["error"] = .string(failure.message)
            object["class"] = .string(failure.failureClass.rawValue)
            object["code"] = .int(failure.exitCode)
            object["failure"] = FailureCodec.json(failure)
        case .hook(let status):
            object["status"] = .int(status)
        }
        return .object(object)
    }

    /// Reads an event strictly.
    public init(json value: JSONValue, path: String = "event") throws(SchemaError) {
        var reader = try FieldReader(value, path: path)
        let sequence = UInt64(try reader.integer("seq", in: 1...Int64.max))
        let time = try reader.integer("time", in: 0...Int64.max)
        let task = Int(try reader.integer("task", in: 1...Int64(Int32.max)))
        let type = try reader.string("type", maximumBytes: 16)
        let size: ClosedRange<Int64> = 0...Int64.max
        let kind: Kind
        switch type {
        case "added":
            let path = try reader.optionalString("path", maximumBytes: 4096)
            let directory = try reader.optionalString("dir", maximumBytes: 4096)
            guard (path == nil) != (directory == nil) else {
                throw SchemaError(field: reader.name("path"), "exactly one of path and dir is required")
            }
            kind = .added(url: try reader.string("url", maximumBytes: 8192), path: path, directory: directory)
        case "started", "paused":
            let bytes = try reader.integer("bytes", in: size)
            guard reader.object["total"] != nil else {
                throw SchemaError(field: reader.name("total"), "missing")
            }
            let total = try reader.optionalInteger("total", in: size)
            kind = type == "started" ? .started(bytes: bytes, total: total) : .paused(bytes: bytes, total: total)
        case "resumed": kind = .resumed
        case "cancelled": kind = .cancelled
        case "removed": kind = .removed
        case "completed":
            kind = .completed(path: try reader.string("path", maximumBytes: 4096), bytes: try reader.integer("bytes", in: size),
                              digest: try reader.string("digest", maximumBytes: 300),
                              recovered: try reader.bool("recovered", default: false))
        case "failed":
            let message = try reader.string("error", maximumBytes: FailureCodec.textLimit)
            let className = try reader.string("class", maximumBytes: 32)
            let code = Int32(try reader.integer("code", in: 0...255))
            // Logs written before failures were structured have only the three fields above.
            if reader.has("failure") {
                kind = .failed(try FailureCodec.decode(try reader.value("failure"), path: reader.name("failure")))
            } else {
                kind = .failed(.legacy(message: message, className: className, code: code))
            }
        case "hook":
            kind = .hook(status: Int32(try reader.integer("status", in: 0...255)))
        default:
            throw SchemaError(field: reader.name("type"), "unknown event type \"\(type)\"")
        }
        try reader.finish()
        self.init(sequence: sequence, time: time, task: task, kind: kind)
    }
}

/// Where a task is in its life.
public enum TaskState: String, Sendable, Hashable, CaseIterable {
    /// Waiting for a slot (the daemon's `jobs` and connection cap), or for the daemon to run at all.
    case queued
    case running
    /// Paused by a client; resumes only when a client resumes it.
    case paused
    case completed
    /// Stopped by an error; a client may resume it (it continues from its journal).
    case failed
    case cancelled

    /// Completed, failed or cancelled: `haul queue wait` stops waiting for it.
    public var hasEnded: Bool { self == .completed || self == .failed || self == .cancelled }
}

/// A task as `list` reports it: state, where the file goes, how far it got, how it ended.
public struct TaskInfo: Sendable, Hashable {
    public var id: Int
    public var state: TaskState
    public var url: String
    /// The file's path: the destination of a `.file` task, or the name a directory task's server gave once
    /// known; nil before that.
    public var path: String?
    /// The directory of a `.directory` task.
    public var directory: String?
    /// Bytes of the file on disk (for a running task, as of the latest progress; otherwise from its
    /// journal, or the finished file).
    public var bytes: Int64
    /// The file's length, when known.
    public var total: Int64?
    /// Current rate of a running task, bytes per second.
    public var bytesPerSecond: Int64 = 0
    /// Connections transferring now.
    public var connections: Int = 0
    /// Why it failed, while it is failed: the engine's `HaulError`, its class and exit code.
    public var failure: TaskFailure?
    /// Why it failed, in words (``TaskFailure/message``).
    @available(*, deprecated, message: "use failure?.message, or failure?.error for the HaulError")
    public var error: String? { failure?.message }
    /// The failure's class (`network`, `http`, ...).
    @available(*, deprecated, message: "use failure?.failureClass")
    public var errorClass: String? { failure?.failureClass.rawValue }
    /// The exit code `haul` gives the failure.
    @available(*, deprecated, message: "use failure?.exitCode")
    public var exitCode: Int32? { failure?.exitCode }
    /// `ALGO=HEX` of a completed file.
    public var digest: String?

    public init(id: Int, state: TaskState, url: String, path: String?, directory: String?, bytes: Int64, total: Int64?) {
        self.id = id
        self.state = state
        self.url = url
        self.path = path
        self.directory = directory
        self.bytes = bytes
        self.total = total
    }

    public var json: JSONValue {
        var object = JSONObject()
        object["id"] = .int(id)
        object["state"] = .string(state.rawValue)
        object["url"] = .string(url)
        object["path"] = path.map(JSONValue.string) ?? .null
        if let directory { object["dir"] = .string(directory) }
        object["bytes"] = .int(bytes)
        object["total"] = total.map { .int($0) } ?? .null
        if state == .running {
            object["rate"] = .int(bytesPerSecond)
            object["connections"] = .int(connections)
        }
        if let failure {
            object["error"] = .string(failure.message)
            object["class"] = .string(failure.failureClass.rawValue)
            object["code"] = .int(failure.exitCode)
            object["failure"] = FailureCodec.json(failure)
        }
        if let digest { object["digest"] = .string(digest) }
        return .object(object)
    }

    public init(json value: JSONValue, path fieldPath: String = "task") throws(SchemaError) {
        var reader = try FieldReader(value, path: fieldPath)
        let id = Int(try reader.integer("id", in: 1...Int64(Int32.max)))
        let stateText = try reader.string("state", maximumBytes: 16)
        guard let state = TaskState(rawValue: stateText) else {
            throw SchemaError(field: reader.name("state"), "unknown state \"\(stateText)\"")
        }
        let url = try reader.string("url", maximumBytes: 8192)
        let path = try reader.optionalString("path", maximumBytes: 4096)
        let directory = try reader.optionalString("dir", maximumBytes: 4096)
        let bytes = try reader.integer("bytes", in: 0...Int64.max)
        let total = try reader.optionalInteger("total", in: 0...Int64.max)
        self.init(id: id, state: state, url: url, path: path, directory: directory, bytes: bytes, total: total)
        bytesPerSecond = try reader.optionalInteger("rate", in: 0...Int64.max) ?? 0
        connections = Int(try reader.optionalInteger("connections", in: 0...100_000) ?? 0)
        let message = try reader.optionalString("error", maximumBytes: FailureCodec.textLimit)
        let className = try reader.optionalString("class", maximumBytes: 32)
        let code = try reader.optionalInteger("code", in: 0...255).map { Int32($0) }
        if reader.has("failure") {
            failure = try FailureCodec.decode(try reader.value("failure"), path: reader.name("failure"))
        } else if message != nil || className != nil || code != nil {
            // From a daemon older than structured failures.
            failure = .legacy(message: message ?? "failed", className: className ?? "unexpected", code: code ?? 1)
        }
        digest = try reader.optionalString("digest", maximumBytes: 300)
        try reader.finish()
    }
}

/// What the daemon of a session runs with; stored in the session log, changed by `haul daemon` options.
public struct SessionSettings: Sendable, Hashable {
    /// Downloads running at once.
    public var jobs: Int = 4
    /// Connections all downloads of the session may have open at once.
    public var maximumConnections: Int = 64
    /// A command run by `/bin/sh -c` once for each completed task that has no hook of its own.
    public var hook: String?

    public init(jobs: Int = 4, maximumConnections: Int = 64, hook: String? = nil) {
        self.jobs = jobs
        self.maximumConnections = maximumConnections
        self.hook = hook
    }

    public var json: JSONValue {
        var object = JSONObject()
        object["jobs"] = .int(jobs)
        object["maxConnections"] = .int(maximumConnections)
        if let hook { object["hook"] = .string(hook) }
        return .object(object)
    }

    public init(json value: JSONValue, path: String = "settings") throws(SchemaError) {
        var reader = try FieldReader(value, path: path)
        jobs = Int(try reader.integer("jobs", in: 1...256))
        maximumConnections = Int(try reader.integer("maxConnections", in: 1...4096))
        hook = try reader.optionalString("hook", maximumBytes: 8192)
        try reader.finish()
    }
}
