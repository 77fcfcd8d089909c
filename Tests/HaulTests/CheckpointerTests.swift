import Glibc
@testable import Haul
import HaulIO
import HaulTestSupport
import Synchronization
import Testing
@testable import HaulJournal

/// A stand-in for `fdatasync` of the data file: counts calls, can hold a call until released (to line
/// checkpoints up behind it), fails the calls it is told to, and notes if two ever overlap.
private final class FakeDataSync: Sendable {
    private struct State {
        var calls = 0
        var inFlight = 0
        var maxInFlight = 0
        var failing: Set<Int> = []
        var holding: Set<Int> = []
        var held = false
    }
    private let state = Mutex(State())

    /// Fails call number `call` (1-based) with `EIO`.
    func fail(call: Int) { state.withLock { _ = $0.failing.insert(call) } }
    /// Holds call number `call` until ``release()``.
    func hold(call: Int) { state.withLock { _ = $0.holding.insert(call) } }
    func release() { state.withLock { $0.holding = [] } }

    var calls: Int { state.withLock { $0.calls } }
    var maxInFlight: Int { state.withLock { $0.maxInFlight } }
    /// Whether a call is being held right now.
    var isHolding: Bool { state.withLock { $0.held } }

    func synchronize(_ file: OutputFile) throws(SystemError) {
        let call = state.withLock { state in
            state.calls += 1
            state.inFlight += 1
            state.maxInFlight = max(state.maxInFlight, state.inFlight)
            return state.calls
        }
        defer { state.withLock { $0.inFlight -= 1 } }
        // Held until released (the test does, and so does the fixture when it goes away). The deadline only
        // bounds a hang; it is far longer than a test can take to get round to its release on a loaded machine,
        // where the cooperative pool can be blocked for tens of seconds: a hold that ended by itself before
        // the test looked would reorder the checkpoints and fail a correct checkpointer.
        poll(every: .milliseconds(1), within: 600) {
            state.withLock { state in
                state.held = state.holding.contains(call)
                return !state.held
            }
        }
        state.withLock { $0.held = false }
        if state.withLock({ $0.failing.contains(call) }) { throw SystemError(call: "fdatasync", errno: EIO) }
        try file.synchronize()
    }
}

/// What happened, in order, as the completions saw it.
private final class Events: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ event: String) { list.withLock { $0.append(event) } }
    var all: [String] { list.withLock { $0 } }
}

/// A journal's state for a download of 1 MiB with `ranges` durable.
private func journalState(durable ranges: [Range<Int64>]) -> JournalState {
    JournalState(
        url: "https://example.com/files/big.iso?token=abc",
        mirrors: ["https://mirror1.example.net/big.iso", "http://mirror2.example.org/pub/big.iso"],
        etag: Array("\"5f3c-1a2b3c4d\"".utf8),
        lastModified: 1_763_000_000,
        totalLength: 1 << 20,
        minimumSegmentSize: 1 << 20,
        checksum: JournalChecksum(algorithm: "sha256", hex: String(repeating: "ab", count: 32)),
        createdAt: 1_763_790_000,
        durable: ByteRangeSet(ranges)
    )
}

/// One checkpointer over a real data file and journal in a temp directory, on its own loop.
private final class CheckpointerFixture: @unchecked Sendable {
    // @unchecked Sendable: `checkpointer` is only touched on `loop` (through `onLoop`).
    let directory: TemporaryDirectory
    let loop: EventLoop
    let file: OutputFile
    let sync = FakeDataSync()
    let events = Events()
    let checkpointer: Checkpointer
    var journalPath: String { directory.file("f.part.haul") }

    init(syncsData: Bool = true, state: JournalState = journalState(durable: [])) throws {
        directory = try TemporaryDirectory(prefix: "haul-journal")
        loop = try EventLoop(name: "checkpointer-test")
        file = try OutputFile.openForDownload(directory.file("f.part")).file
        let sync = self.sync
        checkpointer = Checkpointer(loop: loop, journalPath: directory.file("f.part.haul"), file: file,
                                    syncsData: syncsData, state: state,
                                    synchronizeData: { file throws(SystemError) in try sync.synchronize(file) })
    }

