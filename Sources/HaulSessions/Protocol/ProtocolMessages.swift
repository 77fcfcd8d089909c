import Haul

/// The daemon protocol: JSON lines over the session's Unix socket (`docs/sessions.md`, "Protocol").
///
/// Every line is one JSON object ending in `\n`, at most ``maximumLineBytes``. A client sends requests with
/// an `id` of its choosing and an `op`; the daemon answers each with a reply carrying the same `id` and
/// `ok`, in the order the requests came, and may send `push` lines (events, progress) in between.
public enum SessionProtocol {
    /// The protocol version `hello` negotiates. A client and a daemon of different versions do not talk:
    /// the client stops at ``SessionError/incompatibleDaemon(_:)``.
    ///
    /// 2: `hello`'s answer names the daemon's Haul version and executable, and is given whatever version the
    /// client speaks (the client decides; a client of protocol 1 is refused in words it can read).
    public static let version = 2
    /// The Haul release this library is part of, which a daemon states in its `hello` answer (the `haul`
    /// command's `HaulVersion.number` is this one).
    public static let haulVersion = "0.2.0"
    /// Longest line either side accepts, newline included.
    public static let maximumLineBytes = 2 << 20
    /// Most tasks one request may name.
    public static let maximumTaskIDs = 10_000
    /// Most events one `events` reply carries.
    public static let maximumEventsPerReply = 1000
}

/// What a client asks the daemon.
public enum SessionRequest: Sendable, Hashable {
    /// The first request on a connection: which protocol the client speaks.
    case hello(protocolVersion: Int)
    /// Queue a task; the reply comes once its `added` event is durable.
    case add(TaskSpec)
    /// The tasks (all, or those named), and the latest event's sequence number.
    case list(tasks: [Int]?)
    case pause(tasks: [Int])
    case resume(tasks: [Int])
    case cancel(tasks: [Int])
    /// Remove ended tasks from the list (a `removed` event each); the reply comes once they are durable.
    case remove(tasks: [Int])
    /// Events after `after`, at most `limit`.
    case events(after: UInt64, limit: Int)
    /// Push every event after a position — `after`, or what `consumer` has acknowledged — then every new
    /// one as it happens; with `progress`, progress of running tasks too.
    case subscribe(after: UInt64?, consumer: String?, progress: Bool)
    /// `consumer` has processed every event up to `sequence`; the reply comes once that is durable.
    case acknowledge(consumer: String, sequence: UInt64)
    /// Stop the daemon cleanly (every running download checkpointed); the reply comes before it exits.
    case stop

    public var operation: String {
        switch self {
        case .hello: "hello"
        case .add: "add"
        case .list: "list"
        case .pause: "pause"
        case .resume: "resume"
        case .cancel: "cancel"
        case .remove: "remove"
        case .events: "events"
        case .subscribe: "subscribe"
        case .acknowledge: "ack"
        case .stop: "stop"
        }
    }
}

/// A failed request: a code a program can act on, and a message for a person.
public struct RemoteFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// `bad-request`, `unknown-task`, `not-ended` (a `remove` of a task still queued, running or paused),
    /// `unsupported-protocol`, `store`, `stopping`, `refused`.
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    public static func badRequest(_ message: String) -> RemoteFailure { RemoteFailure(code: "bad-request", message: message) }
}

/// The body of a successful reply; which fields are present depends on the request.
public struct ReplyBody: Sendable, Hashable {
    /// `hello`: the daemon's protocol version, session identifier and process id.
    public var protocolVersion: Int?
    public var session: String?
    public var pid: Int32?
    /// `hello` (protocol 2 on): the daemon's Haul version (``SessionProtocol/haulVersion``) and the
    /// executable it runs from, when it can tell.
    public var haulVersion: String?
    public var executable: String?
    /// The latest event's sequence number (`hello`, `list`, `pause`, `resume`, `cancel`, `events`, `subscribe`).
    public var sequence: UInt64?
    /// `subscribe`: pushes follow for events after this one.
    public var after: UInt64?
    /// `add`: the new task.
    public var task: TaskInfo?
    /// `list`, `pause`, `resume`, `cancel`, `subscribe`: the tasks.
    public var tasks: [TaskInfo]?
    /// `events`: the events, and whether more follow.
    public var events: [SessionEvent]?
    public var more: Bool?

    public init() {}
}

