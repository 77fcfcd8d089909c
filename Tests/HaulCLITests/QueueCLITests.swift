import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport

/// `haul daemon` and `haul queue ...` as a user (or a script) runs them: downloads handed to a session's
/// daemon, followed, interrupted, and surviving `kill -9` of the daemon.
@Suite(.serialized) struct QueueCLITests {
    let fixture = CLIFixture.shared

    /// A session state directory and an output directory of the test's own; ``cleanUp()`` kills the
    /// session's daemon (whoever started it) and removes both.
    final class Sandbox: Sendable {
        let root: TemporaryDirectory
        var state: String { root.file("state") }
        var output: String { root.file("out") }
        var sessionDirectory: String { state + "/sessions/default" }

        init() throws {
            root = try TemporaryDirectory(prefix: "haul-queue")
            try FileManager.default.createDirectory(atPath: root.file("out"), withIntermediateDirectories: true)
        }

        func haul(_ arguments: [String], timeout: Double = 60) throws -> ProcessResult {
            try ChildProcess.run("/usr/bin/env", ["HAUL_STATE_DIR=" + state, HaulCLITests.binary] + arguments, timeout: timeout)
        }

        /// `haul ARGUMENTS` started and not waited for; stderr goes to `errors`.
        func start(_ arguments: [String], errors: String) throws -> Process {
            _ = FileManager.default.createFile(atPath: errors, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["HAUL_STATE_DIR=" + state, HaulCLITests.binary] + arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
            try process.run()
            return process
        }

        var daemonPID: Int32? {
            (try? String(contentsOfFile: sessionDirectory + "/daemon.pid", encoding: .utf8))
                .flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }

        func cleanUp() {
            if let pid = daemonPID { ProcessLiveness.kill(pid) }
            root.remove()
        }

        @discardableResult
        static func waitUntil(timeout: Double, pause: useconds_t = 20_000, _ condition: () -> Bool) -> Bool {
            poll(every: .microseconds(Int64(pause)), within: timeout, until: condition)
        }
    }

    static func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
    }

    /// The 64 MiB files of the kill test, made once for the run in the fixture's data directory.
    static let largeFiles: [(name: String, sha256: String)] = {
        (0..<3).map { index in
            let name = "large-\(index).bin"
            let path = CLIFixture.shared.data + "/" + name
            try! TestFiles.create(at: path, size: 64 << 20, seed: UInt64(700 + index))
            return (name, try! TestFiles.sha256(ofFile: path))
        }
    }()

    /// The issue's test: three 64 MiB downloads (4 connections each) paced by haul's own limit, 4 MiB/s
    /// each, which holds whatever requests haul makes; they come from nginx's /slow/ (1 MB/s per request) so
    /// that little is on the wire when the daemon is killed. They are added to a session; `haul queue wait` follows them; the daemon is killed with SIGKILL twice
    /// mid-download, and `wait` starts it again each time. All three complete byte-identical, nothing is
    /// fetched again beyond the journal's window, and the event log has each completion exactly once, in
    /// order.
    @Test func threeDownloadsSurviveTheDaemonBeingKilledTwice() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let files = Self.largeFiles
        let checkpoint = 2 << 20
        for (index, file) in files.enumerated() {
            let add = try sandbox.haul(["queue", "add", "--no-sync", "-c", "4", "--checkpoint-bytes", "2M", "--limit-rate", "4M",
                                        "-o", sandbox.output + "/" + file.name, fixture.nginx.url("/slow/" + file.name)])
            #expect(add.exitStatus == 0, "\(add.errorText)")
            #expect(add.outputText == "\(index + 1)\n", "add prints the task id: \(add.outputText)")
        }
        let errors = sandbox.root.file("wait.stderr")
        let wait = try sandbox.start(["queue", "wait"], errors: errors)
        defer { if wait.isRunning { kill(wait.processIdentifier, SIGKILL); wait.waitUntilExit() } }

