import FuzzDriver
import Glibc
import Haul
import HaulSessions

/// Feeds arbitrary bytes to every decoder of background sessions: the session log (framing, record
/// payloads, the state fold), the protocol's request and daemon lines, the JSON parser and the line
/// splitter. Whatever decodes must encode again to something that decodes to the same value; the fold
/// must refuse a record without changing the state; nothing may crash.
///
/// Input layout: bytes starting with the log magic `HAULSESS` are a whole log file image. Otherwise the
/// first byte picks a mode and the rest is the body:
/// - 0: a whole log file image whose header is made valid (so the records are reached), records scanned
///   and folded;
/// - 1: one record payload (a JSON object), decoded and folded into a state that already holds a task;
/// - 2: a request line; 3: a daemon line;
/// - 4: any JSON text;
/// - 5: a byte stream cut into pieces (the next byte gives the piece length) for the line splitter, which
///   must give the same lines however the stream is cut.
func fuzzSessions(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if input.starts(with: SessionLogCodec.fileMagic) {
        checkLog(input)
        return 0
    }
    guard let mode = input.first else { return 0 }
    let body = Array(input.dropFirst())
    switch mode % 6 {
    case 0:
        checkLog(SessionLogCodec.header() + body)
    case 1:
        checkRecord(body, into: seededState)
    case 2:
        if let decoded = try? ProtocolCodec.decodeRequest(body) {
            let line = ProtocolCodec.encode(decoded.request, id: decoded.id)
            let again = try? ProtocolCodec.decodeRequest(line.dropLast())
            precondition(again?.id == decoded.id && again?.request == decoded.request, "request round trip changed it")
        }
    case 3:
        if let message = try? ProtocolCodec.decodeDaemonMessage(body) {
            let line = ProtocolCodec.encode(message)
            precondition(line.last == 0x0A && !line.dropLast().contains(0x0A), "a daemon message is one line")
            precondition((try? ProtocolCodec.decodeDaemonMessage(line.dropLast())) == message, "daemon message round trip changed it")
        }
    case 4:
        if let value = try? JSONParser.parse(body) {
            let text = value.serialized
            precondition(!text.utf8.contains(0x0A), "serialized JSON is one line")
            precondition((try? JSONParser.parse(text)) == value, "JSON round trip changed the value")
        }
    default:
        checkSplitter(body)
    }
    return 0
}

/// A state holding one task, so that payloads about task 1 reach the fold's transitions.
let seededState: SessionState = {
    var state = SessionState()
    let spec = TaskSpec(url: "http://h/a", destination: .file("/a"))
    try! state.apply(.event(SessionEvent(sequence: 1, time: 0, task: 1, kind: .added(url: spec.url, path: "/a", directory: nil)),
                            spec: spec, part: nil))
    return state
}()

func checkLog(_ image: [UInt8]) {
    guard let scan = try? SessionLogCodec.scan(image) else { return }
    precondition(scan.validEnd <= image.count, "valid end past the file")
    precondition((scan.tornTail == nil) == (scan.validEnd == image.count), "a torn tail exactly when bytes are left over")
    var state = SessionState()
    for record in scan.records { checkRecord(record.payload, into: state).map { state = $0 } }
}

/// Decodes and folds one payload; returns the state after it when it applies.
@discardableResult
func checkRecord(_ payload: [UInt8], into state: SessionState) -> SessionState? {
    guard let record = try? LogRecord(payload: payload) else { return nil }
    let again = try? LogRecord(payload: record.payload)
    precondition(again == record, "record round trip changed it: \(record.json.serialized)")
    var next = state
    do {
        try next.apply(record)
    } catch {
        // Refused: the state must be untouched (compared by what the fold exposes).
        precondition(next.recordCount == state.recordCount && next.lastSequence == state.lastSequence
                         && next.tasks.count == state.tasks.count, "a refused record changed the state")
        return nil
    }
    precondition(next.recordCount == state.recordCount + 1, "an applied record is counted")
    return next
}

func checkSplitter(_ body: [UInt8]) {
    guard let first = body.first else { return }
    let stream = Array(body.dropFirst())
    var whole = LineSplitter(maximumLineBytes: 4096)
    let expected = try? whole.feed(stream)
    var pieces = LineSplitter(maximumLineBytes: 4096)
    var lines: [[UInt8]] = []
    var offset = 0
    let step = Int(first % 17) + 1
    var failed = false
    while offset < stream.count {
        let end = min(stream.count, offset + step)
        do { lines += try pieces.feed(stream[offset..<end]) } catch { failed = true; break }
        offset = end
    }
    if let expected, !failed { precondition(lines == expected, "the splitter's lines depend on how the stream is cut") }
}