/// Progress of one running task, as `progress` pushes carry it.
public struct TaskProgress: Sendable, Hashable {
    public var id: Int
    /// `connecting`, `downloading`, `finishing`.
    public var phase: String
    public var bytes: Int64
    public var total: Int64?
    public var bytesPerSecond: Int64
    public var connections: Int
    /// The file being written (`NAME.part`), once known.
    public var partialPath: String?

    public init(id: Int, phase: String, bytes: Int64, total: Int64?, bytesPerSecond: Int64, connections: Int, partialPath: String?) {
        self.id = id
        self.phase = phase
        self.bytes = bytes
        self.total = total
        self.bytesPerSecond = bytesPerSecond
        self.connections = connections
        self.partialPath = partialPath
    }
}

/// A line from the daemon.
public enum DaemonMessage: Sendable, Hashable {
    /// The answer to request `id` (nil only when the request was too broken to have one).
    case reply(id: Int64?, Result<ReplyBody, RemoteFailure>)
    /// A new (or replayed) event, for a subscriber.
    case event(SessionEvent)
    /// Progress of the running tasks, for a subscriber that asked for it.
    case progress([TaskProgress])
}

/// Encodes and decodes protocol lines; pure, strict, bounded.
public enum ProtocolCodec {
    // MARK: Requests

    public static func encode(_ request: SessionRequest, id: Int64) -> [UInt8] {
        var object = JSONObject()
        object["id"] = .int(id)
        object["op"] = .string(request.operation)
        switch request {
        case .hello(let version): object["protocol"] = .int(version)
        case .add(let spec): object["spec"] = spec.json
        case .list(let tasks): if let tasks { object["tasks"] = .array(tasks.map { .int($0) }) }
        case .pause(let tasks), .resume(let tasks), .cancel(let tasks), .remove(let tasks): object["tasks"] = .array(tasks.map { .int($0) })
        case .events(let after, let limit):
            object["after"] = .int(after)
            object["limit"] = .int(limit)
        case .subscribe(let after, let consumer, let progress):
            if let after { object["after"] = .int(after) }
            if let consumer { object["consumer"] = .string(consumer) }
            if progress { object["progress"] = .bool(true) }
        case .acknowledge(let consumer, let sequence):
            object["consumer"] = .string(consumer)
            object["seq"] = .int(sequence)
        case .stop: break
        }
        return line(.object(object))
    }

    /// A request line that cannot be decoded; `id` is the request's id when that much could be read, so the
    /// error reply can carry it.
    public struct RequestError: Error, Sendable, Hashable {
        public var id: Int64?
        public var message: String
    }

    public static func decodeRequest(_ line: some Collection<UInt8>) throws(RequestError) -> (id: Int64, request: SessionRequest) {
        let object: JSONObject
        do { object = try JSONParser.parseObject(line) } catch { throw RequestError(id: nil, message: error.description) }
        let id = object["id"]?.int64
        do {
            var reader = FieldReader(object)
            let requestID = try reader.integer("id", in: 0...Int64.max)
            let operation = try reader.string("op", maximumBytes: 16)
            let ids: (inout FieldReader) throws(SchemaError) -> [Int] = { reader throws(SchemaError) in
                try reader.integerArray("tasks", maximumCount: SessionProtocol.maximumTaskIDs, in: 1...Int64(Int32.max)).map { Int($0) }
            }
            let request: SessionRequest
            switch operation {
            case "hello": request = .hello(protocolVersion: Int(try reader.integer("protocol", in: 0...1000)))
            case "add": request = .add(try TaskSpec(json: try reader.value("spec")))
            case "list": request = .list(tasks: reader.has("tasks") ? try ids(&reader) : nil)
            case "pause": request = .pause(tasks: try ids(&reader))
            case "resume": request = .resume(tasks: try ids(&reader))
            case "cancel": request = .cancel(tasks: try ids(&reader))
            case "remove": request = .remove(tasks: try ids(&reader))
            case "events":
                request = .events(after: UInt64(try reader.optionalInteger("after", in: 0...Int64.max) ?? 0),
                                  limit: Int(try reader.optionalInteger("limit", in: 1...Int64(SessionProtocol.maximumEventsPerReply))
                                      ?? Int64(SessionProtocol.maximumEventsPerReply)))
            case "subscribe":
                let after = try reader.optionalInteger("after", in: 0...Int64.max).map { UInt64($0) }
                let consumer = try reader.optionalString("consumer", maximumBytes: 64)
                if let consumer, !SessionPaths.isValidName(consumer) {
                    throw SchemaError(field: "consumer", "invalid consumer name \"\(consumer)\"")
                }
                if after != nil && consumer != nil { throw SchemaError(field: "after", "give after or consumer, not both") }
                request = .subscribe(after: after, consumer: consumer, progress: try reader.bool("progress", default: false))
            case "ack":
                let consumer = try reader.string("consumer", maximumBytes: 64)
                guard SessionPaths.isValidName(consumer) else { throw SchemaError(field: "consumer", "invalid consumer name \"\(consumer)\"") }
                request = .acknowledge(consumer: consumer, sequence: UInt64(try reader.integer("seq", in: 0...Int64.max)))
            case "stop": request = .stop
            default: throw SchemaError(field: "op", "unknown operation \"\(operation)\"")
            }
            try reader.finish()
            return (requestID, request)
        } catch {
            throw RequestError(id: id, message: String(describing: error))
        }
    }

