import Foundation
import Glibc
import Testing
import HaulTestSupport

/// A durable `-i` run (no `--no-sync`: the group commit, with its `syncfs` per batch) killed with SIGKILL at
/// random moments never leaves a final name on an incomplete file: whatever is under a final name is the
/// whole file, byte for byte; everything else is a `.part` (or its journal).
@Suite(.serialized) struct DurableListKillCLITests {
    let fixture = CLIFixture.shared
    static let files = 200

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-cli-kill-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The list: the fixture's twenty files (50–70 KB) ten times over, each under its own name.
    func writeList(to path: String) throws {
        var list = ""
        for index in 0..<Self.files {
            list += fixture.nginx.url("/f\(index % 20).bin") + "\tout=n\(index).bin\n"
        }
        try list.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Starts the durable run into `out`, SIGKILLs it after `milliseconds` (on a thread of its own, as
    /// CrashResumeTests does); true if the kill ended it, false if it had ended by itself.
    func run(list: String, out: String, killedAfterMilliseconds milliseconds: Int?) throws -> (killed: Bool, status: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        process.arguments = ["-q", "-i", list, "-j", "16", "-d", out]
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let milliseconds else {
            process.waitUntilExit()
            return (false, process.terminationStatus)
        }
        // Not an ordering sleep: how long the run lives before it is killed is the randomized input of the test.
        usleep(useconds_t(milliseconds * 1000))
        let killed = process.isRunning
        if killed { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return (killed, process.terminationStatus)
    }

    /// Checks every final name in `out` against its source; returns (final names, `.part` files).
    func check(_ out: String, _ seed: TestSeed, round: Int) throws -> (finals: Int, parts: Int) {
        var finals = 0, parts = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: out)) ?? [] {
            if name.hasSuffix(".part") { parts += 1; continue }
            if name.hasSuffix(".part.haul") { continue }
            finals += 1
            let index = try #require(Int(name.dropFirst().dropLast(4)), "an unexpected name \(name)")
            #expect(try TestFiles.sha256(ofFile: out + "/" + name) == fixture.sha256("f\(index % 20).bin"),
                    "round \(round): \(name) is under its final name but incomplete or wrong (\(seed))")
        }
        return (finals, parts)
    }

    @Test func aKilledDurableListRunNeverLeavesAnIncompleteFileUnderItsFinalName() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let list = directory + "/list.txt"
        try writeList(to: list)

        let seed = TestSeed(for: "DurableListKillCLITests.aKilledDurableListRun", default: 0x5359_4E43)
        var generator = seed.generator()
        // One whole run first: it must succeed, and its length bounds the random moments of the kills.
        let started = ContinuousClock.now
        let whole = try run(list: list, out: directory + "/whole", killedAfterMilliseconds: nil)
        let length = ContinuousClock.now - started
        #expect(whole.status == 0)
        #expect(try check(directory + "/whole", seed, round: 0) == (Self.files, 0))
        let lengthMilliseconds = max(20, Int(length.components.seconds * 1000 + length.components.attoseconds / 1_000_000_000_000_000))

        var killedMidway = 0
        for round in 1...8 {
            let out = directory + "/round-\(round)"
            let lifetime = Int.random(in: 1...lengthMilliseconds, using: &generator)
            let outcome = try run(list: list, out: out, killedAfterMilliseconds: lifetime)
            let (finals, parts) = try check(out, seed, round: round)
            if outcome.killed && finals < Self.files { killedMidway += 1 }
            if !outcome.killed { #expect(outcome.status == 0 && finals == Self.files, "round \(round) (\(seed))") }
            print("round \(round): killed after \(lifetime) ms of ~\(lengthMilliseconds): \(finals) final, \(parts) .part")
        }
        #expect(killedMidway > 0, "at least one run was killed before its list was done (\(seed))")
    }
}