    deinit {
        // A held sync would keep the loop's blocking work, and so the shutdown, waiting.
        sync.release()
        loop.shutdown()
    }

    func onLoop<T: Sendable>(_ body: @escaping @Sendable (Checkpointer) -> T) async throws -> T {
        let checkpointer = self.checkpointer
        return try await loop.submit { body(checkpointer) }
    }

    /// Asks for a checkpoint of `ranges`; its completion adds `name` to the events.
    func checkpoint(_ ranges: [Range<Int64>], _ name: String) async throws {
        let events = self.events
        try await onLoop { $0.checkpoint(ByteRangeSet(ranges)) { events.add(name) } }
    }

    /// The state on disk, or nil if there is no journal.
    func recorded() -> JournalState? {
        try? ResumeJournal.open(path: journalPath).1
    }
}

@Suite struct CheckpointerTests {
    @Test func recordsWrittenRangesAfterSyncingTheData() async throws {
        let fixture = try CheckpointerFixture()
        try await fixture.checkpoint([0..<100], "first")
        #expect(await eventually { fixture.events.all == ["first"] })
        #expect(fixture.recorded()?.durable == ByteRangeSet([0..<100]))
        #expect(fixture.recorded()?.bootID == nil)
        try await fixture.checkpoint([0..<100, 200..<300], "second")
        #expect(await eventually { fixture.events.all == ["first", "second"] })
        #expect(fixture.recorded()?.durable == ByteRangeSet([0..<100, 200..<300]))
        #expect(fixture.sync.calls == 2)
        #expect(try await fixture.onLoop { $0.lastError == nil && $0.dataSyncFailure == nil && $0.durableBytes == 200 })
    }

    @Test func aFailedDataSyncEndsRecordingForGood() async throws {
        let fixture = try CheckpointerFixture()
        fixture.sync.fail(call: 2)
        try await fixture.checkpoint([0..<100], "synced")
        #expect(await eventually { fixture.events.all == ["synced"] })
        try await fixture.checkpoint([0..<200], "sync fails")
        #expect(await eventually { fixture.events.all.count == 2 })
        let failure = try await fixture.onLoop { ($0.dataSyncFailure, $0.lastError) }
        #expect(failure.0 == SystemError(call: "fdatasync", errno: EIO))
        #expect(failure.1 == .io(call: "fdatasync", errno: .ioError, path: fixture.file.path))
        #expect(fixture.recorded()?.durable == ByteRangeSet([0..<100]))

        // Syncs would succeed again, but nothing more is recorded: those pages may have been dropped.
        try await fixture.checkpoint([0..<300], "after")
        #expect(fixture.events.all == ["synced", "sync fails", "after"])  // completed at once
        #expect(fixture.sync.calls == 2)
        #expect(fixture.recorded()?.durable == ByteRangeSet([0..<100]))
        let after = try await fixture.onLoop { ($0.dataSyncFailure, $0.lastError, $0.durableBytes) }
        #expect(after.0 == SystemError(call: "fdatasync", errno: EIO))
        #expect(after.1 == .io(call: "fdatasync", errno: .ioError, path: fixture.file.path))
        #expect(after.2 == 100)
    }

    @Test func checkpointsQueuedBehindAFailedSyncAreNotRecorded() async throws {
        let fixture = try CheckpointerFixture()
        fixture.sync.fail(call: 1)
        fixture.sync.hold(call: 1)
        try await fixture.checkpoint([0..<100], "failing")
        #expect(await eventually { fixture.sync.isHolding })
        try await fixture.checkpoint([0..<200], "queued 1")
        try await fixture.checkpoint([0..<300], "queued 2")
        fixture.sync.release()
        #expect(await eventually { fixture.events.all.count == 3 })
        #expect(fixture.events.all == ["failing", "queued 1", "queued 2"])
        #expect(fixture.sync.calls == 1)
        // The failed sync was the first checkpoint's: no journal was ever created.
        #expect(fixture.recorded() == nil)
        #expect(try await fixture.onLoop { $0.dataSyncFailure } == SystemError(call: "fdatasync", errno: EIO))
    }