    // MARK: Daemon messages

    public static func encode(_ message: DaemonMessage) -> [UInt8] {
        var object = JSONObject()
        switch message {
        case .reply(let id, let result):
            object["id"] = id.map { .int($0) } ?? .null
            switch result {
            case .success(let body):
                object["ok"] = .bool(true)
                if let value = body.protocolVersion { object["protocol"] = .int(value) }
                if let value = body.session { object["session"] = .string(value) }
                if let value = body.pid { object["pid"] = .int(value) }
                if let value = body.haulVersion { object["haul"] = .string(value) }
                if let value = body.executable { object["executable"] = .string(value) }
                if let value = body.sequence { object["seq"] = .int(value) }
                if let value = body.after { object["after"] = .int(value) }
                if let value = body.task { object["task"] = value.json }
                if let value = body.tasks { object["tasks"] = .array(value.map(\.json)) }
                if let value = body.events { object["events"] = .array(value.map(\.json)) }
                if let value = body.more { object["more"] = .bool(value) }
            case .failure(let failure):
                object["ok"] = .bool(false)
                object["code"] = .string(failure.code)
                object["error"] = .string(failure.message)
            }
        case .event(let event):
            object["push"] = .string("event")
            object["event"] = event.json
        case .progress(let tasks):
            object["push"] = .string("progress")
            object["tasks"] = .array(tasks.map { progress in
                var entry = JSONObject()
                entry["id"] = .int(progress.id)
                entry["phase"] = .string(progress.phase)
                entry["bytes"] = .int(progress.bytes)
                entry["total"] = progress.total.map { .int($0) } ?? .null
                entry["rate"] = .int(progress.bytesPerSecond)
                entry["connections"] = .int(progress.connections)
                if let path = progress.partialPath { entry["partial"] = .string(path) }
                return .object(entry)
            })
        }
        return line(.object(object))
    }

