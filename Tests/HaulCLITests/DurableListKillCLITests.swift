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

    /// The names in `out` that are final (not a `.part` or its journal).
    func finalNames(_ out: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).filter { !$0.hasSuffix(".part") && !$0.hasSuffix(".part.haul") }.count
    }

    /// Starts the durable run into `out` and, with `finals`, SIGKILLs it as soon as that many files are under
    /// their final names (0: at once); true if the kill ended it, false if it had ended by itself.
    ///
    /// The moment of the kill is the randomized input of the test. It is a point in the run's progress, not a
    /// time: a time drawn from the length of an earlier run missed every run when the runs after it went
    /// faster (a loaded machine, or caches warmed by the first), and the test then found nothing killed midway.
    func run(list: String, out: String, killedAtFinals finals: Int?) throws -> (killed: Bool, status: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HaulCLITests.binary)
        process.arguments = ["-q", "-i", list, "-j", "16", "-d", out]
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard let finals else {
            process.waitUntilExit()
            return (false, process.terminationStatus)
        }
        // Watched on this thread (not the shared pool, which a loaded machine can hold for seconds).
        poll(every: .microseconds(500), within: 120) { !process.isRunning || finalNames(out) >= finals }
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
        // One whole run first: it must succeed.
        let whole = try run(list: list, out: directory + "/whole", killedAtFinals: nil)
        #expect(whole.status == 0)
        #expect(try check(directory + "/whole", seed, round: 0) == (Self.files, 0))

        var killedMidway = 0
        for round in 1...8 {
            let out = directory + "/round-\(round)"
            // Anywhere in the first three quarters of the list: the kill lands while files are in flight (and,
            // with at most 150 of 200 final, before the run can have ended).
            let killAt = Int.random(in: 0...(Self.files * 3 / 4), using: &generator)
            let outcome = try run(list: list, out: out, killedAtFinals: killAt)
            let (finals, parts) = try check(out, seed, round: round)
            if outcome.killed && finals < Self.files { killedMidway += 1 }
            if !outcome.killed { #expect(outcome.status == 0 && finals == Self.files, "round \(round) (\(seed))") }
            print("round \(round): killed at \(killAt) final names: \(finals) final, \(parts) .part")
        }
        #expect(killedMidway > 0, "at least one run was killed before its list was done (\(seed))")
    }
}
