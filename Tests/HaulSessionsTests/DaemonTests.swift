import Foundation
import Glibc
import Haul
import HaulTestSupport
import Testing
@testable import HaulSessions

/// The daemon and the Swift API against a real nginx: re-attaching, missed events, acknowledgements, one
/// daemon per session, one user per daemon, pause/resume/cancel, hooks, recovery after a crash.
@Suite(.serialized) struct DaemonTests {
    let server = SessionServer.shared

    /// A client adds a task and leaves at once; the download goes on in the daemon; a new client that
    /// connects by identifier later is given every event it missed, in order, and the task's result. Once
    /// acknowledged, events are not delivered again; another consumer still gets them all.
    @Test func aClientThatLeftRightAfterAddingIsFollowedByOneThatReceivesTheMissedCompletion() async throws {
        let sandbox = try SessionSandbox("api")
        defer { sandbox.cleanUp() }
        let destination = sandbox.output + "/small.bin"
        let first = try await sandbox.connect()
        let added = try await first.add(DownloadRequest(url: server.nginx.url("/small.bin"), destination: .file(destination)))
        await first.close()

        // The first client is gone; the daemon finishes the download on its own.
        #expect(SessionSandbox.waitUntil(timeout: 30) { FileManager.default.fileExists(atPath: destination) })
        let second = try await sandbox.connect()
        let events = await collectEvents(second, timeout: 30) { $0.contains { $0.type == "completed" } }
        #expect(events.map(\.type) == ["added", "started", "completed"], "\(events)")
        #expect(events.map(\.sequence) == [1, 2, 3])
        #expect(events.allSatisfy { $0.task == added.id })
        guard case .completed(let path, let bytes, let digest, let recovered)? = events.last?.kind else {
            Issue.record("no completion: \(events)")
            return
        }
        #expect(path == destination && bytes == 300_000 && !recovered)
        #expect(digest == "sha256=" + server.smallSHA256)
        #expect(try TestFiles.sha256(ofFile: destination) == server.smallSHA256)

        // The task handle re-attached by id gives the same result.
        let task = try #require(second.task(added.id))
        #expect(second.allTasks().map(\.id) == [added.id])
        let result = try await task.value
        #expect(result.path == destination && result.digest == digest)
        #expect(task.state == .completed)

        try await second.acknowledge(events.last!)
        await second.close()

        // Acknowledged: a third connection of the same consumer starts after them...
        let third = try await sandbox.connect()
        let next = try await third.add(DownloadRequest(url: server.nginx.url("/small.bin"), destination: .file(sandbox.output + "/again.bin")))
        let later = await collectEvents(third, timeout: 30) { $0.contains { $0.type == "completed" } }
        #expect(later.first?.sequence == 4 && later.first?.type == "added" && later.first?.task == next.id, "\(later)")
        // ... while another consumer has acknowledged nothing and gets everything from the start.
        var other = sandbox.configuration(consumer: "other")
        other.receivesProgress = false
        let fourth = try await HaulSession.connect(sandbox.identifier, configuration: other)
        let all = await collectEvents(fourth, timeout: 30) { $0.count >= 6 }
        #expect(all.map(\.sequence) == [1, 2, 3, 4, 5, 6], "\(all)")
        #expect(try await fourth.history(after: 2).map(\.sequence) == [3, 4, 5, 6])
        await fourth.close()
        try await third.stopDaemon()
        await third.close()
        #expect(SessionSandbox.waitUntil(timeout: 30) { sandbox.daemonPID == nil }, "a clean stop removes daemon.pid")
    }

