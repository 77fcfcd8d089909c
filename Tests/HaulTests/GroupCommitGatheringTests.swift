import Foundation
import Synchronization
import Testing
@testable import Haul
import HaulIO

/// The group commit's batches gathered (``BatchGathering``): a batch that follows another waits for company,
/// within bounds, and not when nobody can come.
@Suite struct GroupCommitGatheringTests {
    typealias Recorder = GroupCommitTests.Recorder
    typealias Scratch = GroupCommitTests.Scratch
    typealias Outcomes = GroupCommitTests.Outcomes
    typealias Deferred = GroupCommitTests.Deferred

    /// A flag the test raises to let a held batch go on.
    final class Gate: Sendable {
        private let opened = Mutex(false)
        var isOpen: Bool { opened.withLock { $0 } }
        func open() { opened.withLock { $0 = true } }
    }

    func entry(_ scratch: Scratch, _ name: String, outcomes: Outcomes) throws -> GroupCommit.Entry {
        GroupCommit.Entry(file: try scratch.file(name), partPath: scratch.root + "/" + name + ".part",
                          destination: scratch.root + "/" + name, journalPath: nil, completion: outcomes.completion(name))
    }

    /// A commit whose first `syncfs` is held until `released` (30 s at most), its batches started on a thread,
    /// the start of a batch after a quiet spell by `gathered` (the test runs it).
    func heldCommit(_ recorder: Recorder, gathering: BatchGathering, released: Gate, gathered: Deferred,
                    downloadsRunning: (@Sendable () -> Int)? = nil) -> GroupCommit {
        var operations = recorder.flushingOperations
        let record = operations.syncFileSystem
        let calls = Mutex(0)
        operations.syncFileSystem = { file throws(SystemError) in
            let call = calls.withLock { $0 += 1; return $0 }
            try record(file)
            let deadline = ContinuousClock.now + .seconds(30)
            while call == 1, !released.isOpen, ContinuousClock.now < deadline { usleep(500) }
        }
        return GroupCommit(parallelSyncs: 1, gathering: gathering, downloadsRunning: downloadsRunning, operations: operations, start: { work in Thread { work() }.start() },
                           gather: { gathered.take($0) })
    }

