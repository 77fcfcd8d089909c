import Foundation
import Synchronization
import Testing
@testable import Haul
import HaulIO

/// The group commit's promises, with the system calls replaced by recorders: data synced before any rename,
/// renames before the directory sync, one sync per directory per batch, and a failure that fails exactly the
/// files it leaves unproven (their `.part` and journal kept).
@Suite struct GroupCommitTests {
    /// What the injected operations saw, in order.
    final class Recorder: Sendable {
        let log = Mutex<[String]>([])
        let failSync = Mutex<Set<String>>([])
        let failDirectory = Mutex<Set<String>>([])
        let failRename = Mutex<Set<String>>([])
        /// `syncfs` fails on every filesystem when set.
        let failFileSystem = Mutex(false)
        /// Sizes of files by path (their `.part` path); 4 KiB when absent.
        let sizes = Mutex<[String: Int64]>([:])

        func note(_ line: String) { log.withLock { $0.append(line) } }

        var operations: GroupCommit.Operations {
            GroupCommit.Operations(
                syncData: { [self] file throws(SystemError) in
                    note("sync \(file.path)")
                    if failSync.withLock({ $0.contains(file.path) }) { throw SystemError(call: "fdatasync", errno: EIO) }
                },
                rename: { [self] from, to throws(SystemError) in
                    note("rename \(from) \(to)")
                    if failRename.withLock({ $0.contains(from) }) { throw SystemError(call: "rename", errno: EXDEV) }
                },
                syncDirectory: { [self] directory throws(SystemError) in
                    note("dirsync \(directory)")
                    if failDirectory.withLock({ $0.contains(directory) }) { throw SystemError(call: "fsync", errno: EIO) }
                },
                removeJournal: { [self] path in note("unjournal \(path)") })
        }

        /// ``operations`` with `syncfs` allowed: a file's filesystem is its directory's name (`a` is one, `b`
        /// another), its size from ``sizes``.
        var flushingOperations: GroupCommit.Operations {
            var operations = self.operations
            operations.flushesFileSystems = true
            operations.describe = { [self] file in
                let directory = OutputFile.directory(containing: file.path)
                return (directory.hasSuffix("/a") ? 1 : 2, sizes.withLock { $0[file.path] } ?? 4096)
            }
            operations.syncFileSystem = { [self] file throws(SystemError) in
                note("syncfs \(file.path)")
                if failFileSystem.withLock({ $0 }) { throw SystemError(call: "syncfs", errno: EIO) }
            }
            return operations
        }
    }

    /// A scratch directory with empty `.part` files to hand to the commit (the operations never touch them).
    final class Scratch: Sendable {
        let root: String
        init() throws {
            root = NSTemporaryDirectory() + "haul-group-commit-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: root + "/a", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/b", withIntermediateDirectories: true)
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }

