import Foundation
import Glibc
import Haul
import HaulIO
import HaulTestSupport
import Synchronization
import SystemPackage
import Testing
@testable import HaulSessions

/// The JSON-lines protocol between clients and the daemon, and who may speak it.
@Suite struct ProtocolTests {
    static let requests: [SessionRequest] = [
        .hello(protocolVersion: 1),
        .add(SampleLog.spec),
        .add(TaskSpec(url: "http://h/x", destination: .directory("/tmp"))),
        .list(tasks: nil),
        .list(tasks: [1, 2]),
        .pause(tasks: [3]),
        .resume(tasks: [3, 4]),
        .cancel(tasks: [7]),
        .remove(tasks: [2, 5]),
        .events(after: 12, limit: 50),
        .subscribe(after: 4, consumer: nil, progress: false),
        .subscribe(after: nil, consumer: "backups", progress: true),
        .subscribe(after: nil, consumer: nil, progress: false),
        .acknowledge(consumer: "default", sequence: 9),
        .stop,
    ]

    @Test func everyRequestRoundTripsAsOneLine() throws {
        for (index, request) in Self.requests.enumerated() {
            let line = ProtocolCodec.encode(request, id: Int64(index))
            #expect(line.last == 0x0A && line.dropLast().allSatisfy { $0 != 0x0A }, "one line: \(request)")
            let decoded = try ProtocolCodec.decodeRequest(line.dropLast())
            #expect(decoded.id == Int64(index) && decoded.request == request)
        }
        #expect(String(decoding: ProtocolCodec.encode(.pause(tasks: [3]), id: 7), as: UTF8.self) == #"{"id":7,"op":"pause","tasks":[3]}"# + "\n")
    }

    @Test func everyDaemonMessageRoundTrips() throws {
        var info = TaskInfo(id: 3, state: .failed, url: "http://h/x", path: "/tmp/x", directory: nil, bytes: 10, total: 20)
        info.failure = TaskFailure(HaulError(.httpStatus(status: 404, reason: "Not Found", url: "http://h/x"), url: "http://h/x", attempts: 2))
        var running = TaskInfo(id: 4, state: .running, url: "http://h/y", path: nil, directory: "/tmp", bytes: 0, total: nil)
        running.bytesPerSecond = 1000
        running.connections = 2
        var body = ReplyBody()
        body.protocolVersion = SessionProtocol.version
        body.haulVersion = SessionProtocol.haulVersion
        body.executable = "/usr/bin/haul"
        body.session = "default"
        body.pid = 42
        body.sequence = 17
        body.after = 3
        body.task = info
        body.tasks = [info, running]
        body.events = [SampleLog.event(4, 3, .failed(.legacy(message: "x", className: "network", code: 3)))]
        body.more = true
        let messages: [DaemonMessage] = [
            .reply(id: 1, .success(body)),
            .reply(id: 2, .success(ReplyBody())),
            .reply(id: 3, .failure(RemoteFailure(code: "unknown-task", message: "no task 9 in session default"))),
            .reply(id: nil, .failure(RemoteFailure(code: "refused", message: "no"))),
            .event(SampleLog.event(5, 1, .completed(path: "/a", bytes: 5, digest: "sha256=00", recovered: true))),
            .progress([TaskProgress(id: 1, phase: "downloading", bytes: 5, total: 9, bytesPerSecond: 3, connections: 2, partialPath: "/a.part"),
                       TaskProgress(id: 2, phase: "connecting", bytes: 0, total: nil, bytesPerSecond: 0, connections: 0, partialPath: nil)]),
        ]
        for message in messages {
            let line = ProtocolCodec.encode(message)
            #expect(line.last == 0x0A)
            #expect(try ProtocolCodec.decodeDaemonMessage(line.dropLast()) == message)
        }
    }