    @Test func aJournalWriteFailureIsRetriedByTheNextCheckpoint() async throws {
        let fixture = try CheckpointerFixture()
        // A range past the total length cannot be written: the journal refuses it, the data sync worked.
        try await fixture.checkpoint([0..<(2 << 20)], "refused")
        #expect(await eventually { fixture.events.all == ["refused"] })
        let refused = try await fixture.onLoop { ($0.dataSyncFailure, $0.lastError) }
        #expect(refused.0 == nil)
        guard case .inJournal(_, .unwritableState) = refused.1 else {
            Issue.record("got \(String(describing: refused.1))"); return
        }
        try await fixture.checkpoint([0..<100], "fine")
        #expect(await eventually { fixture.events.all == ["refused", "fine"] })
        #expect(fixture.recorded()?.durable == ByteRangeSet([0..<100]))
        #expect(try await fixture.onLoop { $0.lastError == nil })
    }

    @Test func unsyncedCheckpointsCarryThisBootsID() async throws {
        let fixture = try CheckpointerFixture(syncsData: false)
        try await fixture.checkpoint([0..<100], "unsynced")
        #expect(await eventually { fixture.events.all == ["unsynced"] })
        #expect(fixture.sync.calls == 0)
        let recorded = try #require(fixture.recorded())
        #expect(recorded.bootID == JournalState.currentBootID())
        if access("/proc/sys/kernel/random/boot_id", R_OK) == 0 { #expect(recorded.bootID?.count == 36) }
        #expect(recorded.trustedDurable(currentBootID: JournalState.currentBootID()) == ByteRangeSet([0..<100]))
        #expect(recorded.trustedDurable(currentBootID: Array("another boot".utf8)) == ByteRangeSet())
    }

    /// A pause's checkpoint (the process may be killed right after it, by a second Ctrl-C) records what is
    /// written, bound to this boot, before the data sync ends; the synced record follows. A small file had
    /// no journal at all until the sync ended, so a second signal during it lost every byte.
    @Test func aPausesCheckpointRecordsTheBytesForThisBootBeforeTheDataSyncEnds() async throws {
        let fixture = try CheckpointerFixture()
        fixture.sync.hold(call: 1)
        let events = fixture.events
        try await fixture.onLoop { $0.checkpoint(ByteRangeSet([0..<500]), pausing: true) { events.add("paused") } }
        #expect(await eventually { fixture.sync.isHolding })
        let early = try #require(fixture.recorded(), "a journal exists while the data sync runs")
        #expect(early.durable == ByteRangeSet([0..<500]))
        #expect(early.bootID != nil && early.bootID == JournalState.currentBootID())
        fixture.sync.release()
        #expect(await eventually { events.all == ["paused"] })
        let final = try #require(fixture.recorded())
        #expect(final.durable == ByteRangeSet([0..<500]) && final.bootID == nil)
    }

    /// A synced record is never replaced by a boot-bound one (a power loss in between would lose it), and a
    /// failed data sync takes the boot-bound record back.
    @Test func aPausesEarlyRecordNeverReplacesASyncedOneAndGoesIfTheSyncFails() async throws {
        let synced = try CheckpointerFixture()
        try await synced.checkpoint([0..<100], "synced")
        #expect(await eventually { synced.events.all == ["synced"] })
        synced.sync.hold(call: 2)
        let events = synced.events
        try await synced.onLoop { $0.checkpoint(ByteRangeSet([0..<400]), pausing: true) { events.add("paused") } }
        #expect(await eventually { synced.sync.isHolding })
        #expect(synced.recorded()?.durable == ByteRangeSet([0..<100]) && synced.recorded()?.bootID == nil)
        synced.sync.release()
        #expect(await eventually { events.all == ["synced", "paused"] })

        let failing = try CheckpointerFixture()
        failing.sync.fail(call: 1)
        failing.sync.hold(call: 1)
        let failures = failing.events
        try await failing.onLoop { $0.checkpoint(ByteRangeSet([0..<500]), pausing: true) { failures.add("paused") } }
        #expect(await eventually { failing.sync.isHolding })
        #expect(failing.recorded()?.durable == ByteRangeSet([0..<500]))
        failing.sync.release()
        #expect(await eventually { failures.all == ["paused"] })
        #expect(failing.recorded().map { $0.durable.count } ?? 0 == 0, "no record vouches for pages whose sync failed")
    }

    @Test func syncedCheckpointsClearABootIDFromAnUnsyncedRun() async throws {
        // Resuming with syncs a journal an unsynced run wrote in this boot: the first data sync flushes
        // those pages too, so the record no longer depends on the boot.
        var resumed = journalState(durable: [0..<10])
        resumed.bootID = JournalState.currentBootID() ?? Array("some boot".utf8)
        let fixture = try CheckpointerFixture(syncsData: true, state: resumed)
        try await fixture.checkpoint([0..<100], "synced")
        #expect(await eventually { fixture.events.all == ["synced"] })
        let recorded = try #require(fixture.recorded())
        #expect(recorded.bootID == nil && recorded.durable == ByteRangeSet([0..<100]))
        #expect(try await fixture.onLoop { $0.state.bootID == nil })
    }

    @Test func discardWhenIdleWaitsForTheRunningCheckpointAndStopsLaterOnes() async throws {
        let fixture = try CheckpointerFixture()
        // The first checkpoint creates the journal; hold it mid-flight, as a restart would find it.
        fixture.sync.hold(call: 1)
        try await fixture.checkpoint([0..<100], "creating")
        #expect(await eventually { fixture.sync.isHolding })
        try await fixture.checkpoint([0..<200], "queued")
        let events = fixture.events
        try await fixture.onLoop { $0.discardWhenIdle { events.add("discarded") } }
        try await fixture.checkpoint([0..<300], "after discard")  // asked for while the first still runs
        #expect(fixture.events.all == ["after discard"])
        fixture.sync.release()
        #expect(await eventually { fixture.events.all.count == 4 })
        #expect(fixture.events.all == ["after discard", "creating", "queued", "discarded"])
        #expect(!OutputFileExistsAtAll(fixture.journalPath))
        #expect(!OutputFileExistsAtAll(ResumeJournal.temporaryPath(fixture.journalPath)))

        // Later checkpoints complete without writing anything.
        try await fixture.checkpoint([0..<400], "later")
        #expect(fixture.events.all.last == "later")
        #expect(fixture.sync.calls == 1)
        #expect(!OutputFileExistsAtAll(fixture.journalPath))
        #expect(try await fixture.onLoop { $0.isDiscarded })
    }

    @Test func discardWhenIdleRemovesAnExistingJournalAtOnceWhenIdle() async throws {
        let fixture = try CheckpointerFixture()
        try await fixture.checkpoint([0..<100], "recorded")
        #expect(await eventually { fixture.events.all == ["recorded"] })
        #expect(OutputFileExistsAtAll(fixture.journalPath))
        let events = fixture.events
        try await fixture.onLoop { $0.discardWhenIdle { events.add("discarded") } }
        #expect(fixture.events.all == ["recorded", "discarded"])
        #expect(!OutputFileExistsAtAll(fixture.journalPath))
    }

    /// A completion that asks for the next checkpoint must not start a second job beside the queued one.
    @Test func aCheckpointAskedForFromACompletionNeverRunsBesideAnother() async throws {
        let fixture = try CheckpointerFixture()
        fixture.sync.hold(call: 1)
        let events = fixture.events
        try await fixture.onLoop { checkpointer in
            checkpointer.checkpoint(ByteRangeSet([0..<100])) {
                events.add("first")
                checkpointer.checkpoint(ByteRangeSet([0..<300])) { events.add("from completion") }
            }
        }
        #expect(await eventually { fixture.sync.isHolding })
        try await fixture.checkpoint([0..<200], "queued")
        fixture.sync.release()
        #expect(await eventually { fixture.events.all.count == 3 })
        #expect(fixture.events.all == ["first", "queued", "from completion"])
        #expect(fixture.sync.maxInFlight == 1)
        #expect(fixture.sync.calls == 2)  // the queued set was superseded by the newer one
        #expect(fixture.recorded()?.durable == ByteRangeSet([0..<300]))
    }
}

private func OutputFileExistsAtAll(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0
}
