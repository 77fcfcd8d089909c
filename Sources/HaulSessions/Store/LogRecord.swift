/// The file a task's download writes into before the final rename (`NAME.part`), identified by device and
/// inode: after a crash, a finished file with this identity at the destination is this task's work.
public struct PartIdentity: Sendable, Hashable {
    /// The final path (the `.part` is this plus `.part`).
    public var path: String
    public var device: UInt64
    public var inode: UInt64

    public init(path: String, device: UInt64, inode: UInt64) {
        self.path = path
        self.device = device
        self.inode = inode
    }

    var json: JSONValue {
        .object(JSONObject(["path": .string(path), "dev": .int(device), "ino": .int(inode)]))
    }

    init(reading reader: inout FieldReader) throws(SchemaError) {
        self.init(path: try reader.string("path", maximumBytes: 4096), device: UInt64(try reader.integer("dev", in: 0...Int64.max)),
                  inode: UInt64(try reader.integer("ino", in: 0...Int64.max)))
        try reader.finish()
    }
}

/// One record of the session log: an event (with, for `added`, the task's spec; for `started`, the identity
/// of its partial file), or one of the records clients never see as events (acknowledgements, settings,
/// the start of a hook).
public enum LogRecord: Sendable, Hashable {
    case event(SessionEvent, spec: TaskSpec?, part: PartIdentity?)
    /// A consumer has processed every event up to `sequence`.
    case acknowledged(consumer: String, sequence: UInt64)
    case settings(SessionSettings)
    /// The completion hook of `task` is about to run (written before it starts, so that it runs at most once).
    case hookStarted(task: Int)
    /// The partial file of a running task, learnt after its start (a directory task is named by the server).
    case part(task: Int, PartIdentity)

    /// The payload: one JSON object (`docs/sessions.md`, "Records").
    public var json: JSONValue {
        var object = JSONObject()
        switch self {
        case .event(let event, let spec, let part):
            object["r"] = .string("event")
            object["event"] = event.json
            if let spec { object["spec"] = spec.json }
            if let part { object["part"] = part.json }
        case .acknowledged(let consumer, let sequence):
            object["r"] = .string("ack")
            object["consumer"] = .string(consumer)
            object["seq"] = .int(sequence)
        case .settings(let settings):
            object["r"] = .string("settings")
            object["settings"] = settings.json
        case .hookStarted(let task):
            object["r"] = .string("hook-start")
            object["task"] = .int(task)
        case .part(let task, let part):
            object["r"] = .string("part")
            object["task"] = .int(task)
            object["part"] = part.json
        }
        return .object(object)
    }

    public var payload: [UInt8] { Array(json.serialized.utf8) }

    /// Reads a record payload strictly: valid UTF-8 JSON, one object, every field known and in range.
    public init(payload: [UInt8]) throws(SchemaError) {
        let value: JSONValue
        do { value = try JSONParser.parse(payload) } catch { throw SchemaError(field: "", error.description) }
        var reader = try FieldReader(value, path: "")
        let kind = try reader.string("r", maximumBytes: 16)
        switch kind {
        case "event":
            let event = try SessionEvent(json: try reader.value("event"), path: "event")
            var spec: TaskSpec?
            if let value = reader.object["spec"], value != .null { spec = try TaskSpec(json: try reader.value("spec"), path: "spec") }
            reader.ignore("spec")
            var part: PartIdentity?
            if var partReader = try reader.optionalObject("part") { part = try PartIdentity(reading: &partReader) }
            if case .added = event.kind {
                guard spec != nil else { throw SchemaError(field: "spec", "missing (an added event carries its task's spec)") }
            } else if spec != nil {
                throw SchemaError(field: "spec", "only an added event carries a spec")
            }
            if part != nil {
                guard case .started = event.kind else {
                    throw SchemaError(field: "part", "only a started event carries a part file")
                }
            }
            self = .event(event, spec: spec, part: part)
        case "ack":
            let consumer = try reader.string("consumer", maximumBytes: 64)
            guard SessionPaths.isValidName(consumer) else { throw SchemaError(field: "consumer", "invalid consumer name") }
            self = .acknowledged(consumer: consumer, sequence: UInt64(try reader.integer("seq", in: 0...Int64.max)))
        case "settings":
            self = .settings(try SessionSettings(json: try reader.value("settings")))
        case "hook-start":
            self = .hookStarted(task: Int(try reader.integer("task", in: 1...Int64(Int32.max))))
        case "part":
            let task = Int(try reader.integer("task", in: 1...Int64(Int32.max)))
            var partReader = try reader.object("part")
            self = .part(task: task, try PartIdentity(reading: &partReader))
        default:
            throw SchemaError(field: "r", "unknown record type \"\(kind)\"")
        }
        try reader.finish()
    }
}
