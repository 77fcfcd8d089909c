import Foundation
import Synchronization
import Testing
@testable import Haul
import HaulIO

/// The group commit's batches back to back: the `syncfs` of a batch also proves the renames of the batch
/// before it (``RenameProof``), which then needs no directory `fsync` of its own; when that `syncfs` fails,
/// or the next batch is flushed otherwise, the directory is synced on its own and its failure still
/// un-proves the renames (the `.part` names come back, the files fail).
@Suite struct GroupCommitPipelineTests {
    typealias Recorder = GroupCommitTests.Recorder
    typealias Scratch = GroupCommitTests.Scratch
    typealias Outcomes = GroupCommitTests.Outcomes
    typealias Deferred = GroupCommitTests.Deferred

    /// Two batches of the `a/` filesystem back to back: the first holds its `syncfs` until the second batch's
    /// files are queued. `failSecondSyncfs`: the second `syncfs` fails (each file is then synced alone).
    /// `second`: the names of the second batch.
    /// `holdAfterRenames`: the first batch is held after its renames instead (the second batch's files are then
    /// opened after them).
    func run(_ scratch: Scratch, _ recorder: Recorder, second: [String], failSecondSyncfs: Bool = false,
             holdAfterRenames: Bool = false) async throws -> Outcomes {
        let outcomes = Outcomes()
        let released = Mutex(false)
        let syncfsCalls = Mutex(0)
        var operations = recorder.flushingOperations
        let record = operations.syncFileSystem
        operations.syncFileSystem = { file throws(SystemError) in
            let call = syncfsCalls.withLock { $0 += 1; return $0 }
            if call == 2 && failSecondSyncfs {
                recorder.note("syncfs \(file.path)")
                throw SystemError(call: "syncfs", errno: EIO)
            }
            try record(file)
            // The first batch stays "on the disk" until the test has queued the second (30 s at most).
            let deadline = ContinuousClock.now + .seconds(30)
            while call == 1, !holdAfterRenames, !released.withLock({ $0 }), ContinuousClock.now < deadline { usleep(500) }
        }
        let rename = operations.rename
        operations.rename = { from, to throws(SystemError) in
            try rename(from, to)
            let deadline = ContinuousClock.now + .seconds(30)
            while holdAfterRenames, from.hasSuffix("/a/2.part"), !released.withLock({ $0 }), ContinuousClock.now < deadline { usleep(500) }
        }
        let gathered = Deferred()
        let commit = GroupCommit(parallelSyncs: 1, operations: operations,
                                 start: { work in Thread { work() }.start() }, gather: { gathered.take($0) })
        let first = ["a/1", "a/2"]
        for name in first { commit.submit(try entry(scratch, name, recorder: recorder, outcomes: outcomes)) }
        gathered.run()
        let held = holdAfterRenames ? "rename \(scratch.root)/a/2.part \(scratch.root)/a/2" : "syncfs \(scratch.root)/a/1.part"
        try await waitUntil { recorder.log.withLock { $0.contains(held) } }
        for name in second { commit.submit(try entry(scratch, name, recorder: recorder, outcomes: outcomes)) }
        released.withLock { $0 = true }
        try await waitUntil { outcomes.results.withLock { $0.count } == first.count + second.count }
        #expect(commit.batchCount == 2)
        return outcomes
    }

    /// An entry whose report is also noted in the recorder's log ("done NAME"), to see when it comes.
    func entry(_ scratch: Scratch, _ name: String, recorder: Recorder, outcomes: Outcomes) throws -> GroupCommit.Entry {
        let report = outcomes.completion(name)
        return GroupCommit.Entry(file: try scratch.file(name), partPath: scratch.root + "/" + name + ".part",
                                 destination: scratch.root + "/" + name, journalPath: scratch.root + "/" + name + ".part.haul",
                                 completion: { result in recorder.note("done \(name)"); report(result) })
    }