    public static func decodeDaemonMessage(_ line: some Collection<UInt8>) throws(SessionError) -> DaemonMessage {
        do {
            let object = try JSONParser.parseObject(line)
            var reader = FieldReader(object)
            if let push = try reader.optionalString("push", maximumBytes: 16) {
                switch push {
                case "event":
                    let event = try SessionEvent(json: try reader.value("event"))
                    try reader.finish()
                    return .event(event)
                case "progress":
                    var tasks: [TaskProgress] = []
                    for (index, item) in (try reader.optionalArray("tasks", maximumCount: 100_000) ?? []).enumerated() {
                        var entry = try FieldReader(item, path: "tasks[\(index)]")
                        tasks.append(TaskProgress(
                            id: Int(try entry.integer("id", in: 1...Int64(Int32.max))),
                            phase: try entry.string("phase", maximumBytes: 16),
                            bytes: try entry.integer("bytes", in: 0...Int64.max),
                            total: try entry.optionalInteger("total", in: 0...Int64.max),
                            bytesPerSecond: try entry.integer("rate", in: 0...Int64.max),
                            connections: Int(try entry.integer("connections", in: 0...100_000)),
                            partialPath: try entry.optionalString("partial", maximumBytes: 4096)))
                        try entry.finish()
                    }
                    try reader.finish()
                    return .progress(tasks)
                default:
                    throw SchemaError(field: "push", "unknown push \"\(push)\"")
                }
            }
            let id = try reader.optionalInteger("id", in: 0...Int64.max)
            reader.ignore("id")
            guard let ok = try reader.optionalBool("ok") else { throw SchemaError(field: "ok", "missing") }
            if !ok {
                let failure = RemoteFailure(code: try reader.string("code", maximumBytes: 64), message: try reader.string("error"))
                try reader.finish()
                return .reply(id: id, .failure(failure))
            }
            var body = ReplyBody()
            body.protocolVersion = try reader.optionalInteger("protocol", in: 0...1000).map { Int($0) }
            // The `hello` answer of a daemon of another protocol version is read for who it is, not judged
            // by this version's fields: the client refuses it by its version (`SessionProtocol.helloRefusal`).
            if let daemonVersion = body.protocolVersion, daemonVersion != SessionProtocol.version {
                body.haulVersion = try? reader.optionalString("haul", maximumBytes: 64)
                body.executable = try? reader.optionalString("executable", maximumBytes: 4096)
                body.pid = (try? reader.optionalInteger("pid", in: 1...Int64(Int32.max))).flatMap { $0.map { Int32($0) } }
                return .reply(id: id, .success(body))
            }
            body.haulVersion = try reader.optionalString("haul", maximumBytes: 64)
            body.executable = try reader.optionalString("executable", maximumBytes: 4096)
            body.session = try reader.optionalString("session", maximumBytes: 64)
            body.pid = try reader.optionalInteger("pid", in: 1...Int64(Int32.max)).map { Int32($0) }
            body.sequence = try reader.optionalInteger("seq", in: 0...Int64.max).map { UInt64($0) }
            body.after = try reader.optionalInteger("after", in: 0...Int64.max).map { UInt64($0) }
            if reader.has("task") { body.task = try TaskInfo(json: try reader.value("task")) }
            reader.ignore("task")
            if let items = try reader.optionalArray("tasks", maximumCount: 10_000_000) {
                var tasks: [TaskInfo] = []
                for (index, item) in items.enumerated() { tasks.append(try TaskInfo(json: item, path: "tasks[\(index)]")) }
                body.tasks = tasks
            }
            if let items = try reader.optionalArray("events", maximumCount: SessionProtocol.maximumEventsPerReply) {
                var events: [SessionEvent] = []
                for (index, item) in items.enumerated() { events.append(try SessionEvent(json: item, path: "events[\(index)]")) }
                body.events = events
            }
            body.more = try reader.optionalBool("more")
            try reader.finish()
            return .reply(id: id, .success(body))
        } catch let error as JSONParseError {
            throw .protocolViolation(error.description)
        } catch let error as SchemaError {
            throw .protocolViolation(error.description)
        } catch {
            throw .protocolViolation(String(describing: error))
        }
    }

    static func line(_ value: JSONValue) -> [UInt8] {
        var bytes = Array(value.serialized.utf8)
        bytes.append(0x0A)
        return bytes
    }
}

/// Splits a byte stream into lines, refusing one longer than a limit before buffering it whole.
public struct LineSplitter: Sendable {
    public let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    /// How much of `buffer` is known to hold no newline.
    private var scanned = 0

    public init(maximumLineBytes: Int = SessionProtocol.maximumLineBytes) {
        self.maximumLineBytes = maximumLineBytes
    }

    public struct LineTooLong: Error, Sendable {}

    /// Adds bytes; returns the complete lines they finish (without the newline).
    public mutating func feed(_ bytes: some Collection<UInt8>) throws(LineTooLong) -> [[UInt8]] {
        buffer.append(contentsOf: bytes)
        var lines: [[UInt8]] = []
        var start = 0
        var index = start + scanned
        while index < buffer.count {
            if buffer[index] == 0x0A {
                lines.append(Array(buffer[start..<index]))
                start = index + 1
            }
            index += 1
        }
        if start > 0 { buffer.removeFirst(start) }
        scanned = buffer.count
        guard buffer.count < maximumLineBytes else { throw LineTooLong() }
        return lines
    }

    /// Bytes received after the last complete line.
    public var pendingByteCount: Int { buffer.count }
}

extension TaskProgress {
    /// The `phase` field of a progress report: the phase's name as `haul --progress json` writes it
    /// (`connecting`, `downloading`, `finishing`, ...).
    static func phaseName(_ phase: DownloadProgress.Phase) -> String {
        switch phase {
        case .connecting: "connecting"
        case .downloading: "downloading"
        case .finishing: "finishing"
        case .paused: "paused"
        case .completed: "completed"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }
}