        /// Bytes each task has, as the daemon reports them (only asked while it runs).
        func progress() -> [Int] {
            guard let list = try? sandbox.haul(["queue", "list", "--json"]), list.exitStatus == 0,
                  let tasks = try? Self.jsonLines(list.outputText) else { return [] }
            return tasks.map { ($0["bytes"] as? NSNumber)?.intValue ?? 0 }
        }
        var killed: [Int32] = []
        for (round, threshold) in [(1, 8 << 20), (2, 32 << 20)] {
            let running = Sandbox.waitUntil(timeout: 60, pause: 100_000) {
                let bytes = progress()
                return bytes.count == 3 && bytes.allSatisfy { $0 >= threshold && $0 < 64 << 20 }
            }
            #expect(running, "round \(round): every download past \(threshold) bytes and none finished: \(progress())")
            let pid = try #require(sandbox.daemonPID)
            #expect(!killed.contains(pid), "a new daemon each round")
            kill(pid, SIGKILL)
            #expect(Sandbox.waitUntil(timeout: 30) { !ProcessLiveness.isAlive(pid) })
            killed.append(pid)
            // Only `queue wait` runs now: it is the one that starts a daemon again.
            let restarted = Sandbox.waitUntil(timeout: 30) {
                guard let new = sandbox.daemonPID else { return false }
                return new != pid && ProcessLiveness.isAlive(new)
            }
            #expect(restarted, "round \(round): queue wait started a new daemon")
        }

        #expect(Sandbox.waitUntil(timeout: 120, pause: 100_000) { !wait.isRunning }, "queue wait returns once all three are done")
        wait.waitUntilExit()
        let waitText = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(wait.terminationStatus == 0, "\(waitText)")
        for (index, file) in files.enumerated() {
            #expect(try TestFiles.sha256(ofFile: sandbox.output + "/" + file.name) == file.sha256, "file \(index + 1) is byte-identical")
            #expect(waitText.contains("haul: task \(index + 1): saved \(sandbox.output)/\(file.name) (64.0 MiB, sha256=\(file.sha256))"), "\(waitText)")
        }

        let events = try sandbox.haul(["queue", "events", "--json"])
        #expect(events.exitStatus == 0, "\(events.errorText)")
        let log = try Self.jsonLines(events.outputText)
        let sequences = log.compactMap { ($0["seq"] as? NSNumber)?.intValue }
        #expect(sequences == Array(1...log.count), "strictly increasing, none lost or repeated: \(sequences)")
        for (index, file) in files.enumerated() {
            let task = index + 1
            let mine = log.filter { ($0["task"] as? NSNumber)?.intValue == task }
            let completions = mine.filter { $0["type"] as? String == "completed" }
            #expect(completions.count == 1, "task \(task) completed exactly once: \(mine)")
            #expect(completions.first?["digest"] as? String == "sha256=" + file.sha256)
            #expect(completions.first?["path"] as? String == sandbox.output + "/" + file.name)
            let types = mine.compactMap { $0["type"] as? String }
            #expect(types.first == "added" && types.last == "completed", "\(types)")
            #expect(types.filter { $0 == "started" }.count == 3, "started, then again by each of the two new daemons: \(types)")
        }

        // Fetched again after the kills: at most what the journals had not yet recorded (two checkpoint
        // windows per download per kill, plus what was on the wire).
        let size = 3 * (64 << 20)
        // nginx logs a request when it finalizes it, a moment after the client has the last byte.
        let large = { (log: [AccessLogEntry]) in log.filter { $0.target.hasPrefix("/slow/large-") }.totalBodyBytesSent }
        let fetched = large(fixture.nginx.accessLog(waitingUntil: { large($0) >= size }))
        #expect(fetched >= size)
        #expect(fetched - size <= 2 * 3 * (2 * checkpoint + 4 * (1 << 20)), "fetched again: \(fetched - size) bytes")