/// `HAUL_FUZZ_SESSIONS_SEEDS=DIR FuzzSessions` writes the seed corpus (valid inputs of every mode) to DIR.
func writeSeeds(to directory: String) {
    var spec = TaskSpec(url: "https://example.org/a.iso", mirrors: ["https://m.example.net/a.iso"], destination: .file("/data/a.iso"))
    spec.checksum = try! Checksum("sha256=" + String(repeating: "0f", count: 32))
    spec.headers = [TaskHeader(name: "X-Token", value: "abc")]
    spec.options.connections = 4
    spec.options.rateLimit = 1 << 20
    spec.hook = "echo $HAUL_PATH"
    func event(_ sequence: UInt64, _ task: Int, _ kind: SessionEvent.Kind) -> SessionEvent {
        SessionEvent(sequence: sequence, time: 1_700_000_000_000, task: task, kind: kind)
    }
    let records: [LogRecord] = [
        .settings(SessionSettings(jobs: 2, maximumConnections: 16, hook: "true")),
        .event(event(1, 1, .added(url: spec.url, path: "/data/a.iso", directory: nil)), spec: spec, part: nil),
        .event(event(2, 1, .started(bytes: 0, total: nil)), spec: nil, part: PartIdentity(path: "/data/a.iso", device: 2049, inode: 77)),
        .event(event(3, 1, .paused(bytes: 100, total: 1000)), spec: nil, part: nil),
        .event(event(4, 1, .resumed), spec: nil, part: nil),
        .event(event(5, 1, .started(bytes: 100, total: 1000)), spec: nil, part: nil),
        .event(event(6, 1, .completed(path: "/data/a.iso", bytes: 1000, digest: spec.checksum!.description, recovered: false)), spec: nil, part: nil),
        .hookStarted(task: 1),
        .event(event(7, 1, .hook(status: 0)), spec: nil, part: nil),
        .acknowledged(consumer: "default", sequence: 7),
    ]
    var image = SessionLogCodec.header()
    for (index, record) in records.enumerated() { image += SessionLogCodec.record(number: UInt64(index + 1), payload: record.payload) }
    var seeds: [(String, [UInt8])] = [
        ("log", image),
        ("log-torn", Array(image.dropLast(7))),
        ("record-failed", [1] + LogRecord.event(event(2, 1, .failed(TaskFailure(HaulError(.httpStatus(status: 404, reason: "Not Found", url: "http://h/a"), url: "http://h/a")))), spec: nil, part: nil).payload),
        ("record-part", [1] + LogRecord.part(task: 1, PartIdentity(path: "/a", device: 1, inode: 2)).payload),
        ("json", [4] + Array(#"{"a":[1,-2.5e3,true,null,"\u00e9\ud83d\ude00"],"b":{}}"#.utf8)),
        ("lines", [5, 3] + Array("{\"id\":1}\n{\"id\":2}\npartial".utf8)),
    ]
    let requests: [SessionRequest] = [.hello(protocolVersion: 1), .add(spec), .list(tasks: [1, 2]), .pause(tasks: [1]),
                                      .events(after: 3, limit: 10), .subscribe(after: nil, consumer: "default", progress: true),
                                      .acknowledge(consumer: "default", sequence: 4), .stop]
    for (index, request) in requests.enumerated() {
        seeds.append(("request-\(request.operation)", [2] + ProtocolCodec.encode(request, id: Int64(index)).dropLast()))
    }
    var body = ReplyBody()
    body.sequence = 7
    body.tasks = [TaskInfo(id: 1, state: .running, url: spec.url, path: "/data/a.iso", directory: nil, bytes: 5, total: 9)]
    let messages: [(String, DaemonMessage)] = [
        ("reply", .reply(id: 3, .success(body))),
        ("failure", .reply(id: 4, .failure(RemoteFailure(code: "unknown-task", message: "no task 9")))),
        ("event", .event(event(6, 1, .completed(path: "/data/a.iso", bytes: 1000, digest: "sha256=00", recovered: true)))),
        ("progress", .progress([TaskProgress(id: 1, phase: "downloading", bytes: 5, total: 9, bytesPerSecond: 3, connections: 2, partialPath: "/a.part")])),
    ]
    for (name, message) in messages { seeds.append(("daemon-\(name)", [3] + ProtocolCodec.encode(message).dropLast())) }
    for (name, bytes) in seeds {
        let path = directory + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0, "cannot create \(path)")
        precondition(bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == bytes.count)
        close(fd)
    }
}

@_cdecl("FuzzSessions_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    if let directory = getenv("HAUL_FUZZ_SESSIONS_SEEDS") {
        writeSeeds(to: String(cString: directory))
        return 0
    }
    return haul_fuzz_run(argc, argv) { fuzzSessions($0, $1) }
}
