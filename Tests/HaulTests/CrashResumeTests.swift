import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulJournal

/// The real CLI, killed with SIGKILL at random moments again and again, must end with a byte-identical file,
/// and every resume may fetch again only what was written after the last checkpoint.
@Suite(.serialized) struct CrashResumeTests {
    static let size = 256 << 20
    static let checkpointBytes = 8 << 20

    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("haul")
    }

    @Test func survivesThirtyKillsAndEndsByteIdentical() async throws {
        // nginx lets every new request send a second's worth at once, and each resumed run starts 8 new
        // requests; 512 KiB/s per connection keeps thirty runs well short of the whole file. The final run
        // lifts the throttle (a marker file nginx checks) so that it finishes quickly, at the same URL.
        let data = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        configuration.enableTLS = false
        configuration.extraServerDirectives = """
            location /throttled/ {
                alias \(data)/;
                set $limit_rate 524288;
                if (-f \(data)/unthrottle) { set $limit_rate 0; }
            }
            """
        let nginx = try NginxServer(configuration: configuration)
        defer { nginx.stop() }
        let source = data + "/big.bin"
        try TestFiles.create(at: source, size: Self.size, seed: 11)
        let expected = try TestFiles.sha256(ofFile: source)
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let output = directory + "/big.bin"
        let arguments = ["-q", "-c", "8", "--checkpoint-bytes", "8M", "--checkpoint-interval", "0.25",
                         nginx.url("/throttled/big.bin"), "-o", output]

        var kills = 0
        var previousDurable: Int64 = 0
        var worstRefetch = 0
        // The moments of the kills are random on purpose (the point is to stop the CLI anywhere); the seed
        // makes the sequence of waits replayable, though not the CLI's own timing.
        let seed = TestSeed(for: "CrashResumeTests.survivesThirtyKills", default: 0x4B49_4C4C)
        var generator = seed.generator()
        while kills < 30 {
            let process = Process()
            process.executableURL = Self.binary
            process.arguments = arguments
            let errors = Pipe()
            process.standardError = errors
            // Not an ordering sleep: how long the run lives before it is killed is the randomized input of the test.
            let lifetime = Int.random(in: 60...350, using: &generator)
            guard try await Self.run(process, killedAfterMilliseconds: lifetime) else {
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                Issue.record("run \(kills + 1) ended by itself with status \(process.terminationStatus) (\(seed)): \(text)")
                break
            }
            kills += 1

            guard FileManager.default.fileExists(atPath: output + ".part.haul") else { continue }
            let (_, state) = try ResumeJournal.open(path: output + ".part.haul")
            #expect(state.durable.count >= previousDurable, "durable bytes never go backwards (kill \(kills), \(seed))")
            previousDurable = state.durable.count
            // Every durable byte must really be there.
            #expect(try Self.matchingBytes(part: output + ".part", source: source, in: state.durable.ranges) == Int(state.durable.count),
                    "kill \(kills): a durable byte is wrong (\(seed))")
            // Bytes already written but not yet recorded are what the next run fetches again.
            let refetch = try Self.matchingBytes(part: output + ".part", source: source, in: state.durable.gaps(in: 0..<Int64(Self.size)))
            worstRefetch = max(worstRefetch, refetch)
            // Reads pause at two windows of unrecorded bytes; each of the 8 connections may finish the read
            // (at most 256 KiB) it was handling when the limit was reached.
            #expect(refetch <= 2 * Self.checkpointBytes + 8 * (256 << 10),
                    "kill \(kills): \(refetch) bytes written but not checkpointed (window \(Self.checkpointBytes), \(seed))")
        }
        #expect(kills >= 30, "the download finished before thirty kills (\(seed))")

        try #require(FileManager.default.createFile(atPath: data + "/unthrottle", contents: Data()),
                     "the marker that lifts the rate limit could not be created")
        let finish = Process()
        finish.executableURL = Self.binary
        finish.arguments = arguments
        try finish.run()
        defer { if finish.isRunning { kill(finish.processIdentifier, SIGKILL); finish.waitUntilExit() } }
        // Waiting without blocking a thread of the shared cooperative pool (other suites run meanwhile); the
        // deadline only bounds a hang (unthrottled, the rest of the file takes seconds).
        try #require(await eventually(every: .milliseconds(20), within: 600) { !finish.isRunning }, "the final run never ended")
        finish.waitUntilExit()
        #expect(finish.terminationStatus == 0, "\(seed)")
        #expect(try TestFiles.sha256(ofFile: output) == expected)
        #expect(!FileManager.default.fileExists(atPath: output + ".part.haul"), "the journal is gone once the file is complete")
        print("crash-resume: \(kills) kills, worst re-fetch after a kill \(worstRefetch) bytes (checkpoint window \(Self.checkpointBytes))")
    }

    /// Starts `process`, SIGKILLs it after `milliseconds` and returns once it has exited: true if the kill
    /// ended it, false if it had ended by itself.
    ///
    /// On a thread of its own, not with `Task.sleep`: the shared cooperative pool can be busy for seconds when
    /// the machine is loaded (other suites block its threads), and a run that lived that much longer than
    /// its drawn lifetime could finish the file before thirty kills.
    static func run(_ process: Process, killedAfterMilliseconds milliseconds: Int) async throws -> Bool {
        try process.run()
        let started = ContinuousClock.now
        return await withCheckedContinuation { continuation in
            let thread = Thread {
                // The run's lifetime (the test's input), counted from the start above.
                let left = started + .milliseconds(milliseconds) - ContinuousClock.now
                if left > .zero { usleep(useconds_t(left.components.seconds * 1_000_000 + left.components.attoseconds / 1_000_000_000_000)) }
                let killed = process.isRunning
                if killed { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
                continuation.resume(returning: killed)
            }
            thread.name = "crash-resume-killer"
            thread.start()
        }
    }

    /// Bytes of `part` in `ranges` that equal the source, counted in 4 KiB blocks (a block counts when it
    /// matches whole; the source has no all-zero block, and unwritten parts of `.part` read as zeros).
    static func matchingBytes(part: String, source: String, in ranges: [Range<Int64>]) throws -> Int {
        let partHandle = try FileHandle(forReadingFrom: URL(fileURLWithPath: part))
        let sourceHandle = try FileHandle(forReadingFrom: URL(fileURLWithPath: source))
        defer { try? partHandle.close(); try? sourceHandle.close() }
        var matching = 0
        for range in ranges {
            var offset = range.lowerBound
            while offset < range.upperBound {
                let count = Int(min(4 << 20, range.upperBound - offset))
                try partHandle.seek(toOffset: UInt64(offset))
                try sourceHandle.seek(toOffset: UInt64(offset))
                let a = try partHandle.read(upToCount: count) ?? Data()
                let b = try sourceHandle.read(upToCount: count) ?? Data()
                a.withUnsafeBytes { pa in
                    b.withUnsafeBytes { pb in
                        var block = 0
                        while block < min(pa.count, pb.count) {
                            let length = min(4096, min(pa.count, pb.count) - block)
                            if memcmp(pa.baseAddress! + block, pb.baseAddress! + block, length) == 0 { matching += length }
                            block += length
                        }
                    }
                }
                offset += Int64(count)
            }
        }
        return matching
    }
}