        let stop = try sandbox.haul(["queue", "stop"])
        #expect(stop.exitStatus == 0, "\(stop.errorText)")
        #expect(sandbox.daemonPID == nil, "a clean stop removes daemon.pid")
    }

    /// Every queue command in its documented form, with the exit codes of `wait` for each way a task ends.
    @Test func queueCommandsAddListPauseResumeCancelWaitEventsStop() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let out = sandbox.output
        let add = try sandbox.haul(["queue", "add", "-o", "f1.bin", fixture.nginx.url("/f1.bin")].map { $0 == "f1.bin" ? out + "/f1.bin" : $0 })
        #expect(add.exitStatus == 0 && add.outputText == "1\n", "\(add.outputText) \(add.errorText)")
        let first = try sandbox.haul(["queue", "wait", "1"])
        #expect(first.exitStatus == 0, "\(first.errorText)")
        #expect(first.errorText.contains("haul: task 1: saved \(out)/f1.bin"), "\(first.errorText)")
        #expect(try TestFiles.sha256(ofFile: out + "/f1.bin") == fixture.sha256("f1.bin"))

        // Relative paths are the client's, and -d names the file after the URL.
        let relative = try ChildProcess.run("/usr/bin/env", ["HAUL_STATE_DIR=" + sandbox.state, HaulCLITests.binary, "queue", "add", "-d", "sub",
                                                             fixture.nginx.url("/f2.bin")], in: out)
        #expect(relative.exitStatus == 0 && relative.outputText == "2\n", "\(relative.errorText)")
        let missing = try sandbox.haul(["queue", "add", "--retries", "0", "-o", out + "/missing.bin", fixture.nginx.url("/missing.bin")])
        #expect(missing.outputText == "3\n")
        let failed = try sandbox.haul(["queue", "wait", "2", "3"])
        #expect(failed.exitStatus == 5, "a 404 exits as a download would: \(failed.errorText)")
        #expect(failed.errorText.contains("haul: task 3: HTTP 404"), "\(failed.errorText)")
        #expect(try TestFiles.sha256(ofFile: out + "/sub/f2.bin") == fixture.sha256("f2.bin"))

        let slow = try sandbox.haul(["queue", "add", "-c", "2", "--checkpoint-bytes", "1M", "--json", "--limit-rate", HaulCLITests.paced,
                                     "-o", out + "/big.bin", fixture.nginx.url("/big.bin")])
        let added = try #require(try Self.jsonLines(slow.outputText).first)
        #expect(added["id"] as? NSNumber == 4 && added["path"] as? String == out + "/big.bin", "\(slow.outputText)")
        #expect(Sandbox.waitUntil(timeout: 30, pause: 50_000) {
            let tasks = (try? Self.jsonLines(try sandbox.haul(["queue", "list", "--json"]).outputText)) ?? []
            return tasks.count == 4 && (tasks[3]["bytes"] as? NSNumber)?.intValue ?? 0 > 1 << 20
        }, "the download is under way")
        let pause = try sandbox.haul(["queue", "pause", "4"])
        #expect(pause.exitStatus == 0 && pause.outputText.hasPrefix("4  paused "), "\(pause.outputText)")
        let list = try Self.jsonLines(try sandbox.haul(["queue", "list", "--json"]).outputText)
        #expect(list.compactMap { $0["state"] as? String } == ["completed", "completed", "failed", "paused"], "\(list)")
        #expect(list[2]["error"] as? String == "HTTP 404 Not Found from \(fixture.nginx.url("/missing.bin"))")
        #expect((list[3]["bytes"] as? NSNumber)?.intValue ?? 0 > 0 && (list[3]["total"] as? NSNumber)?.intValue == fixture.bigSize)
        for task in list { #expect(Set(task.keys).isSuperset(of: ["id", "state", "path", "bytes", "total"]), "\(task)") }
        let text = try sandbox.haul(["queue", "list"]).outputText.split(separator: "\n")
        #expect(text.count == 4 && text[0].hasPrefix("1  completed  ") && text[0].hasSuffix(out + "/f1.bin"), "\(text)")

        let resume = try sandbox.haul(["queue", "resume", "4"])
        #expect(resume.exitStatus == 0 && resume.outputText.hasPrefix("4  "), "\(resume.outputText)")
        let cancel = try sandbox.haul(["queue", "cancel", "4"])
        #expect(cancel.exitStatus == 0 && cancel.outputText.hasPrefix("4  cancelled"), "\(cancel.outputText)")
        #expect(!FileManager.default.fileExists(atPath: out + "/big.bin.part"))
        let cancelled = try sandbox.haul(["queue", "wait", "4"])
        #expect(cancelled.exitStatus == 130 && cancelled.errorText.contains("haul: task 4: cancelled"), "\(cancelled.errorText)")

        let events = try Self.jsonLines(try sandbox.haul(["queue", "events", "--json", "--after", "5"]).outputText)
        #expect(events.first?["seq"] as? NSNumber == 6)
        let types = events.filter { $0["task"] as? NSNumber == 4 }.compactMap { $0["type"] as? String }
        #expect(types == ["added", "started", "paused", "resumed", "started", "cancelled"], "\(types)")
        let plain = try sandbox.haul(["queue", "events"]).outputText.split(separator: "\n")
        #expect(plain.first?.contains("task 1  added  \(fixture.nginx.url("/f1.bin")) -> \(out)/f1.bin") == true, "\(plain)")

        let exists = try sandbox.haul(["queue", "add", "-o", out + "/f1.bin", fixture.nginx.url("/f1.bin")])
        #expect(exists.exitStatus == 9 && exists.errorText == "haul: \(out)/f1.bin already exists (use --allow-overwrite to replace it)\n",
                "\(exists.errorText)")
        for (arguments, message) in [(["queue", "pause", "99"], "no task 99"), (["queue", "add"], "no URL given"),
                                     (["queue", "add", "ftp://h/x"], "not a usable http(s) URL"),
                                     (["queue", "list", "--session", "../x"], "invalid session identifier"),
                                     (["queue", "frobnicate"], "frobnicate")] {
            let run = try sandbox.haul(arguments)
            #expect(run.exitStatus == 2, "\(arguments): \(run.errorText)")
            #expect(run.errorText.hasPrefix("haul: ") && run.errorText.contains(message) && run.errorText.split(separator: "\n").count == 1,
                    "\(arguments): \(run.errorText)")
        }

        let stop = try sandbox.haul(["queue", "stop"])
        #expect(stop.exitStatus == 0 && sandbox.daemonPID == nil, "\(stop.errorText)")
        let again = try sandbox.haul(["queue", "stop"])
        #expect(again.exitStatus == 0, "stopping a session without a daemon is not an error: \(again.errorText)")
        #expect(sandbox.daemonPID == nil, "and does not start one")
    }

    /// After `kill -9` of the daemon, `list` shows a task resumed by the next daemon at the bytes its journal
    /// has, not "running 0 B": a directory task (named by the server) reads its journal only once the server
    /// answers, and here the server never does.
    @Test func aTaskResumedByANewDaemonIsListedAtItsJournalsBytes() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let server = try MisbehavingServer(resource: .pattern(size: 4 << 20, seed: 3))
        defer { server.stop() }
        server.hold(afterBodyBytes: 1 << 20)
        let add = try sandbox.haul(["queue", "add", "--no-sync", "-c", "1", "-d", sandbox.output, server.url("/x.bin")])
        #expect(add.exitStatus == 0 && add.outputText == "1\n", "\(add.errorText)")
        func listed() -> [String: Any]? {
            (try? Self.jsonLines(try sandbox.haul(["queue", "list", "--json"]).outputText))?.first
        }
        func bytes(_ task: [String: Any]?) -> Int { (task?["bytes"] as? NSNumber)?.intValue ?? 0 }
        #expect(Sandbox.waitUntil(timeout: 30, pause: 50_000) { bytes(listed()) == 1 << 20 }, "held at 1 MiB: \(String(describing: listed()))")
        // The pause writes the journal (and records the file's name) before it answers.
        let pause = try sandbox.haul(["queue", "pause", "1"])
        #expect(pause.exitStatus == 0, "\(pause.errorText)")
        let pid = try #require(sandbox.daemonPID)
        kill(pid, SIGKILL)
        #expect(Sandbox.waitUntil(timeout: 30) { !ProcessLiveness.isAlive(pid) })

        server.setScript(.always(.stallBeforeHead(.untilStopped)))
        server.release()
        let resume = try sandbox.haul(["queue", "resume", "1"])
        #expect(resume.exitStatus == 0, "\(resume.errorText)")
        var task: [String: Any]?
        #expect(Sandbox.waitUntil(timeout: 30, pause: 50_000) {
            task = listed()
            return task?["state"] as? String == "running"
        }, "\(String(describing: task))")
        #expect(bytes(task) == 1 << 20, "\(String(describing: task))")
        #expect((task?["total"] as? NSNumber)?.intValue == 4 << 20, "\(String(describing: task))")
    }

    /// `wait` without ids waits for the tasks not yet ended: an old failure no longer makes every later
    /// `wait` exit 5. A failure it did wait for is named with the exit status it decided.
    @Test func waitWithoutIdsWaitsForTheLiveTasksAndNamesWhatDecidedItsStatus() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let missing = try sandbox.haul(["queue", "add", "--retries", "0", "-o", sandbox.output + "/missing.bin", fixture.nginx.url("/missing.bin")])
        #expect(missing.exitStatus == 0 && missing.outputText == "1\n", "\(missing.errorText)")
        let named = try sandbox.haul(["queue", "wait", "1"])
        #expect(named.exitStatus == 5, "\(named.errorText)")
        #expect(named.errorText.hasSuffix("haul: exit 5: task 1's; 1 of the 1 tasks waited for did not complete\n"), "\(named.errorText)")

        let nothingLive = try sandbox.haul(["queue", "wait"])
        #expect(nothingLive.exitStatus == 0, "the old failure is not waited for: \(nothingLive.errorText)")
        #expect(nothingLive.errorText == "haul: no task of session default is queued, running or paused\n", "\(nothingLive.errorText)")

        let server = try MisbehavingServer(resource: .pattern(size: 64 << 10, seed: 4))
        defer { server.stop() }
        server.hold(afterBodyBytes: 1 << 10)
        let add = try sandbox.haul(["queue", "add", "-o", sandbox.output + "/x.bin", server.url("/x.bin")])
        #expect(add.outputText == "2\n", "\(add.errorText)")
        // On a pseudo-terminal (`script`), so that the wait shows when it has its tasks: its progress line.
        let screen = sandbox.root.file("wait.screen")
        _ = FileManager.default.createFile(atPath: screen, contents: nil)
        let command = ["/usr/bin/env", "HAUL_STATE_DIR=" + sandbox.state, HaulCLITests.binary, "queue", "wait"]
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let wait = Process()
        wait.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        wait.arguments = ["-q", "-e", "-c", "exec " + command, "/dev/null"]
        wait.standardInput = FileHandle.nullDevice
        wait.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: screen))
        try wait.run()
        defer { if wait.isRunning { kill(wait.processIdentifier, SIGKILL); wait.waitUntilExit() } }
        func shown() -> String { (try? String(contentsOfFile: screen, encoding: .utf8)) ?? "" }
        // The task cannot end before the hold is released, and the wait has it once it draws "[0/1 done]".
        #expect(Sandbox.waitUntil(timeout: 30) { shown().contains("[0/1 done]") }, "\(shown())")
        server.release()
        #expect(Sandbox.waitUntil(timeout: 30) { !wait.isRunning })
        wait.waitUntilExit()
        #expect(wait.terminationStatus == 0, "\(shown())")
        #expect(shown().contains("haul: task 2: saved \(sandbox.output)/x.bin (64.0 KiB, sha256="), "\(shown())")
    }

    /// `remove` takes ended tasks off the list (kept so across daemons), refuses a live one, and `--ended`
    /// removes every ended task; the event log keeps their history.
    @Test func removeTakesEndedTasksOffTheList() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        for (name, expected) in [("missing-a.bin", "1\n"), ("missing-b.bin", "2\n")] {
            let add = try sandbox.haul(["queue", "add", "--retries", "0", "-o", sandbox.output + "/" + name, fixture.nginx.url("/" + name)])
            #expect(add.outputText == expected, "\(add.errorText)")
        }
        #expect(try sandbox.haul(["queue", "wait", "1", "2"]).exitStatus == 5)
        let server = try MisbehavingServer(resource: .pattern(size: 64 << 10, seed: 5))
        defer { server.stop() }
        server.hold(afterBodyBytes: 1 << 10)
        #expect(try sandbox.haul(["queue", "add", "-o", sandbox.output + "/live.bin", server.url("/live.bin")]).outputText == "3\n")

        let one = try sandbox.haul(["queue", "remove", "1"])
        #expect(one.exitStatus == 0, "\(one.errorText)")
        func ids() throws -> [Int] {
            try Self.jsonLines(try sandbox.haul(["queue", "list", "--json"]).outputText).compactMap { ($0["id"] as? NSNumber)?.intValue }
        }
        #expect(try ids() == [2, 3])
        let gone = try sandbox.haul(["queue", "wait", "1"])
        #expect(gone.exitStatus == 2 && gone.errorText.contains("no task 1"), "\(gone.errorText)")
        let live = try sandbox.haul(["queue", "remove", "3"])
        #expect(live.exitStatus == 2 && live.errorText.contains("task 3 is ") && live.errorText.contains("cancel it first"), "\(live.errorText)")
        let neither = try sandbox.haul(["queue", "remove"])
        #expect(neither.exitStatus == 2, "\(neither.errorText)")

        #expect(try sandbox.haul(["queue", "remove", "--ended"]).exitStatus == 0)
        #expect(try ids() == [3], "the live task stays")
        server.release()
        #expect(try sandbox.haul(["queue", "wait"]).exitStatus == 0, "only the live task is waited for")
        #expect(try sandbox.haul(["queue", "stop"]).exitStatus == 0)
        #expect(try ids() == [3], "removals are in the log: the next daemon lists the same")
        let types = try Self.jsonLines(try sandbox.haul(["queue", "events", "--json"]).outputText)
            .filter { $0["type"] as? String == "removed" }.compactMap { ($0["task"] as? NSNumber)?.intValue }
        #expect(types == [1, 2], "the history stays")
    }

    /// `events --follow` prints new events as they happen, across tasks added meanwhile.
    @Test func eventsFollowPrintsNewEventsAsTheyHappen() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let first = try sandbox.haul(["queue", "add", "-o", sandbox.output + "/a.bin", fixture.nginx.url("/f3.bin")])
        #expect(first.exitStatus == 0)
        let followed = sandbox.root.file("follow.txt")
        _ = FileManager.default.createFile(atPath: followed, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["HAUL_STATE_DIR=" + sandbox.state, HaulCLITests.binary, "queue", "events", "--follow", "--json", "--after", "1"]
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: followed))
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        let second = try sandbox.haul(["queue", "add", "-o", sandbox.output + "/b.bin", fixture.nginx.url("/f4.bin")])
        #expect(second.exitStatus == 0)
        func lines() -> [[String: Any]] { (try? Self.jsonLines((try? String(contentsOfFile: followed, encoding: .utf8)) ?? "")) ?? [] }
        #expect(Sandbox.waitUntil(timeout: 30) { lines().filter { $0["type"] as? String == "completed" }.count == 2 }, "\(lines())")
        let sequences = lines().compactMap { ($0["seq"] as? NSNumber)?.intValue }
        #expect(sequences.first == 2 && sequences == Array(2..<(2 + sequences.count)), "\(sequences)")
        #expect(process.isRunning, "still following")
    }

    /// `haul daemon` in the foreground (as a systemd unit runs it): SIGTERM pauses the running download
    /// (its journal written), exits 0 and removes daemon.pid; a second foreground daemon meanwhile exits 9;
    /// the next daemon continues the download to the end.
    @Test func aForegroundDaemonStopsCleanlyOnSIGTERMAndTheNextOneContinues() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let errors = sandbox.root.file("daemon.stderr")
        let daemon = try sandbox.start(["daemon", "-j", "2", "--max-connections", "8"], errors: errors)
        defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL); daemon.waitUntilExit() } }
        #expect(Sandbox.waitUntil(timeout: 30) { sandbox.daemonPID == daemon.processIdentifier })
        let second = try sandbox.haul(["daemon"])
        #expect(second.exitStatus == 9 && second.errorText.contains("(process \(daemon.processIdentifier))"), "\(second.errorText)")

        let output = sandbox.output + "/big.bin"
        let add = try sandbox.haul(["queue", "add", "-c", "4", "--checkpoint-bytes", "1M", "--limit-rate", HaulCLITests.paced,
                                    "-o", output, fixture.nginx.url("/big.bin")])
        #expect(add.exitStatus == 0 && add.outputText == "1\n", "\(add.errorText)")
        #expect(Sandbox.waitUntil(timeout: 30, pause: 50_000) {
            let tasks = (try? Self.jsonLines(try sandbox.haul(["queue", "list", "--json"]).outputText)) ?? []
            return (tasks.first?["bytes"] as? NSNumber)?.intValue ?? 0 > 2 << 20
        }, "the download is under way")
        kill(daemon.processIdentifier, SIGTERM)
        #expect(Sandbox.waitUntil(timeout: 30) { !daemon.isRunning })
        daemon.waitUntilExit()
        let text = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        #expect(daemon.terminationStatus == 0, "\(text)")
        #expect(text.contains("haul daemon: session default: stop signal: pausing every download"), "\(text)")
        #expect(sandbox.daemonPID == nil)
        #expect(FileManager.default.fileExists(atPath: output + ".part.haul"), "the journal is written before the daemon exits")

        // The stored settings are the session's now; the next daemon (started by wait) uses them and finishes.
        let wait = try sandbox.haul(["queue", "wait"], timeout: 120)
        #expect(wait.exitStatus == 0, "\(wait.errorText)")
        #expect(try TestFiles.sha256(ofFile: output) == fixture.bigSHA256)
        let types = try Self.jsonLines(try sandbox.haul(["queue", "events", "--json"]).outputText).compactMap { $0["type"] as? String }
        #expect(types == ["added", "started", "started", "completed"], "a stop is not a pause: \(types)")
        let stored = String(decoding: try Data(contentsOf: URL(fileURLWithPath: sandbox.sessionDirectory + "/session.haul")), as: UTF8.self)
        #expect(stored.contains(#"{"r":"settings","settings":{"jobs":2,"maxConnections":8}}"#), "the settings record is a JSON payload")
        let log = try String(contentsOfFile: sandbox.sessionDirectory + "/daemon.log", encoding: .utf8)
        #expect(log.contains("1 tasks (1 to run)"), "\(log)")
        #expect(try sandbox.haul(["queue", "stop"]).exitStatus == 0)
    }

    /// On a terminal, `queue wait` redraws one progress line in place, then says what was saved.
    @Test func onATerminalQueueWaitRedrawsItsProgressLine() throws {
        let sandbox = try Sandbox()
        defer { sandbox.cleanUp() }
        let add = try sandbox.haul(["queue", "add", "--no-sync", "-c", "4", "--limit-rate", HaulCLITests.paced, "-o", sandbox.output + "/tty.bin",
                                    fixture.nginx.url("/big.bin")])
        #expect(add.exitStatus == 0, "\(add.errorText)")
        // `script` gives haul a pseudo-terminal as stderr; what haul draws comes out on script's stdout.
        let command = ["/usr/bin/env", "HAUL_STATE_DIR=" + sandbox.state, HaulCLITests.binary, "queue", "wait"]
            .map { "'" + $0 + "'" }.joined(separator: " ")
        let run = try ChildProcess.run("/usr/bin/script", ["-q", "-e", "-c", "stty cols 100; exec " + command, "/dev/null"])
        #expect(run.exitStatus == 0, "\(run.outputText)")
        let redraws = run.outputText.components(separatedBy: "\r").filter { $0.hasSuffix("\u{1B}[K") && $0.contains("done]") }
        #expect(redraws.count >= 3, "redrawn in place several times: \(run.outputText.debugDescription.prefix(600))")
        #expect(redraws.allSatisfy { $0.dropLast(3).count < 100 }, "each frame fits the terminal")
        #expect(redraws.contains { $0.contains("[0/1 done]") && $0.contains("%") && $0.contains("/16.0 MiB") && $0.contains("conn") },
                "\(redraws.last ?? "")")
        #expect(run.outputText.contains("haul: task 1: saved \(sandbox.output)/tty.bin (16.0 MiB, sha256=\(fixture.bigSHA256))"))
        #expect(try sandbox.haul(["queue", "stop"]).exitStatus == 0)
    }

    /// `haul --help` names the new subcommands; each has its own help.
    @Test func helpNamesTheSessionCommands() throws {
        let root = try ChildProcess.run(HaulCLITests.binary, ["--help"])
        #expect(root.outputText.contains("daemon") && root.outputText.contains("queue"), "\(root.outputText)")
        let queue = try ChildProcess.run(HaulCLITests.binary, ["queue", "--help"])
        #expect(queue.exitStatus == 0)
        for command in ["add", "list", "pause", "resume", "cancel", "remove", "wait", "events", "stop"] {
            #expect(queue.outputText.contains("  \(command) "), "\(command): \(queue.outputText)")
        }
        let add = try ChildProcess.run(HaulCLITests.binary, ["queue", "add", "--help"])
        #expect(add.exitStatus == 0 && add.outputText.contains("--session") && add.outputText.contains("--on-complete"))
        let daemon = try ChildProcess.run(HaulCLITests.binary, ["help", "daemon"])
        #expect(daemon.exitStatus == 0 && daemon.outputText.contains("--max-connections"), "\(daemon.outputText)")
    }
}