    @Test func theNextBatchsSyncfsProvesTheRenamesOfTheBatchBeforeIt() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = try await run(scratch, recorder, second: ["a/3", "a/4"])
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        #expect(log.filter { $0.hasPrefix("syncfs") } == ["syncfs \(root)/a/1.part", "syncfs \(root)/a/3.part"], "\(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") } == ["dirsync \(root)/a"], "one directory sync, for the last batch: \(log)")
        let position = { (line: String) in log.firstIndex(of: line) ?? Int.max }
        for name in ["a/1", "a/2"] {
            // Reported (and its journal removed) only after the second batch's syncfs, which began after its rename.
            #expect(position("rename \(root)/\(name).part \(root)/\(name)") < position("syncfs \(root)/a/3.part"), "\(log)")
            #expect(position("syncfs \(root)/a/3.part") < position("unjournal \(root)/\(name).part.haul"), "\(log)")
            #expect(position("syncfs \(root)/a/3.part") < position("done \(name)"), "\(log)")
        }
        for name in ["a/3", "a/4"] {
            #expect(position("dirsync \(root)/a") < position("done \(name)"), "\(log)")
        }
        for name in ["a/1", "a/2", "a/3", "a/4"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    /// When the next batch's `syncfs` fails, the renames before it are proven by their directory's own sync.
    @Test func aFailedSyncfsOfTheNextBatchLeavesTheRenamesBeforeItToTheirDirectorySync() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = try await run(scratch, recorder, second: ["a/3", "a/4"], failSecondSyncfs: true)
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        #expect(log.filter { $0.hasPrefix("dirsync") } == ["dirsync \(root)/a", "dirsync \(root)/a"], "\(log)")
        let position = { (line: String) in log.firstIndex(of: line) ?? Int.max }
        #expect(position("syncfs \(root)/a/3.part") < position("dirsync \(root)/a"), "\(log)")
        #expect(position("dirsync \(root)/a") < position("done a/1"), "\(log)")
        #expect(Set(log.filter { $0.hasPrefix("sync ") }) == ["sync \(root)/a/3.part", "sync \(root)/a/4.part"], "\(log)")
        for name in ["a/1", "a/2", "a/3", "a/4"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    /// The issue's guarantee with batches back to back: a failed flush (here the next batch's `syncfs`, then
    /// the directory's own sync) fails the files it leaves unproven, their `.part` names back and journals kept.
    @Test func aFailedDirectorySyncAfterAFailedSyncfsBringsBackThePartNamesOfTheBatchBefore() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.failDirectory.withLock { $0 = [scratch.root + "/a"] }
        let outcomes = try await run(scratch, recorder, second: ["a/3", "a/4"], failSecondSyncfs: true)
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        for name in ["a/1", "a/2", "a/3", "a/4"] {
            #expect(log.contains("rename \(root)/\(name) \(root)/\(name).part"), "renamed back: \(log)")
            #expect(!log.contains("unjournal \(root)/\(name).part.haul"), "journal kept: \(log)")
            guard case .failure(let failure) = outcomes[name], case .disk(let path, let error) = failure.reason else {
                Issue.record("\(name): \(String(describing: outcomes[name]))")
                continue
            }
            #expect(path == "\(root)/\(name)")
            #expect(error.call == "fsync")
        }
    }

    /// A next batch flushed file by file (here: one file) proves nothing of the batch before: that batch's
    /// directory is synced before the next batch's flush, so its files do not wait for it.
    @Test func aNextBatchWithoutSyncfsHasTheDirectoryBeforeItSyncedFirst() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = try await run(scratch, recorder, second: ["a/3"])
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        let position = { (line: String) in log.firstIndex(of: line) ?? Int.max }
        #expect(log.filter { $0.hasPrefix("syncfs") } == ["syncfs \(root)/a/1.part"], "\(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") }.count == 2, "\(log)")
        #expect(position("dirsync \(root)/a") < position("sync \(root)/a/3.part"), "\(log)")
        #expect(position("done a/1") < position("sync \(root)/a/3.part"), "\(log)")
        for name in ["a/1", "a/2", "a/3"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    /// Renames wait for the next batch's `syncfs` only on a filesystem it flushes, and only when the file it is
    /// called on was opened before the renames (its `syncfs` reports write-back errors from its opening on).
    @Test func renamesWaitForTheNextSyncfsOnlyOnAFileSystemItFlushesFromAFileOpenedBeforeThem() {
        #expect(RenameProof.decide(directoryFileSystem: 1, openedBeforeRenames: 10, nextSyncfs: [1: 7, 2: 12]) == .nextSyncfs)
        #expect(RenameProof.decide(directoryFileSystem: 1, openedBeforeRenames: 10, nextSyncfs: [1: 10]) == .nextSyncfs)
        #expect(RenameProof.decide(directoryFileSystem: 2, openedBeforeRenames: 10, nextSyncfs: [1: 7, 2: 12]) == .ownDirectorySync,
                "opened after the renames")
        #expect(RenameProof.decide(directoryFileSystem: 3, openedBeforeRenames: 10, nextSyncfs: [1: 7, 2: 8]) == .ownDirectorySync)
        #expect(RenameProof.decide(directoryFileSystem: nil, openedBeforeRenames: 10, nextSyncfs: [1: 7]) == .ownDirectorySync)
        #expect(RenameProof.decide(directoryFileSystem: 1, openedBeforeRenames: 10, nextSyncfs: [:]) == .ownDirectorySync)
    }

    /// The next batch's files opened only after the first batch's renames: a `syncfs` on them would not report
    /// a failed write-back of the directory in between. It is called on the first batch's file that its own
    /// `syncfs` did not use (opened before the renames and before the next batch's files): that one proves the
    /// renames too, and the first batch's directory needs no sync of its own.
    @Test func aNextBatchOpenedAfterTheRenamesHasItsSyncfsOnAnUnusedFileOfTheBatchBefore() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = try await run(scratch, recorder, second: ["a/3", "a/4"], holdAfterRenames: true)
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        let position = { (line: String) in log.firstIndex(of: line) ?? Int.max }
        #expect(log.filter { $0.hasPrefix("syncfs") } == ["syncfs \(root)/a/1.part", "syncfs \(root)/a/2.part"], "\(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") } == ["dirsync \(root)/a"], "one directory sync, for the last batch: \(log)")
        for name in ["a/1", "a/2"] {
            #expect(position("rename \(root)/\(name).part \(root)/\(name)") < position("syncfs \(root)/a/2.part"), "\(log)")
            #expect(position("syncfs \(root)/a/2.part") < position("done \(name)"), "\(log)")
        }
        for name in ["a/1", "a/2", "a/3", "a/4"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    /// That `syncfs` failing: the next batch's files are synced one by one and the first batch's directory on
    /// its own, as after any failed `syncfs`.
    @Test func aFailedSyncfsOnAFileOfTheBatchBeforeFallsBackToTheirOwnSyncs() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = try await run(scratch, recorder, second: ["a/3", "a/4"], failSecondSyncfs: true, holdAfterRenames: true)
        let log = recorder.log.withLock { $0 }
        let root = scratch.root
        let position = { (line: String) in log.firstIndex(of: line) ?? Int.max }
        #expect(log.filter { $0.hasPrefix("syncfs") } == ["syncfs \(root)/a/1.part", "syncfs \(root)/a/2.part"], "\(log)")
        #expect(Set(log.filter { $0.hasPrefix("sync ") }) == ["sync \(root)/a/3.part", "sync \(root)/a/4.part"], "\(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") }.count == 2, "\(log)")
        #expect(position("syncfs \(root)/a/2.part") < position("dirsync \(root)/a"), "\(log)")
        #expect(position("dirsync \(root)/a") < position("done a/1"), "\(log)")
        for name in ["a/1", "a/2", "a/3", "a/4"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    /// Which file stands in for a group's first-opened one: only when that one was opened after the renames;
    /// a file of the batch before on the same filesystem, opened before the renames and before the group's
    /// first, never used for a `syncfs`; of those the one opened last.
    @Test func aStandInIsTheLastOpenedUnusedFileOfTheBatchBeforeOnTheFileSystem() {
        typealias Candidate = RenameProof.Candidate
        let awaiting = [Candidate(fileSystem: 1, openOrder: 3, usedForSyncfs: true),
                        Candidate(fileSystem: 1, openOrder: 5, usedForSyncfs: false),
                        Candidate(fileSystem: 1, openOrder: 4, usedForSyncfs: false),
                        Candidate(fileSystem: 2, openOrder: 8, usedForSyncfs: false),
                        Candidate(fileSystem: nil, openOrder: 9, usedForSyncfs: false)]
        #expect(RenameProof.standIn(fileSystem: 1, groupFirstOpened: 12, openedBeforeRenames: 10, awaiting: awaiting) == 1)
        #expect(RenameProof.standIn(fileSystem: 2, groupFirstOpened: 12, openedBeforeRenames: 10, awaiting: awaiting) == 3)
        #expect(RenameProof.standIn(fileSystem: 1, groupFirstOpened: 10, openedBeforeRenames: 10, awaiting: awaiting) == nil,
                "the group's own first file was opened before the renames")
        #expect(RenameProof.standIn(fileSystem: 3, groupFirstOpened: 12, openedBeforeRenames: 10, awaiting: awaiting) == nil,
                "none on that filesystem (an unknown one never counts)")
        #expect(RenameProof.standIn(fileSystem: 1, groupFirstOpened: 12, openedBeforeRenames: 10, awaiting: [awaiting[0]]) == nil,
                "the only one was used for a syncfs already")
        #expect(RenameProof.standIn(fileSystem: 2, groupFirstOpened: 12, openedBeforeRenames: 7, awaiting: awaiting) == nil,
                "opened after the renames")
        #expect(RenameProof.standIn(fileSystem: 1, groupFirstOpened: 12, openedBeforeRenames: 10, awaiting: []) == nil)
        // One opened after the renames (here with the group's first) proves neither.
        #expect(RenameProof.standIn(fileSystem: 1, groupFirstOpened: 11, openedBeforeRenames: 10,
                                    awaiting: [Candidate(fileSystem: 1, openOrder: 11, usedForSyncfs: false)]) == nil)
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
