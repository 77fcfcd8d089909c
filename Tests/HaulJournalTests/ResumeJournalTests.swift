import Glibc
import Testing
import HaulTestSupport
@testable import HaulJournal

/// A fresh directory under `$TMPDIR` (else /tmp), removed with its files when the test ends: HaulTestSupport's
/// `TemporaryDirectory`, made without a `try` at each of the many call sites.
final class JournalTestDirectory {
    private let directory: TemporaryDirectory

    init() {
        do { directory = try TemporaryDirectory(prefix: "haul-journal") } catch { preconditionFailure("\(error)") }
    }

    var path: String { directory.path }

    func file(_ name: String) -> String { directory.file(name) }
}

func fileBytes(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    precondition(fd >= 0)
    defer { close(fd) }
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        if count <= 0 { break }
        out += buffer[0..<count]
    }
    return out
}

func fileSize(_ path: String) -> Int {
    var info = stat()
    precondition(stat(path, &info) == 0)
    return Int(info.st_size)
}

func overwrite(_ path: String, at offset: Int, with bytes: [UInt8]) {
    let fd = open(path, O_WRONLY)
    precondition(fd >= 0)
    defer { close(fd) }
    precondition(bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(offset)) } == bytes.count)
}

@Suite struct ResumeJournalTests {
    @Test func createThenOpen() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let state = JournalFixtures.state()
        let journal = try ResumeJournal.create(path: path, state: state)
        #expect(journal.sequence == 1 && journal.latestSlot == 0 && journal.slotCapacity == 4096)
        let (reopened, read) = try ResumeJournal.open(path: path)
        #expect(read == state)
        #expect(reopened.sequence == 1 && reopened.recoveredFrom == nil)
        #expect(fileSize(path) == 4096 + JournalCodec.encode(state).count)
        #expect(!OutputFileExists(ResumeJournal.temporaryPath(path)))
    }

    @Test func checkpointsAlternateSlotsAndTheLatestWins() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        var state = JournalFixtures.state(ranges: [])
        let journal = try ResumeJournal.create(path: path, state: state)
        for step in 1...6 {
            state.durable.insert(Int64(step) * 1000..<(Int64(step) * 1000 + 500))
            try journal.checkpoint(state)
            #expect(journal.sequence == UInt64(step + 1))
            #expect(journal.latestSlot == step % 2)
            let (reopened, read) = try ResumeJournal.open(path: path)
            #expect(read == state)
            #expect(reopened.sequence == UInt64(step + 1) && reopened.latestSlot == step % 2)
        }
        // Reopened journals continue the sequence in the other slot.
        let (reopened, _) = try ResumeJournal.open(path: path)
        state.durable.insert(0..<10)
        try reopened.checkpoint(state)
        #expect(reopened.sequence == 8 && reopened.latestSlot == 1)
        #expect(try ResumeJournal.open(path: path).1 == state)
    }

    @Test func tornNewestSlotFallsBackToThePreviousState() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let first = JournalFixtures.state(ranges: [0..<100])
        let second = JournalFixtures.state(ranges: [0..<200, 300..<400])
        let journal = try ResumeJournal.create(path: path, state: first)
        try journal.checkpoint(second)  // slot 1, the end of the file
        let slot1 = JournalCodec.slotOffset(1, slotCapacity: 4096)
        // Power loss mid-write: slot 1 only half there.
        #expect(truncate(path, off_t(slot1 + JournalCodec.encode(second).count / 2)) == 0)
        let (reopened, read) = try ResumeJournal.open(path: path)
        #expect(read == first)
        #expect(reopened.sequence == 1 && reopened.latestSlot == 0)
        guard case .slot(1, .truncated) = reopened.recoveredFrom else {
            Issue.record("got \(String(describing: reopened.recoveredFrom))"); return
        }
        // Continuing rewrites the torn slot.
        let third = JournalFixtures.state(ranges: [0..<500])
        try reopened.checkpoint(third)
        #expect(reopened.sequence == 2 && reopened.latestSlot == 1)
        let (again, state) = try ResumeJournal.open(path: path)
        #expect(state == third && again.recoveredFrom == nil)
    }

    @Test func corruptNewestSlotFallsBackToThePreviousState() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let states = (1...3).map { JournalFixtures.state(ranges: [0..<(Int64($0) * 100)]) }
        let journal = try ResumeJournal.create(path: path, state: states[0])
        try journal.checkpoint(states[1])
        try journal.checkpoint(states[2])  // slot 0, sequence 3
        let bytes = fileBytes(path)
        overwrite(path, at: 4096 + 60, with: [bytes[4096 + 60] ^ 0x10])
        let (reopened, read) = try ResumeJournal.open(path: path)
        #expect(read == states[1])
        #expect(reopened.sequence == 2 && reopened.latestSlot == 1)
        guard case .slot(0, .checksumMismatch) = reopened.recoveredFrom else {
            Issue.record("got \(String(describing: reopened.recoveredFrom))"); return
        }
    }

    @Test func bothSlotsCorruptIsAClearError() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let journal = try ResumeJournal.create(path: path, state: JournalFixtures.state())
        try journal.checkpoint(JournalFixtures.state(ranges: [0..<5]))
        overwrite(path, at: 4096, with: Array("XXXX".utf8))
        overwrite(path, at: 8192 + 50, with: [0xEE, 0xEE])
        let error = #expect(throws: JournalError.self) { try ResumeJournal.open(path: path) }
        guard case .inJournal(path, .noValidRecord(.badMagic, .checksumMismatch)) = error else {
            Issue.record("got \(String(describing: error))"); return
        }
        let description = error!.description
        print(description)
        #expect(description.hasPrefix("journal \(path): no valid record (slot 0: bad magic in record"))
        #expect(description.contains("slot 1: checksum mismatch (stored 0x"))
    }

    @Test func everyTruncationOfARealFileOpensToAWrittenStateOrAnError() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let states = (1...3).map { JournalFixtures.state(ranges: [0..<(Int64($0) * 100), 1000..<1001]) }
        let journal = try ResumeJournal.create(path: path, state: states[0])
        try journal.checkpoint(states[1])
        try journal.checkpoint(states[2])
        let bytes = fileBytes(path)
        let copy = directory.file("copy.haul")
        for length in stride(from: 0, through: bytes.count, by: 7) {
            let fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, length) }
            close(fd)
            do {
                let (_, state) = try ResumeJournal.open(path: copy)
                #expect(states.contains(state), "length \(length)")
            } catch {
                #expect(length < bytes.count, "length \(length): \(error)")
            }
        }
    }

    @Test func growingPastTheSlotRewritesTheJournal() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let small = JournalFixtures.state(ranges: [0..<10], total: 1 << 40)
        let journal = try ResumeJournal.create(path: path, state: small)
        #expect(journal.slotCapacity == 4096)
        let big = JournalFixtures.state(ranges: JournalFixtures.manyRanges(3000, total: 1 << 40), total: 1 << 40)
        let bigRecord = JournalCodec.encode(big)
        #expect(bigRecord.count > 4096)
        try journal.checkpoint(big)
        #expect(journal.sequence == 2 && journal.latestSlot == 0)
        #expect(journal.slotCapacity >= bigRecord.count && journal.slotCapacity % 4096 == 0)
        #expect(!OutputFileExists(ResumeJournal.temporaryPath(path)))
        let (reopened, read) = try ResumeJournal.open(path: path)
        #expect(read == big && reopened.slotCapacity == journal.slotCapacity && reopened.sequence == 2)
        // And it keeps alternating in the larger file.
        var bigger = big
        bigger.durable.insert(0..<1)
        try journal.checkpoint(bigger)
        #expect(journal.sequence == 3 && journal.latestSlot == 1)
        #expect(try ResumeJournal.open(path: path).1 == bigger)
        // The old descriptor was closed and the new one writes to the renamed file, not the old inode.
        #expect(fileSize(path) == 4096 + journal.slotCapacity + JournalCodec.encode(bigger).count)
    }

    @Test func unwritableStateLeavesTheJournalAlone() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let good = JournalFixtures.state(ranges: [0..<10], total: 100)
        let journal = try ResumeJournal.create(path: path, state: good)
        let before = fileBytes(path)
        let past = JournalFixtures.state(ranges: [0..<10, 90..<101], total: 100)
        let error = #expect(throws: JournalError.self) { try journal.checkpoint(past) }
        guard case .inJournal(path, .unwritableState(.rangePastEnd(index: 1, start: 90, length: 11, totalLength: 100))) = error else {
            Issue.record("got \(String(describing: error))"); return
        }
        #expect(error!.description.contains("range 1 (start 90, length 11) ends past the total length 100"))
        #expect(fileBytes(path) == before)
        #expect(journal.sequence == 1)
        #expect(throws: JournalError.self) { try ResumeJournal.create(path: directory.file("other.haul"), state: past) }
        #expect(!OutputFileExists(directory.file("other.haul")))
    }

    @Test func ioErrorsNameTheCallAndPath() throws {
        let directory = JournalTestDirectory()
        let missing = directory.file("missing.part.haul")
        let error = #expect(throws: JournalError.self) { try ResumeJournal.open(path: missing) }
        #expect(error == .io(call: "open", errno: .noSuchFileOrDirectory, path: missing))
        #expect(error?.description == "open(\(missing)) failed: No such file or directory (errno 2)")
        let inMissingDirectory = directory.file("nope/f.part.haul")
        #expect(throws: JournalError.io(call: "open", errno: .noSuchFileOrDirectory, path: inMissingDirectory + ".tmp")) {
            try ResumeJournal.create(path: inMissingDirectory, state: JournalFixtures.state())
        }
    }

    @Test func removeDeletesJournalAndTempFile() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        _ = try ResumeJournal.create(path: path, state: JournalFixtures.state())
        let fd = open(ResumeJournal.temporaryPath(path), O_WRONLY | O_CREAT, 0o644)
        close(fd)
        try ResumeJournal.remove(path: path)
        #expect(!OutputFileExists(path) && !OutputFileExists(ResumeJournal.temporaryPath(path)))
        try ResumeJournal.remove(path: path)  // missing is fine
    }

    @Test func sizeForAOneGiBDownloadWithSixteenConnections() throws {
        let directory = JournalTestDirectory()
        let path = directory.file("f.part.haul")
        let state = JournalFixtures.sixteenConnections()
        let journal = try ResumeJournal.create(path: path, state: state)
        let afterCreate = fileSize(path)
        try journal.checkpoint(state)
        let afterCheckpoint = fileSize(path)
        let record = JournalCodec.encode(state).count
        print("1 GiB / 16 connections: record \(record) bytes, journal file \(afterCreate) bytes after create, \(afterCheckpoint) bytes once both slots are used")
        #expect(afterCreate == 4096 + record)
        #expect(afterCheckpoint == 8192 + record)
    }
}