    @Test func badRequestsAreRefusedWithTheirIdWhenItCanBeRead() {
        let cases: [(String, Int64?, String)] = [
            ("not json", nil, "invalid JSON"),
            (#"{"op":"list"}"#, nil, "id: missing"),
            (#"{"id":4,"op":"fly"}"#, 4, "unknown operation"),
            (#"{"id":5,"op":"pause","tasks":[0]}"#, 5, "tasks[0]"),
            (#"{"id":6,"op":"list","verbose":true}"#, 6, "unknown field"),
            (#"{"id":7,"op":"subscribe","after":1,"consumer":"a"}"#, 7, "not both"),
            (#"{"id":8,"op":"ack","consumer":"../x","seq":1}"#, 8, "invalid consumer"),
            (#"{"id":9,"op":"add","spec":{"url":"http://h/","path":"/a","dir":"/b"}}"#, 9, "exactly one of path and dir"),
            (#"{"id":10,"op":"add","spec":{"url":"http://h/","path":"/a","options":{"connections":0}}}"#, 10, "connections"),
        ]
        for (line, id, problem) in cases {
            do {
                _ = try ProtocolCodec.decodeRequest(Array(line.utf8))
                Issue.record("accepted \(line)")
            } catch {
                #expect(error.id == id, "\(line)")
                #expect(error.message.contains(problem), "\(line): \(error.message)")
            }
        }
    }

    @Test func specsKeepEveryOptionAndRefuseUnknownFields() throws {
        let json = SampleLog.spec.json
        #expect(try TaskSpec(json: json) == SampleLog.spec)
        let defaults = TaskSpec(url: "http://h/x", destination: .file("/x"))
        #expect(defaults.json.serialized == #"{"request":{"url":"http://h/x","mirrors":[],"destination":{"file":"/x"},"createsDirectories":true,"replacesExisting":false,"ifChangedOnServer":"fail","discardsPartialDownload":false,"headers":[]}}"#,
                "the request in its own encoding; default options are left out")
        var object = try #require(json.object, "a spec is a JSON object")
        object["colour"] = .string("blue")
        let unknown = #expect(throws: SchemaError.self) { try TaskSpec(json: .object(object)) }
        #expect(unknown?.field == "spec.colour" && unknown?.problem == "unknown field", "\(String(describing: unknown))")
        #expect(TaskSpec(url: "ftp://h/x", destination: .file("/x")).problem() != nil)
        #expect(TaskSpec(url: "http://h/x", destination: .file("relative")).problem() != nil)
        #expect(defaults.problem() == nil)
        let options = SampleLog.spec.options.downloadOptions(maximumConnections: 16)
        #expect(options.connections == 4 && options.maximumConnections == 16 && options.rateLimit == 1 << 20 && !options.synchronizesToDisk)
        #expect(SampleLog.spec.request(firstStart: true).headers.map(\.name) == ["X-Token"])
    }

    /// A queued download's waits end as a foreground one's do: the engine's defaults, one set of them; a
    /// task that turned the low-speed limit off keeps it off across the log and the protocol.
    @Test func aTaskTakesTheEnginesWaitDefaultsAndCanTurnTheLowSpeedLimitOff() throws {
        let engine = DownloadOptions()
        let queued = TaskSpec(url: "http://h/x", destination: .file("/x")).options.downloadOptions(maximumConnections: 16)
        #expect(queued.lowSpeedLimit == engine.lowSpeedLimit && queued.lowSpeedLimit != nil)
        #expect(queued.timeouts == engine.timeouts)
        #expect(queued.retry == engine.retry)
        #expect(queued.totalTimeout == engine.totalTimeout)

        var off = TaskSpec(url: "http://h/x", destination: .file("/x"))
        off.options.lowSpeedLimit = nil
        #expect(off.json.object?["options"]?.serialized == #"{"speedLimit":0}"#)
        let read = try TaskSpec(json: off.json)
        #expect(read == off && read.options.downloadOptions(maximumConnections: 16).lowSpeedLimit == nil)
        var object = try #require(off.json.object, "a spec is a JSON object")
        var options = try #require(object["options"]?.object, "its options are an object")
        options["speedTime"] = .int(5)
        object["options"] = .object(options)
        #expect(throws: SchemaError.self, "a time with no rate is a mistake, not a limit") { try TaskSpec(json: .object(object)) }
    }

    @Test func theLineSplitterHandsOnCompleteLinesAndBoundsThem() throws {
        var splitter = LineSplitter(maximumLineBytes: 16)
        #expect(try splitter.feed(Array("ab".utf8)).isEmpty)
        #expect(try splitter.feed(Array("c\nde\n\nf".utf8)) == [Array("abc".utf8), Array("de".utf8), []])
        #expect(splitter.pendingByteCount == 1)
        #expect(throws: LineSplitter.LineTooLong.self) { try splitter.feed([UInt8](repeating: 0x41, count: 20)) }
    }

    @Test func onlyTheOwnersProcessesMayTalkToTheDaemon() {
        let owner: uid_t = 1000
        #expect(PeerPolicy.refusal(peer: PeerCredentials(pid: 10, uid: 1000, gid: 1000), owner: owner) == nil)
        let other = PeerPolicy.refusal(peer: PeerCredentials(pid: 11, uid: 1001, gid: 1000), owner: owner)
        #expect(other?.contains("uid 1001") == true && other?.contains("process 11") == true)
        #expect(PeerPolicy.refusal(peer: PeerCredentials(pid: 12, uid: 0, gid: 0), owner: owner) != nil, "not even root")
    }

    @Test func peerCredentialsComeFromTheKernel() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let peer = try PeerCredentials.of(FileDescriptor(rawValue: fds[0]))
        #expect(peer.pid == getpid() && peer.uid == geteuid() && peer.gid == getegid())
    }

    /// A socket path longer than `sun_path` (108 bytes) is bound and reached through `/proc/self/fd`.
    @Test func aSocketPathLongerThanSunPathStillWorks() throws {
        let root = try TemporaryDirectory(prefix: "haul-long")
        var directory = root.path
        while directory.utf8.count < 140 { directory += "/" + String(repeating: "d", count: 30) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/daemon.sock"
        let listener = try UnixSocket.listen(at: path)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "bound at the long path, mode 0600")
        let client = try UnixSocket.connect(to: path)
        #expect(try PeerCredentials.of(client.descriptor).pid == getpid())
        // The listener has the connection waiting; every owner closes its socket as the test ends.
        var acceptedPeer: Int32?
        var acceptedFlags: (descriptor: Int32, status: Int32)?
        if let accepted = try UnixSocket.accept(on: listener.descriptor) {
            acceptedPeer = try PeerCredentials.of(accepted.descriptor).pid
            acceptedFlags = (fcntl(accepted.descriptor.rawValue, F_GETFD), fcntl(accepted.descriptor.rawValue, F_GETFL))
        }
        #expect(acceptedPeer == getpid())
        // accept4: close-on-exec (no hook inherits a client) and non-blocking from the start.
        #expect(acceptedFlags.map { $0.descriptor & FD_CLOEXEC != 0 && $0.status & O_NONBLOCK != 0 } == true)
        // Nothing more is waiting: would-block, not an error.
        #expect(try UnixSocket.accept(on: listener.descriptor) == nil)
    }

    /// The socket's owner-only mode must not come from narrowing the process's umask: another thread
    /// creating a file at that moment would get an owner-only file. A watcher reads the umask from
    /// `/proc/self/status` while sockets are bound; it never sees anything but the test's own.
    @Test func bindingASocketNeverChangesTheProcessUmask() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/u.sock"
        let initial = umask(0o022)
        umask(initial)
        let expected = String(format: "%04o", initial)
        // (readings, every distinct value read, whether the watcher is to stop, whether it has stopped)
        let watch = Mutex((readings: 0, seen: Set<String>(), stop: false, stopped: false))
        let watcher = Thread {
            while !watch.withLock({ $0.stop }) {
                guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
                      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }) else { continue }
                let value = line.dropFirst(6).trimmingCharacters(in: .whitespaces)
                watch.withLock { $0.readings += 1; $0.seen.insert(value) }
            }
            watch.withLock { $0.stopped = true }
        }
        watcher.start()
        #expect(poll { watch.withLock { $0.readings > 0 } }, "the watcher reads the umask")
        for _ in 0..<300 { _ = try UnixSocket.listen(at: path) }
        watch.withLock { $0.stop = true }
        #expect(poll { watch.withLock { $0.stopped } }, "the watcher stops")
        #expect(watch.withLock { $0.seen } == [expected])
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "bound with mode 0600")
    }

    @Test func sessionIdentifiersAreChecked() throws {
        for name in ["default", "a", "backups-2026", "x.y_z", String(repeating: "a", count: 64)] {
            #expect(SessionPaths.isValidName(name), "\(name)")
        }
        for name in ["", ".hidden", "a/b", "..", "sp ace", String(repeating: "a", count: 65), "é"] {
            #expect(!SessionPaths.isValidName(name), "\(name)")
            #expect(throws: SessionError.invalidIdentifier(name)) { try SessionPaths(identifier: name, stateDirectory: "/tmp/x") }
        }
        let paths = try SessionPaths(identifier: "b", stateDirectory: "/var/state/haul/")
        #expect(paths.directory == "/var/state/haul/sessions/b" && paths.socket == "/var/state/haul/sessions/b/daemon.sock")
        #expect(paths.log.hasSuffix("/session.haul") && paths.pidFile.hasSuffix("/daemon.pid"))
    }
}
