import Foundation
import Glibc
import Testing
import HaulTestSupport

/// SIGINT, SIGTERM and SIGHUP in any order, at any moment, against a running `haul` whose server holds the
/// body mid-way (``MisbehavingServer/hold(afterBodyBytes:)``, no time pacing): haul exits 130, says only what
/// is true, and the same command run again ends with exactly the server's file, fetching nothing a clean
/// pause said it kept.
@Suite(.serialized) struct SignalTests {
    static var binary: String { HaulCLITests.binary }

    /// `haul` started in the background, its stderr in a file.
    final class Running {
        let process = Process()
        let errorsPath: String

        init(_ arguments: [String], errorsPath: String) throws {
            self.errorsPath = errorsPath
            _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
            let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorsPath))
            defer { try? errors.close() }
            process.executableURL = URL(fileURLWithPath: SignalTests.binary)
            process.arguments = arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
        }

        deinit {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }

        var errorText: String { (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? "" }
        var isRunning: Bool { process.isRunning }
        func send(_ signal: Int32) { if process.isRunning { kill(process.processIdentifier, signal) } }

        /// The exit status once it has exited by itself; 1128 + N when signal N killed it; nil while still running
        /// at the deadline.
        func exitStatus(within seconds: Double = 60) -> Int32? {
            poll(every: .milliseconds(2), within: seconds) { !process.isRunning }
            guard !process.isRunning else { return nil }
            process.waitUntilExit()
            // Offset by 1000, so that SIGINT's default action (1130) never reads as a clean stop's 130.
            return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus + 1000
        }
    }

    /// When the next signal goes: at once, once haul has said it is saving progress, or once the journal exists.
    enum Moment: CaseIterable { case now, afterSavingLine, afterJournal }

    static let signals: [(Int32, String)] = [(SIGINT, "INT"), (SIGTERM, "TERM"), (SIGHUP, "HUP")]

    /// A scratch directory and a server of `size` pattern bytes that sends `heldAt` of them until released.
    static func heldServer(size: Int, seed: UInt64, heldAt: Int) throws -> (TemporaryDirectory, MisbehavingServer.Resource, MisbehavingServer) {
        let resource = MisbehavingServer.Resource.pattern(size: size, seed: seed)
        let server = try MisbehavingServer(resource: resource)
        server.hold(afterBodyBytes: heldAt)
        return (try TemporaryDirectory(prefix: "haul-signals"), resource, server)
    }

    /// "paused at 1.5 MiB of 3.0 MiB" as a lower bound in bytes (the figure is rounded to one decimal).
    static func pausedBytes(in text: String) -> Int64? {
        guard let match = text.firstMatch(of: /paused at ([0-9.]+) (B|KiB|MiB|GiB)/) else { return nil }
        let value = Double(match.output.1) ?? 0
        let unit: Double = switch match.output.2 { case "KiB": 1024; case "MiB": 1_048_576; case "GiB": 1_073_741_824; default: 1 }
        return max(0, Int64(((value - (unit == 1 ? 0 : 0.05)) * unit).rounded(.down)))
    }

    @Test func signalsAtRandomMomentsNeverLoseWhatHaulSaysItKept() throws {
        // The moments are random on purpose (the point is to stop haul anywhere); the seed replays them.
        let seed = TestSeed(for: "SignalTests.signalsAtRandomMoments", default: 0x5349_474E)
        var generator = seed.generator()
        let scratch = try TemporaryDirectory(prefix: "haul-signals")
        for round in 0..<16 {
            // Within one checkpoint window (no journal until the pause) or past it (journals along the way).
            let large = Bool.random(using: &generator)
            let size = large ? 6 << 20 : 3 << 20
            let resource = MisbehavingServer.Resource.pattern(size: size, seed: UInt64(round) + 100)
            let server = try MisbehavingServer(resource: resource)
            defer { server.stop() }
            let heldAt = [0, size / 5, size / 2].randomElement(using: &generator)!
            server.hold(afterBodyBytes: heldAt)
            let directory = try scratch.makeSubdirectory("round-\(round)")
            let output = directory + "/file.bin"
            var arguments = ["-c", "4", "--min-segment", "256K", "-o", output, server.url("/file.bin")]
            if large { arguments = ["--checkpoint-bytes", "1M"] + arguments }
            if Bool.random(using: &generator) { arguments = ["--no-sync"] + arguments }
            // The first signal goes once the download is mid-way; each later one at a random moment after it.
            let sequence = (0..<Int.random(in: 1...3, using: &generator)).map { index in
                (Self.signals.randomElement(using: &generator)!, index == 0 ? Moment.now : Moment.allCases.randomElement(using: &generator)!)
            }
            let releaseAfterFirst = Int.random(in: 0..<4, using: &generator) == 0
            let context = "round \(round): \(large ? "6" : "3") MiB held at \(heldAt), \(arguments.prefix(while: { $0 != "-c" })), "
                + "\(sequence.map { "\($0.0.1) \($0.1)" }), release \(releaseAfterFirst) (\(seed))"

            let run = try Running(arguments, errorsPath: scratch.file("stderr-\(round)"))
            // Mid-way: the server has sent what the hold lets through (and at 0, the first request has come, so
            // haul's handlers are installed: they are set before any download starts).
            poll { (server.requests.count > 0 && server.bodyBytesSent >= heldAt) || !run.isRunning }
            #expect(run.isRunning, "\(context): still downloading when signalled")
            for (index, ((signal, _), moment)) in sequence.enumerated() {
                switch moment {
                case .now: break
                case .afterSavingLine: poll(every: .microseconds(200)) { run.errorText.contains("saving progress") || !run.isRunning }
                case .afterJournal: poll(every: .microseconds(200)) { FileManager.default.fileExists(atPath: output + ".part.haul") || !run.isRunning }
                }
                run.send(signal)
                if index == 0 && releaseAfterFirst { server.release() }
            }
            let status = run.exitStatus()
            let text = run.errorText
            #expect(status == 130 || (releaseAfterFirst && status == 0), "\(context): exit \(String(describing: status)): \(text)")
            #expect(!text.contains("journal holds"), "\(context): the old claim: \(text)")
            let left = Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            let claimed = Self.pausedBytes(in: text)
            if let claimed, claimed > 0 {
                #expect(left.contains("file.bin.part.haul"), "\(context): 'paused at' with no journal: \(text) \(left)")
            }
            if heldAt == 0, !releaseAfterFirst, status == 130, claimed != nil {
                #expect(left.isEmpty, "\(context): stopped before the first body byte, yet left \(left)")
            }

            server.release()
            // Counted from the rerun's own requests: the first run's connections may still have bytes in flight.
            let before = server.exchanges.count
            // Finished before the stop took hold (the server was released; a second INT may still have ended
            // the wait for it with 130): nothing to run again.
            let finished = FileManager.default.fileExists(atPath: output)
            let again = finished ? nil : try ChildProcess.run(Self.binary, arguments, timeout: 60)
            #expect(again == nil || again?.exitStatus == 0, "\(context): the rerun: \(again?.errorText ?? "")")
            #expect(FileManager.default.contents(atPath: output) == Data(resource.bytes), "\(context): not the server's file")
            let fetched = Int64(server.exchanges.dropFirst(before).reduce(0) { $0 + $1.bodyBytesSent })
            if let claimed, claimed > 0, status == 130 {
                #expect(fetched <= Int64(size) - claimed, "\(context): fetched \(fetched) again of \(size) after a pause that kept \(claimed)")
            }
            let after = Set((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            #expect(after == ["file.bin"] || (finished && status == 130), "\(context): \(after)")
        }
    }

    /// A closed terminal (SIGHUP, which the kernel and then the shell send) pauses like SIGTERM: exit 130,
    /// a journal with what was written. It used to kill haul (129) with nothing saved since the last checkpoint.
    @Test func aHangUpSavesProgressLikeTerminate() throws {
        let (scratch, resource, server) = try Self.heldServer(size: 3 << 20, seed: 7, heldAt: 1 << 20)
        defer { server.stop() }
        let output = scratch.file("hup.bin")
        // Signalled once haul's first journal record is down (every 256 KiB): it has bytes to keep then, however
        // far behind the server a loaded machine leaves it.
        let arguments = ["-c", "2", "--checkpoint-bytes", "256K", "-o", output, server.url("/hup.bin")]
        let run = try Running(arguments, errorsPath: scratch.file("stderr"))
        poll { FileManager.default.fileExists(atPath: output + ".part.haul") || !run.isRunning }
        run.send(SIGHUP)
        run.send(SIGHUP)
        #expect(run.exitStatus() == 130, "\(run.errorText)")
        // What haul had read of what the server sent when the signal came.
        let kept = try #require(Self.pausedBytes(in: run.errorText), "\(run.errorText)")
        #expect(kept > 0 && run.errorText.hasSuffix("of 3.0 MiB; run the same command again to resume\n"), "\(run.errorText)")
        #expect(FileManager.default.fileExists(atPath: output + ".part.haul"))
        server.release()
        let before = server.exchanges.count
        let again = try ChildProcess.run(Self.binary, arguments, timeout: 60)
        #expect(again.exitStatus == 0, "\(again.errorText)")
        #expect(FileManager.default.contents(atPath: output) == Data(resource.bytes))
        let fetched = server.exchanges.dropFirst(before).reduce(0) { $0 + $1.bodyBytesSent }
        #expect(Int64(fetched) <= Int64(3 << 20) - kept, "only what the pause had not kept: \(fetched) after \(kept)")
    }

    /// `timeout -s INT` signals haul, then its whole process group (which haul is in): two signals within
    /// microseconds, before haul could say anything. That is one stop, not a second one that quits at once —
    /// which it used to be, now and then, silently and with nothing saved. Sent here the way `timeout` sends
    /// them (to the pid, then to the group: Foundation's `Process` starts haul in a group of its own), thirty
    /// times, since the kernel merges the two whenever the first is still pending.
    @Test func aSignalToTheProcessAndThenItsGroupIsOneStop() throws {
        let scratch = try TemporaryDirectory(prefix: "haul-signals")
        let resource = MisbehavingServer.Resource.pattern(size: 3 << 20, seed: 8)
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        for attempt in 0..<30 {
            // Counted over this attempt's own requests: the last attempt's connections may still be sending,
            // and a signal before haul has made a request could come before its handlers are installed.
            let earlier = server.exchanges.count
            server.hold(afterBodyBytes: 1 << 20)
            let output = scratch.file("twice-\(attempt).bin")
            let run = try Running(["-c", "2", "-o", output, server.url("/twice.bin")], errorsPath: scratch.file("stderr-\(attempt)"))
            // Bytes the server sent may still sit in the socket, unread: haul knows the file's length (what the
            // message below states) once it asks for the second segment, which it plans from the first
            // response's head.
            poll {
                let own = server.exchanges.dropFirst(earlier)
                return own.count >= 2 && own.reduce(0) { $0 + $1.bodyBytesSent } >= 1 << 19 || !run.isRunning
            }
            let pid = run.process.processIdentifier
            #expect(getpgid(pid) == pid, "haul leads a process group of its own")
            kill(pid, SIGINT)
            kill(-pid, SIGINT)
            let status = run.exitStatus()
            #expect(status == 130, "attempt \(attempt): \(String(describing: status)) \(run.errorText)")
            #expect(run.errorText.hasPrefix("haul: interrupted; saving progress"), "attempt \(attempt): \(run.errorText)")
            #expect(run.errorText.hasSuffix("of 3.0 MiB; run the same command again to resume\n"), "attempt \(attempt): \(run.errorText)")
            #expect(FileManager.default.fileExists(atPath: output + ".part.haul"), "attempt \(attempt)")
        }
    }
}