extension ResumeJournalTests {
    /// Symbolic links planted at the journal's paths must never redirect a read or a write.
    @Suite struct SymbolicLinkTests {
        private func write(_ path: String, _ bytes: [UInt8]) {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            precondition(fd >= 0)
            defer { close(fd) }
            precondition(bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) } == bytes.count)
        }

        /// Whether the file at `path` holds exactly `text` (a Bool, so a failure does not print the file).
        private func holds(_ path: String, _ text: String) -> Bool { fileBytes(path) == Array(text.utf8) }

        /// Whether anything, a dangling link included, is at `path`.
        private func entryExists(_ path: String) -> Bool {
            var info = stat()
            return lstat(path, &info) == 0
        }

        private func isSymlink(_ path: String) -> Bool {
            var info = stat()
            return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
        }

        @Test func openRefusesALinkAtTheJournalPath() throws {
            let directory = JournalTestDirectory()
            let path = directory.file("f.part.haul")
            // The target is a valid journal, so following the link would "work".
            let target = directory.file("elsewhere.haul")
            _ = try ResumeJournal.create(path: target, state: JournalFixtures.state())
            let before = CRC32C.checksum(fileBytes(target))
            #expect(symlink(target, path) == 0)
            let error = #expect(throws: JournalError.self) { try ResumeJournal.open(path: path) }
            #expect(error == .io(call: "open", errno: .tooManySymbolicLinkLevels, path: path))
            #expect(error?.description == "open(\(path)) failed: refusing to follow the symbolic link at \(path) (errno \(ELOOP))")
            #expect(CRC32C.checksum(fileBytes(target)) == before)
        }

        @Test func createNeverWritesThroughALinkAtTheTempPath() throws {
            let directory = JournalTestDirectory()
            let path = directory.file("f.part.haul")
            let victim = directory.file("victim")
            write(victim, Array("precious".utf8))
            #expect(symlink(victim, ResumeJournal.temporaryPath(path)) == 0)
            let state = JournalFixtures.state()
            let journal = try ResumeJournal.create(path: path, state: state)
            #expect(holds(victim, "precious"))
            #expect(!isSymlink(path) && !entryExists(ResumeJournal.temporaryPath(path)))
            #expect(try ResumeJournal.open(path: path).1 == state)

            // The same when a checkpoint outgrows the slot and rewrites the file through the temp path;
            // a dangling link must not make the rewrite create its target either.
            let missing = directory.file("would-be-created")
            #expect(symlink(missing, ResumeJournal.temporaryPath(path)) == 0)
            let big = JournalFixtures.state(ranges: JournalFixtures.manyRanges(3000, total: 1 << 40), total: 1 << 40)
            try journal.checkpoint(big)
            #expect(journal.slotCapacity > 4096)
            #expect(!entryExists(missing) && !entryExists(ResumeJournal.temporaryPath(path)))
            #expect(holds(victim, "precious"))
            #expect(try ResumeJournal.open(path: path).1 == big)
        }

        @Test func createReplacesALinkAtTheJournalPathNotItsTarget() throws {
            let directory = JournalTestDirectory()
            let path = directory.file("f.part.haul")
            let victim = directory.file("victim")
            write(victim, Array("precious".utf8))
            #expect(symlink(victim, path) == 0)
            let state = JournalFixtures.state()
            _ = try ResumeJournal.create(path: path, state: state)
            #expect(holds(victim, "precious"))
            #expect(!isSymlink(path))
            #expect(try ResumeJournal.open(path: path).1 == state)
        }

        @Test func aLeftoverTempFileIsReplacedByANewOne() throws {
            let directory = JournalTestDirectory()
            let path = directory.file("f.part.haul")
            let temporary = ResumeJournal.temporaryPath(path)
            write(temporary, [UInt8](repeating: 0xEE, count: 100_000))
            // A second name for the leftover: if create reused its inode, this would change.
            #expect(link(temporary, directory.file("leftover")) == 0)
            let state = JournalFixtures.state()
            _ = try ResumeJournal.create(path: path, state: state)
            let leftover = fileBytes(directory.file("leftover"))
            #expect(leftover.count == 100_000 && leftover.allSatisfy { $0 == 0xEE })
            #expect(try ResumeJournal.open(path: path).1 == state)
        }
    }

    /// Journals written by a version 1 build.
    @Suite struct Version1FileTests {
        @Test func aVersion1JournalOpensAndItsFirstCheckpointUpgradesTheFile() throws {
            let directory = JournalTestDirectory()
            let path = directory.file("f.part.haul")
            let old = JournalCodecTests.Version2Tests.version1State
            let image = JournalCodec.fileImage(
                slotCapacity: 4096, slot0: JournalCodec.seal(payload: JournalCodec.encodePayload(old, version: 1), sequence: 7),
                slot1: nil, version: 1)
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(image.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == image.count)
            close(fd)

            let (journal, state) = try ResumeJournal.open(path: path)
            #expect(state == old && state.resolvedURL == nil && state.bootID == nil)
            #expect(journal.sequence == 7 && journal.latestSlot == 0)

            var next = state
            next.durable.insert(500_000..<600_000)
            next.resolvedURL = "https://cdn.example.net/a.iso"
            next.bootID = Array("69d3a8a1-4d3c-45f2-b7a6-5a4487b55e57".utf8)
            try journal.checkpoint(next)
            // Rewritten with a version 2 header, the new record in slot 0, the sequence continuing.
            #expect(journal.sequence == 8 && journal.latestSlot == 0)
            let bytes = fileBytes(path)
            #expect(Array(bytes[8..<10]) == [2, 0])
            let inspection = try JournalCodec.inspectFile(bytes)
            #expect(inspection.formatVersion == 2 && inspection.latest == JournalRecord(sequence: 8, state: next))
            // Later checkpoints alternate slots in place as usual.
            next.durable.insert(0..<5000)
            try journal.checkpoint(next)
            #expect(journal.sequence == 9 && journal.latestSlot == 1)
            #expect(try ResumeJournal.open(path: path).1 == next)
        }
    }
}

private func OutputFileExists(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0
}