    /// Files that arrive one by one after a batch wait for company: the next batch starts when it holds enough
    /// of them (here 3, the wait being long), so they share one `syncfs` instead of a flush each.
    @Test func aFollowingBatchWaitsUntilItHoldsEnoughFiles() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let released = Gate()
        let gathered = Deferred()
        let commit = heldCommit(recorder, gathering: BatchGathering(enoughFiles: 3, longestWait: .seconds(60)), released: released, gathered: gathered)
        commit.submit(try entry(scratch, "a/1", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/2", outcomes: outcomes))
        gathered.run()
        try await waitUntil { recorder.log.withLock { $0.contains("syncfs \(scratch.root)/a/1.part") } }
        commit.submit(try entry(scratch, "a/3", outcomes: outcomes))
        released.open()
        // The first batch is renamed; the second holds one file and waits (without the rule it would be flushed
        // alone now, with an fdatasync).
        try await waitUntil { recorder.log.withLock { $0.contains("rename \(scratch.root)/a/2.part \(scratch.root)/a/2") } }
        commit.submit(try entry(scratch, "a/4", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/5", outcomes: outcomes))
        try await waitUntil { outcomes.results.withLock { $0.count } == 5 }
        #expect(commit.batchCount == 2)
        let log = recorder.log.withLock { $0 }
        #expect(log.filter { $0.hasPrefix("syncfs") } == ["syncfs \(scratch.root)/a/1.part", "syncfs \(scratch.root)/a/3.part"], "\(log)")
        #expect(!log.contains { $0.hasPrefix("sync ") }, "no file flushed alone: \(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") }.count == 1, "the second syncfs proved the first batch's renames: \(log)")
        for index in 1...5 {
            guard case .success = outcomes["a/\(index)"] else { Issue.record("a/\(index): \(String(describing: outcomes["a/\(index)"]))"); continue }
        }
    }

    /// A lone file after a batch waits no longer than the longest wait: no company comes, and it is committed
    /// anyway (the bound, not a hang).
    @Test func aLoneFileAfterABatchIsCommittedOnceTheLongestWaitIsOver() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let released = Gate()
        let gathered = Deferred()
        let commit = heldCommit(recorder, gathering: BatchGathering(enoughFiles: 1_000, longestWait: .milliseconds(20)), released: released, gathered: gathered)
        commit.submit(try entry(scratch, "a/1", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/2", outcomes: outcomes))
        gathered.run()
        try await waitUntil { recorder.log.withLock { $0.contains("syncfs \(scratch.root)/a/1.part") } }
        commit.submit(try entry(scratch, "a/3", outcomes: outcomes))
        released.open()
        try await waitUntil { outcomes.results.withLock { $0.count } == 3 }
        #expect(commit.batchCount == 2)
        for index in 1...3 {
            guard case .success = outcomes["a/\(index)"] else { Issue.record("a/\(index): \(String(describing: outcomes["a/\(index)"]))"); continue }
        }
    }

    /// When every running download is in the commit already (here: three downloads, three files, each ending
    /// when its outcome is delivered), nobody can bring company: the batch after the first starts at once,
    /// however long the wait would be.
    @Test func aBatchWithNobodyLeftToComeStartsWithoutWaiting() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let released = Gate()
        let gathered = Deferred()
        let commit = heldCommit(recorder, gathering: BatchGathering(enoughFiles: 1_000, longestWait: .seconds(600)), released: released,
                                gathered: gathered, downloadsRunning: { 3 - outcomes.results.withLock { $0.count } })
        commit.submit(try entry(scratch, "a/1", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/2", outcomes: outcomes))
        gathered.run()
        try await waitUntil { recorder.log.withLock { $0.contains("syncfs \(scratch.root)/a/1.part") } }
        commit.submit(try entry(scratch, "a/3", outcomes: outcomes))
        released.open()
        try await waitUntil { outcomes.results.withLock { $0.count } == 3 }
        #expect(commit.batchCount == 2)
        for index in 1...3 {
            guard case .success = outcomes["a/\(index)"] else { Issue.record("a/\(index): \(String(describing: outcomes["a/\(index)"]))"); continue }
        }
    }

    /// A batch whose renames await their proof, with nothing queued after it while downloads are still
    /// running, waits for the next file: that file's batch's `syncfs` proves the renames, and the first
    /// batch's directory gets no sync of its own. (Here four downloads; each ends when its outcome is
    /// delivered, so once the first two are done nobody is left to come and the last batch's directory is
    /// synced at once.)
    @Test func renamesAwaitingProofWaitForTheNextFileWhileDownloadsMayStillCome() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let gathered = Deferred()
        let commit = GroupCommit(parallelSyncs: 1, gathering: BatchGathering(enoughFiles: 2, longestWait: .seconds(600)),
                                 downloadsRunning: { 4 - outcomes.results.withLock { $0.count } },
                                 operations: recorder.flushingOperations, start: { work in Thread { work() }.start() },
                                 gather: { gathered.take($0) })
        commit.submit(try entry(scratch, "a/1", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/2", outcomes: outcomes))
        gathered.run()
        try await waitUntil { recorder.log.withLock { $0.contains("rename \(scratch.root)/a/2.part \(scratch.root)/a/2") } }
        commit.submit(try entry(scratch, "a/3", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/4", outcomes: outcomes))
        try await waitUntil { outcomes.results.withLock { $0.count } == 4 }
        #expect(commit.batchCount == 2)
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        #expect(log.filter { $0.hasPrefix("syncfs") }.count == 2, "\(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") } == ["dirsync \(root)/a"], "the second syncfs proved the first batch's renames: \(log)")
        for index in 1...4 {
            guard case .success = outcomes["a/\(index)"] else { Issue.record("a/\(index): \(String(describing: outcomes["a/\(index)"]))"); continue }
        }
    }

    /// Nobody left to come (every running download is in the commit): a batch's renames are proven by their
    /// directory's own sync at once, however long the wait could be.
    @Test func renamesAwaitingProofWithNobodyLeftToComeHaveTheirDirectorySyncedAtOnce() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let gathered = Deferred()
        let commit = GroupCommit(parallelSyncs: 1, gathering: BatchGathering(enoughFiles: 2, longestWait: .seconds(600)),
                                 downloadsRunning: { 2 }, operations: recorder.flushingOperations,
                                 start: { work in Thread { work() }.start() }, gather: { gathered.take($0) })
        commit.submit(try entry(scratch, "a/1", outcomes: outcomes))
        commit.submit(try entry(scratch, "a/2", outcomes: outcomes))
        gathered.run()
        try await waitUntil { outcomes.results.withLock { $0.count } == 2 }
        let log = recorder.log.withLock { $0 }
        #expect(log.filter { $0.hasPrefix("dirsync") } == ["dirsync \(scratch.root)/a"], "\(log)")
    }

    func waitUntil(_ condition: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met before the deadline")
                return
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }
}