    /// One daemon per session: a second `haul daemon`, or a daemon started in-process, refuses and says who
    /// owns the session.
    @Test func aSecondDaemonForTheSameSessionRefuses() async throws {
        let sandbox = try SessionSandbox("only")
        defer { sandbox.cleanUp() }
        let session = try await sandbox.connect()
        let pid = try #require(sandbox.daemonPID)
        #expect(session.daemonPID == pid)

        let second = try sandbox.haul(["daemon", "--session", sandbox.identifier], timeout: 30)
        #expect(second.exitStatus == 9, "\(second.errorText)")
        #expect(second.errorText == "haul: a daemon already runs session \(sandbox.paths.directory) (process \(pid))\n", "\(second.errorText)")

        let configuration = DaemonConfiguration(paths: sandbox.paths)
        await #expect(throws: SessionError.daemonAlreadyRunning(path: sandbox.paths.directory, pid: pid)) {
            _ = try await SessionDaemon.run(configuration)
        }
        #expect(ProcessLiveness.isAlive(pid) && sandbox.daemonPID == pid, "the first daemon is untouched")
        #expect(session.allTasks().isEmpty)
        try await session.stopDaemon()
        await session.close()
    }

    /// A process of another user reaches the socket (the test loosens the directory's permissions so that it
    /// can) and is refused by the peer-credential check, with a reply that says why. Needs root, to run the
    /// client as `nobody`.
    @Test(.enabled(if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/perl")))
    func aClientOfAnotherUserIsRefused() async throws {
        let sandbox = try SessionSandbox("private")
        defer { sandbox.cleanUp() }
        let session = try await sandbox.connect()
        for directory in [sandbox.root.path, sandbox.state, sandbox.state + "/sessions", sandbox.paths.directory] {
            chmod(directory, 0o755)
        }
        chmod(sandbox.paths.socket, 0o666)
        // perl is in every Debian system (perl-base); it drops to nobody before it connects.
        let script = """
            $( = $) = 65534; $< = $> = 65534; die "still root" if $> == 0;
            use Socket; socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
            connect(S, pack_sockaddr_un($ARGV[0])) or die "connect: $!";
            syswrite(S, "{\\"id\\":1,\\"op\\":\\"list\\"}\\n"); my $line = <S>; print $line;
            """
        let run = try ChildProcess.run("/usr/bin/perl", ["-e", script, sandbox.paths.socket], timeout: 30)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        let reply = try ProtocolCodec.decodeDaemonMessage(Array(run.outputText.utf8).filter { $0 != 0x0A })
        guard case .reply(nil, .failure(let failure)) = reply else {
            Issue.record("not a refusal: \(run.outputText)")
            return
        }
        #expect(failure.code == "refused")
        #expect(failure.message.contains("runs as uid 65534"), "\(failure.message)")
        // The owner is still served.
        #expect(try await session.history().isEmpty)
        try await session.stopDaemon()
        await session.close()
    }

    /// A queued task's 404 reaches the client as the engine's `HaulError`, through the log and the socket:
    /// matched by status and by reason as a direct download's would be, read back the same by a second client
    /// connecting later (from the log), and classed as `haul` classes it.
    @Test func aQueuedTasksFailureIsTheEnginesTypedError() async throws {
        let sandbox = try SessionSandbox("typed")
        defer { sandbox.cleanUp() }
        let session = try await sandbox.connect()
        let url = server.nginx.url("/no-such-file.bin")
        let task = try await session.add(DownloadRequest(url: url, destination: .file(sandbox.output + "/missing.bin")))
        let error = try await within(60) { () async -> SessionError? in
            do throws(SessionError) { _ = try await task.value } catch { return error }
            return nil
        }
        #expect(error?.httpStatus == 404, "\(String(describing: error))")
        guard case .taskFailed(let failure)? = error else { Issue.record("not a task failure: \(String(describing: error))"); return }
        guard case .httpStatus(let status, _, let at) = failure.error.reason else { Issue.record("\(failure.error.reason)"); return }
        #expect(status == 404 && at == url)
        #expect(failure.failureClass == .http && failure.exitCode == 5)
        #expect(failure.error.url == url)
        #expect(task.info.failure == failure)
        await session.close()

        // Another client, later, reads the same typed failure from the log.
        let later = try await sandbox.connect()
        let again = try #require(later.task(task.id))
        await #expect(throws: SessionError.taskFailed(failure)) { _ = try await again.value }
        let failedEvents = try await later.history().compactMap { event -> TaskFailure? in
            if case .failed(let recorded) = event.kind { return recorded }
            return nil
        }
        #expect(failedEvents == [failure])
        try await later.stopDaemon()
        await later.close()
    }

    /// Pause, resume and cancel through the API, with `-j 1` holding a second task back.
    @Test func pauseResumeAndCancelGoThroughTheDaemon() async throws {
        let sandbox = try SessionSandbox("control")
        defer { sandbox.cleanUp() }
        let started = try sandbox.haul(["daemon", "--session", sandbox.identifier, "-j", "1", "--detach"])
        #expect(started.exitStatus == 0, "\(started.errorText)")
        // `--detach` returns before the daemon runs; connecting before it holds the session's lock would start
        // a second daemon without `-j 1` (which then finds the lock taken, or takes it first and runs both).
        #expect(SessionSandbox.waitUntil(timeout: 30) { SessionLock.isHeld(sandbox.paths) }, "the detached daemon took the lock")
        let session = try await sandbox.connect()
        // Both are still downloading when the test pauses or cancels them, however late the test gets to run
        // (the daemon is another process, and the test's own pool may stall behind other suites): the server
        // sends 2 MiB in all, over every connection and request, until released before the resume.
        let resource = MisbehavingServer.Resource.pattern(size: 16 << 20, seed: 126)
        let held = try MisbehavingServer(resource: resource)
        defer { held.stop() }
        held.hold(afterBodyBytes: 2 << 20)
        var options = TaskOptions()
        options.connections = 8
        options.checkpointBytes = 1 << 20
        options.synchronizesToDisk = false
        // Held connections wait for the release instead of stalling out and retrying meanwhile.
        options.timeouts.idle = .seconds(600)
        let big = sandbox.output + "/big.bin"
        let first = try await session.add(DownloadRequest(url: held.url("/big.bin"), destination: .file(big)), options: options)
        let second = try await session.add(DownloadRequest(url: held.url("/big2.bin"), destination: .file(sandbox.output + "/big2.bin")),
                                           options: options)
        // Progress arrives while it downloads; the second waits for the one job.
        #expect(SessionSandbox.waitUntil(timeout: 30) { first.info.bytes > 1 << 20 }, "the first task moved")
        #expect(second.state == .queued)

        try await first.pause()
        #expect(first.state == .paused)
        #expect(FileManager.default.fileExists(atPath: big + ".part.haul"), "paused with its journal on disk")
        let pausedAt = first.info.bytes
        #expect(pausedAt > 0)
        // The pause freed the job: the second task runs now (its response heads still come while the server
        // holds the bodies). Cancel it.
        #expect(SessionSandbox.waitUntil(timeout: 30) { second.state == .running }, "the second task started")
        try await second.cancel()
        await #expect(throws: SessionError.taskCancelled) { try await second.value }
        #expect(!FileManager.default.fileExists(atPath: sandbox.output + "/big2.bin.part"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.output + "/big2.bin.part.haul"))

        held.release()
        try await first.resume()
        let result = try await within(60) { try await first.value }
        #expect(result.path == big && result.bytes == Int64(resource.bytes.count))
        #expect(try TestFiles.sha256(ofFile: big) == TestFiles.sha256(of: resource.bytes))
        let types = try await session.history().filter { $0.task == first.id }.map(\.type)
        #expect(types == ["added", "started", "paused", "resumed", "started", "completed"], "\(types)")
        try await session.stopDaemon()
        await session.close()
    }

    /// The daemon handles SIGHUP as the CLI does, like SIGTERM: it pauses every download (each writes its
    /// journal) and stops, instead of dying with nothing saved since the last checkpoint; the next daemon
    /// resumes the task to the exact file.
    @Test func aHangUpPausesEveryDownloadAndStops() async throws {
        let sandbox = try SessionSandbox("hangup")
        defer { sandbox.cleanUp() }
        let started = try sandbox.haul(["daemon", "--session", sandbox.identifier, "--detach"])
        #expect(started.exitStatus == 0, "\(started.errorText)")
        #expect(SessionSandbox.waitUntil(timeout: 30) { SessionLock.isHeld(sandbox.paths) }, "the detached daemon took the lock")
        let session = try await sandbox.connect()
        let resource = MisbehavingServer.Resource.pattern(size: 8 << 20, seed: 127)
        let held = try MisbehavingServer(resource: resource)
        defer { held.stop() }
        held.hold(afterBodyBytes: 2 << 20)
        var options = TaskOptions()
        options.connections = 4
        options.timeouts.idle = .seconds(600)
        let output = sandbox.output + "/hup.bin"
        let task = try await session.add(DownloadRequest(url: held.url("/hup.bin"), destination: .file(output)), options: options)
        #expect(SessionSandbox.waitUntil(timeout: 30) { task.info.bytes > 1 << 20 }, "the task moved")
        await session.close()
        let pid = try #require(sandbox.daemonPID)
        kill(pid, SIGHUP)
        #expect(SessionSandbox.waitUntil(timeout: 60) { !SessionLock.isHeld(sandbox.paths) }, "the daemon stopped")
        let log = (try? String(contentsOfFile: sandbox.paths.daemonLog, encoding: .utf8)) ?? ""
        #expect(log.contains("stop signal: pausing every download"), "\(log)")
        #expect(FileManager.default.fileExists(atPath: output + ".part.haul"), "paused with its journal on disk")

        held.release()
        let again = try await sandbox.connect()
        let resumed = try #require(again.task(task.id))
        let result = try await within(60) { try await resumed.value }
        #expect(result.bytes == Int64(resource.bytes.count))
        #expect(FileManager.default.contents(atPath: output) == Data(resource.bytes))
        try await again.stopDaemon()
        await again.close()
    }

    /// A completion hook runs once, with the task in its environment, and is not run again when a later
    /// daemon starts (aria2#1778).
    @Test func theHookRunsOnceAndNeverAgainAtStartUp() async throws {
        let sandbox = try SessionSandbox("hooks")
        defer { sandbox.cleanUp() }
        let record = sandbox.root.file("hook.txt")
        let session = try await sandbox.connect()
        let task = try await session.add(DownloadRequest(url: server.nginx.url("/small.bin"), destination: .file(sandbox.output + "/h.bin")),
                                         hook: "echo \"$HAUL_TASK_ID $HAUL_PATH $HAUL_DIGEST\" >> '\(record)'")
        let events = await collectEvents(session, timeout: 30) { $0.contains { $0.type == "hook" } }
        #expect(events.map(\.type) == ["added", "started", "completed", "hook"], "\(events)")
        #expect(events.last?.kind == .hook(status: 0))
        let line = "\(task.id) \(sandbox.output)/h.bin sha256=\(server.smallSHA256)\n"
        #expect((try? String(contentsOfFile: record, encoding: .utf8)) == line)
        try await session.stopDaemon()
        await session.close()

        // A new daemon (started by this connection) has nothing owed: no hook, no event.
        let again = try await sandbox.connect()
        #expect(again.daemonPID != nil)
        let history = try await again.history()
        #expect(history.count == 4, "\(history)")
        #expect((try? String(contentsOfFile: record, encoding: .utf8)) == line)
        try await again.stopDaemon()
        await again.close()
    }

    /// The daemon died between the engine's rename and the completion record: the next daemon finds the
    /// finished file (the inode its `.part` had) and records the completion, fetching nothing.
    @Test func aCompletionTheDaemonDidNotLiveToRecordIsRecovered() async throws {
        let sandbox = try SessionSandbox("recover")
        defer { sandbox.cleanUp() }
        try sandbox.paths.prepareDirectory()
        let destination = sandbox.output + "/done.bin"
        try TestFiles.create(at: destination + ".part", size: 70_000, seed: 9)
        var info = stat()
        #expect(lstat(destination + ".part", &info) == 0)
        // Nothing listens on this URL: a daemon that fetched instead of recovering would fail the task.
        let port = try LoopbackPorts.freePort()
        let spec = TaskSpec(url: "http://127.0.0.1:\(port)/done.bin", destination: .file(destination))
        let opened = try SessionLogFile.open(path: sandbox.paths.log)
        try opened.file.append([
            .event(SampleLog.event(1, 1, .added(url: spec.url, path: destination, directory: nil)), spec: spec, part: nil),
            .event(SampleLog.event(2, 1, .started(bytes: 0, total: nil)), spec: nil,
                   part: PartIdentity(path: destination, device: UInt64(info.st_dev), inode: UInt64(info.st_ino))),
        ], firstNumber: 1)
        #expect(rename(destination + ".part", destination) == 0)

        let session = try await sandbox.connect()
        let events = await collectEvents(session, timeout: 30) { $0.count >= 3 }
        let expected = "sha256=" + (try TestFiles.sha256(ofFile: destination))
        #expect(events.last?.kind == .completed(path: destination, bytes: 70_000, digest: expected, recovered: true), "\(events)")
        #expect(try await session.task(1)?.value.digest == expected)
        try await session.stopDaemon()
        await session.close()
    }

    /// A log damaged in the middle is reported, and the daemon does not start on it.
    @Test func aDamagedLogIsReportedAndNotUsed() async throws {
        let sandbox = try SessionSandbox("damaged")
        defer { sandbox.cleanUp() }
        try sandbox.paths.prepareDirectory()
        var image = SampleLog.fileImage(SampleLog.records)
        image[40] ^= 0x01
        try Data(image).write(to: URL(fileURLWithPath: sandbox.paths.log))
        let configuration = DaemonConfiguration(paths: sandbox.paths)
        let error = await #expect(throws: SessionError.self) { _ = try await SessionDaemon.run(configuration) }
        guard case .corruptState(let path, _, let reason)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(path == sandbox.paths.log && reason.contains("followed by a valid record"), "\(reason)")
        let run = try sandbox.haul(["daemon", "--session", sandbox.identifier])
        #expect(run.exitStatus == 9 && run.errorText.contains("is damaged at byte"), "\(run.errorText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: sandbox.paths.log)) == Data(image), "left as it was, for a person to look at")
        #expect(!FileManager.default.fileExists(atPath: sandbox.paths.pidFile))
    }
}