        func file(_ name: String) throws -> OutputFile { try OutputFile.open(root + "/" + name + ".part", truncate: true) }
    }

    final class Outcomes: Sendable {
        let results = Mutex<[String: Result<Void, HaulError>]>([:])
        func completion(_ name: String) -> @Sendable (Result<Void, HaulError>) -> Void {
            { [self] result in results.withLock { $0[name] = result } }
        }
        subscript(name: String) -> Result<Void, HaulError>? { results.withLock { $0[name] } }
    }

    func entry(_ scratch: Scratch, _ name: String, journal: Bool = true, outcomes: Outcomes) throws -> GroupCommit.Entry {
        GroupCommit.Entry(file: try scratch.file(name), partPath: scratch.root + "/" + name + ".part",
                          destination: scratch.root + "/" + name,
                          journalPath: journal ? scratch.root + "/" + name + ".part.haul" : nil,
                          completion: outcomes.completion(name))
    }

    @Test func syncsEveryFileBeforeAnyRenameAndEachDirectoryOnceAfterTheRenames() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 3, operations: recorder.operations, start: { $0() })
        let names = ["a/1", "b/2", "a/3", "a/4", "b/5"]
        commit.commit(try names.map { try entry(scratch, $0, journal: $0 != "a/4", outcomes: outcomes) })

        let log = recorder.log.withLock { $0 }
        let kinds = log.map { $0.split(separator: " ")[0] }
        let lastSync = kinds.lastIndex(of: "sync")!, firstRename = kinds.firstIndex(of: "rename")!
        let lastRename = kinds.lastIndex(of: "rename")!, firstDirectory = kinds.firstIndex(of: "dirsync")!
        let lastDirectory = kinds.lastIndex(of: "dirsync")!, firstJournal = kinds.firstIndex(of: "unjournal")!
        #expect(lastSync < firstRename, "\(log)")
        #expect(lastRename < firstDirectory, "\(log)")
        #expect(lastDirectory < firstJournal, "\(log)")
        #expect(Set(log.filter { $0.hasPrefix("sync ") }) == Set(names.map { "sync \(scratch.root)/\($0).part" }))
        #expect(log.filter { $0.hasPrefix("dirsync") }.sorted() == ["dirsync \(scratch.root)/a", "dirsync \(scratch.root)/b"])
        #expect(log.filter { $0.hasPrefix("unjournal") }.count == 4, "no journal was written for a/4: \(log)")
        for name in names {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    @Test func aFailedDataSyncFailsThatFileOnlyAndLeavesItsPartAndJournal() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.failSync.withLock { $0 = [scratch.root + "/a/2.part"] }
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 2, operations: recorder.operations, start: { $0() })
        commit.commit(try ["a/1", "a/2", "a/3"].map { try entry(scratch, $0, outcomes: outcomes) })

        let log = recorder.log.withLock { $0 }
        #expect(!log.contains { $0.hasPrefix("rename \(scratch.root)/a/2.part") }, "never renamed: \(log)")
        #expect(!log.contains("unjournal \(scratch.root)/a/2.part.haul"), "journal kept: \(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") } == ["dirsync \(scratch.root)/a"])
        guard case .failure(let failure) = outcomes["a/2"], case .disk(let path, let error) = failure.reason else {
            Issue.record("a/2: \(String(describing: outcomes["a/2"]))")
            return
        }
        #expect(path == scratch.root + "/a/2.part")
        #expect(error == SystemError(call: "fdatasync", errno: EIO))
        for name in ["a/1", "a/3"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
    }

    @Test func aFailedDirectorySyncUndoesTheRenamesIntoThatDirectoryAndFailsThoseFiles() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.failDirectory.withLock { $0 = [scratch.root + "/b"] }
        recorder.failRename.withLock { $0 = [scratch.root + "/a/3.part"] }
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 1, operations: recorder.operations, start: { $0() })
        commit.commit(try ["a/1", "b/2", "a/3", "b/4"].map { try entry(scratch, $0, outcomes: outcomes) })

        let log = recorder.log.withLock { $0 }
        for name in ["b/2", "b/4"] {
            #expect(log.contains("rename \(scratch.root)/\(name) \(scratch.root)/\(name).part"), "renamed back: \(log)")
            #expect(!log.contains("unjournal \(scratch.root)/\(name).part.haul"), "journal kept: \(log)")
            guard case .failure(let failure) = outcomes[name], case .disk(let path, let error) = failure.reason else {
                Issue.record("\(name): \(String(describing: outcomes[name]))")
                continue
            }
            #expect(path == "\(scratch.root)/\(name)")
            #expect(error.call == "fsync")
        }
        guard case .failure(let failure) = outcomes["a/3"], case .disk(_, let renameError) = failure.reason else {
            Issue.record("a/3: \(String(describing: outcomes["a/3"]))")
            return
        }
        #expect(renameError.call == "rename")
        #expect(!log.contains("unjournal \(scratch.root)/a/3.part.haul"))
        guard case .success = outcomes["a/1"] else { Issue.record("a/1: \(String(describing: outcomes["a/1"]))"); return }
        #expect(log.contains("unjournal \(scratch.root)/a/1.part.haul"))
    }

    @Test func filesArrivingDuringABatchShareTheNextOne() async throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let gate = Mutex(false)
        var operations = recorder.operations
        let record = operations.syncData
        // The first file's sync holds its batch on the "disk" until the test lets it go.
        operations.syncData = { file throws(SystemError) in
            try record(file)
            if file.path.hasSuffix("/a/0.part") {
                while !gate.withLock({ $0 }) { usleep(1000) }
            }
        }
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 1, operations: operations,
                                 start: { work in Thread { work() }.start() })
        commit.submit(try entry(scratch, "a/0", outcomes: outcomes))
        try await waitUntil { recorder.log.withLock { $0.contains("sync \(scratch.root)/a/0.part") } }
        for index in 1...5 { commit.submit(try entry(scratch, "a/\(index)", outcomes: outcomes)) }
        gate.withLock { $0 = true }
        try await waitUntil { outcomes.results.withLock { $0.count } == 6 }

        #expect(commit.batchCount == 2)
        let log = recorder.log.withLock { $0 }
        #expect(log.filter { $0.hasPrefix("dirsync") }.count == 2, "one directory sync per batch: \(log)")
        // The second batch: five syncs, then five renames, then one directory sync.
        let second = Array(log.drop { !$0.hasPrefix("sync \(scratch.root)/a/1") && !$0.hasPrefix("sync \(scratch.root)/a/2") })
        #expect(second.prefix(5).allSatisfy { $0.hasPrefix("sync ") }, "\(log)")
        #expect(second.dropFirst(5).prefix(5).allSatisfy { $0.hasPrefix("rename ") }, "\(log)")
        #expect(second.dropFirst(10).first?.hasPrefix("dirsync") == true, "\(log)")
        for index in 0...5 {
            guard case .success = outcomes["a/\(index)"] else { Issue.record("a/\(index)"); continue }
        }
    }

    /// Work handed to `gather`, `start` or `deliver`, kept until the test runs it (a loop's turn, made by hand).
    final class Deferred: Sendable {
        let work = Mutex<[@Sendable () -> Void]>([])
        let calls = Mutex(0)
        func take(_ body: @escaping @Sendable () -> Void) { work.withLock { $0.append(body) }; calls.withLock { $0 += 1 } }
        /// Runs what was handed in so far (not what that adds); returns how many.
        @discardableResult func run() -> Int {
            let bodies = work.withLock { work in defer { work = [] }; return work }
            for body in bodies { body() }
            return bodies.count
        }
    }

    /// The files handed in during one turn of the submitting thread (the client's loop) form one batch: the
    /// first asks for the batch's start once, the others join it, and one thread is started for all of them.
    @Test func filesHandedInOnOneTurnShareOneBatchStartedOnce() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let gathered = Deferred(), started = Deferred()
        let commit = GroupCommit(parallelSyncs: 2, operations: recorder.flushingOperations,
                                 start: { started.take($0) }, gather: { gathered.take($0) })
        let names = ["a/1", "a/2", "a/3", "a/4", "b/5"]
        for name in names { commit.submit(try entry(scratch, name, outcomes: outcomes)) }
        #expect(gathered.calls.withLock { $0 } == 1, "one start asked for the turn's files")
        #expect(started.calls.withLock { $0 } == 0 && recorder.log.withLock { $0 }.isEmpty, "nothing starts within the turn")

        #expect(gathered.run() == 1)   // the turn is over
        #expect(started.calls.withLock { $0 } == 1, "one thread for the batch")
        // A file handed in while the batch is under way (started, not yet run) joins it: no second start.
        commit.submit(try entry(scratch, "a/6", outcomes: outcomes))
        #expect(gathered.calls.withLock { $0 } == 1)
        #expect(started.run() == 1)
        #expect(commit.batchCount == 1)
        let log = recorder.log.withLock { $0 }
        #expect(log.filter { $0.hasPrefix("syncfs") }.count == 1, "the a/ files share one syncfs: \(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") }.count == 2, "one sync per directory: \(log)")
        for name in names + ["a/6"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }

        // Once the batch is done, the next file asks for a start again.
        commit.submit(try entry(scratch, "a/7", outcomes: outcomes))
        #expect(gathered.calls.withLock { $0 } == 2)
        gathered.run()
        started.run()
        #expect(commit.batchCount == 2)
        guard case .success = outcomes["a/7"] else { Issue.record("a/7: \(String(describing: outcomes["a/7"]))"); return }
    }

    /// A batch's outcomes go back in one call of `deliver`, after the renames, the directory syncs and the
    /// journals' removal; a failed file (its `.part` kept) is reported in the same call.
    @Test func aBatchsOutcomesAreDeliveredTogetherAfterItsDirectorySync() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.failSync.withLock { $0 = [scratch.root + "/b/2.part"] }
        let outcomes = Outcomes()
        let delivered = Deferred()
        let commit = GroupCommit(parallelSyncs: 2, operations: recorder.operations, start: { $0() },
                                 deliver: { delivered.take($0) })
        commit.commit(try ["a/1", "b/2", "a/3", "b/4"].map { try entry(scratch, $0, outcomes: outcomes) })
        #expect(delivered.calls.withLock { $0 } == 1)
        #expect(outcomes.results.withLock { $0 }.isEmpty, "nothing reported before the delivery runs")
        let log = recorder.log.withLock { $0 }
        #expect(log.filter { $0.hasPrefix("dirsync") }.count == 2, "\(log)")
        #expect(!log.contains { $0.hasPrefix("rename \(scratch.root)/b/2.part") }, "never renamed: \(log)")

        delivered.run()
        #expect(outcomes.results.withLock { $0 }.count == 4)
        for name in ["a/1", "a/3", "b/4"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
        }
        guard case .failure(let failure) = outcomes["b/2"], case .disk(let path, _) = failure.reason else {
            Issue.record("b/2: \(String(describing: outcomes["b/2"]))")
            return
        }
        #expect(path == scratch.root + "/b/2.part")
    }

    // MARK: syncfs

    @Test func smallFilesOnOneFileSystemShareOneSyncfsOnTheFirstOpenedThenRenamesThenTheDirectory() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 4, operations: recorder.flushingOperations, start: { $0() })
        // Opened in the order 1, 2, 3, 4, 5 but handed in another: syncfs goes to the first opened (a/1).
        let entries = try ["a/1", "a/2", "a/3", "b/4", "a/5"].map { try entry(scratch, $0, outcomes: outcomes) }
        commit.commit([entries[2], entries[0], entries[4], entries[1], entries[3]])

        let log = recorder.log.withLock { $0 }
        // a/1, a/2, a/3 and a/5 share filesystem 1: one syncfs; b/4 is alone on filesystem 2: its own fdatasync,
        // which comes first.
        #expect(log.filter { $0.hasPrefix("sync") } == ["sync \(scratch.root)/b/4.part", "syncfs \(scratch.root)/a/1.part"], "\(log)")
        let kinds = log.map { $0.split(separator: " ")[0] }
        #expect(kinds.lastIndex(of: "syncfs")! < kinds.firstIndex(of: "rename")!, "\(log)")
        #expect(kinds.lastIndex(of: "rename")! < kinds.firstIndex(of: "dirsync")!, "\(log)")
        #expect(log.filter { $0.hasPrefix("dirsync") }.sorted() == ["dirsync \(scratch.root)/a", "dirsync \(scratch.root)/b"])
        for name in ["a/1", "a/2", "a/3", "b/4", "a/5"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
            #expect(log.contains("unjournal \(scratch.root)/\(name).part.haul"))
        }
    }

    @Test func aLargeFileIsSyncedOnItsOwnBeforeTheSyncfsOfTheSmallOnes() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.sizes.withLock { $0 = [scratch.root + "/a/2.part": FlushPlan.largeFile + 1] }
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 2, operations: recorder.flushingOperations, start: { $0() })
        commit.commit(try ["a/1", "a/2", "a/3"].map { try entry(scratch, $0, outcomes: outcomes) })
        let log = recorder.log.withLock { $0 }
        #expect(log.filter { $0.hasPrefix("sync") } == ["sync \(scratch.root)/a/2.part", "syncfs \(scratch.root)/a/1.part"], "\(log)")
        #expect(outcomes.results.withLock { $0.values.allSatisfy { if case .success = $0 { true } else { false } } })
    }

    /// The issue's test: a failed batch flush keeps the `.part` files (never renamed, journals kept) of
    /// the files it cannot prove, and says so for each; here no file's own sync succeeds either.
    @Test func aFailedSyncfsWhoseFilesCannotBeProvenKeepsEveryPartAndJournalAndFailsEachFile() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.failFileSystem.withLock { $0 = true }
        let names = ["a/1", "a/2", "a/3"]
        recorder.failSync.withLock { $0 = Set(names.map { scratch.root + "/" + $0 + ".part" }) }
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 2, operations: recorder.flushingOperations, start: { $0() })
        commit.commit(try names.map { try entry(scratch, $0, outcomes: outcomes) })

        let log = recorder.log.withLock { $0 }
        #expect(log.first == "syncfs \(scratch.root)/a/1.part", "\(log)")
        #expect(Set(log.filter { $0.hasPrefix("sync ") }) == Set(names.map { "sync \(scratch.root)/\($0).part" }),
                "each file then synced on its own: \(log)")
        #expect(!log.contains { $0.hasPrefix("rename") || $0.hasPrefix("unjournal") || $0.hasPrefix("dirsync") }, "\(log)")
        for name in names {
            guard case .failure(let failure) = outcomes[name], case .disk(let path, let error) = failure.reason else {
                Issue.record("\(name): \(String(describing: outcomes[name]))")
                continue
            }
            #expect(path == "\(scratch.root)/\(name).part", "the message names the kept .part")
            #expect(error == SystemError(call: "fdatasync", errno: EIO))
            #expect(FileManager.default.fileExists(atPath: path), "\(name).part kept")
        }
    }

    @Test func aFailedSyncfsFailsOnlyTheFilesWhoseOwnSyncFailsTheOthersAreProvenAndRenamed() throws {
        let scratch = try Scratch()
        let recorder = Recorder()
        recorder.failFileSystem.withLock { $0 = true }
        recorder.failSync.withLock { $0 = [scratch.root + "/a/2.part"] }
        let outcomes = Outcomes()
        let commit = GroupCommit(parallelSyncs: 3, operations: recorder.flushingOperations, start: { $0() })
        commit.commit(try ["a/1", "a/2", "a/3"].map { try entry(scratch, $0, outcomes: outcomes) })

        let log = recorder.log.withLock { $0 }
        #expect(!log.contains { $0.hasPrefix("rename \(scratch.root)/a/2.part") }, "never renamed: \(log)")
        #expect(!log.contains("unjournal \(scratch.root)/a/2.part.haul"), "journal kept: \(log)")
        guard case .failure(let failure) = outcomes["a/2"], case .disk(let path, _) = failure.reason else {
            Issue.record("a/2: \(String(describing: outcomes["a/2"]))")
            return
        }
        #expect(path == scratch.root + "/a/2.part")
        for name in ["a/1", "a/3"] {
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
            #expect(log.contains("rename \(scratch.root)/\(name).part \(scratch.root)/\(name)"))
        }
    }

    /// The real calls (`fstat`, `syncfs`, `rename`, directory `fsync`) on real files: every file ends under its
    /// final name with its bytes, no `.part` left.
    @Test func theSystemOperationsCommitRealFiles() throws {
        let scratch = try Scratch()
        let outcomes = Outcomes()
        let commit = GroupCommit(start: { $0() })
        var entries: [GroupCommit.Entry] = []
        for index in 0..<12 {
            let name = (index % 2 == 0 ? "a/" : "b/") + "\(index)"
            let entry = try entry(scratch, name, journal: false, outcomes: outcomes)
            let bytes = [UInt8](repeating: UInt8(index), count: 4096 + index)
            try bytes.withUnsafeBytes { try entry.file.write($0, at: 0) }
            entries.append(entry)
        }
        // One syncfs led by the first-opened file, or (an old kernel, or much dirty data on the machine) an
        // fdatasync each.
        let plan = commit.plan(entries).0
        let shared = FlushPlan(perFile: [], fileSystems: [Array(0..<12)])
        #expect(plan == shared || plan == FlushPlan(perFile: Array(0..<12), fileSystems: []), "\(plan)")
        commit.commit(entries)
        for index in 0..<12 {
            let name = (index % 2 == 0 ? "a/" : "b/") + "\(index)"
            guard case .success = outcomes[name] else { Issue.record("\(name): \(String(describing: outcomes[name]))"); continue }
            let data = try #require(FileManager.default.contents(atPath: scratch.root + "/" + name))
            #expect(data == Data(repeating: UInt8(index), count: 4096 + index))
            #expect(!FileManager.default.fileExists(atPath: scratch.root + "/" + name + ".part"))
        }
    }

    /// `/proc/meminfo` is read at most once per ``RecentDirtyBytes/maximumAge``: batches follow each other every
    /// few milliseconds, and four calls each were about one per small file.
    @Test func theMachinesDirtyBytesAreReadAtMostOncePerFiftyMilliseconds() {
        let reads = Mutex(0)
        let recent = RecentDirtyBytes(measure: { reads.withLock { $0 += 1; return Int64($0) << 20 } })
        let start = MonotonicInstant.now()
        #expect(recent.read(now: start) == 1 << 20)
        #expect(recent.read(now: start.advanced(by: .milliseconds(49))) == 1 << 20)
        #expect(reads.withLock { $0 } == 1)
        #expect(recent.read(now: start.advanced(by: RecentDirtyBytes.maximumAge)) == 2 << 20)
        #expect(reads.withLock { $0 } == 2)
        // The real one reads something on Linux.
        #expect(RecentDirtyBytes().read() != nil)
    }

    /// Polls `condition` until it holds; fails after a generous deadline instead of hanging.
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
