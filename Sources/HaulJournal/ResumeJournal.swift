import HaulIO
import Synchronization
import SystemPackage

/// The crash-safe resume journal beside a `.part` file (`NAME.part.haul`): which byte ranges are durable.
///
/// Each ``checkpoint(_:)`` writes the whole state into the slot that does not hold the latest valid record,
/// with the next sequence number, then `fdatasync`s; a crash at any point leaves the previous record intact,
/// so ``open(path:)`` always finds the last completed checkpoint (or says why it cannot). See
/// `docs/journal-format.md` for the format and the argument.
///
/// Callers must keep the durability contract of ``JournalState``: `durable` only holds bytes that were
/// `fdatasync`ed in the data file before the checkpoint is written. Safe to use from several threads (calls
/// are serialised); each call blocks on disk I/O.
///
/// Symbolic links are never followed at the journal's paths: ``open(path:)`` refuses one at `path`
/// (`ELOOP`), and the temp file (`path.tmp`) is always a new file (an existing entry is removed first, then
/// it is created with `O_EXCL`), so a link planted there cannot redirect a write.
package final class ResumeJournal: Sendable {
    /// Where the journal lives.
    package let path: String
    /// Why a slot was unusable when the journal was opened (a torn or corrupt last write), if one was.
    package let recoveredFrom: JournalError?

    private struct Storage: ~Copyable {
        /// The open journal, owned: replacing it (``replaceFile(_:path:record:)``) or dropping the journal
        /// closes the old descriptor.
        var file: OwnedFileDescriptor
        /// The format version in the file's header; a file older than this build's is rewritten by the next
        /// checkpoint, so that a record this build writes never sits behind an older header.
        var formatVersion: UInt16
        var slotCapacity: Int
        var latestSlot: Int
        var sequence: UInt64
    }

    private let storage: Mutex<Storage>

    private init(path: String, storage: consuming Storage, recoveredFrom: JournalError?) {
        self.path = path
        self.storage = Mutex(storage)
        self.recoveredFrom = recoveredFrom
    }

    /// Bytes each slot holds in the current file.
    package var slotCapacity: Int { storage.withLock { $0.slotCapacity } }
    /// The sequence number of the latest record written or read.
    package var sequence: UInt64 { storage.withLock { $0.sequence } }
    /// The slot (0 or 1) holding the latest record.
    package var latestSlot: Int { storage.withLock { $0.latestSlot } }

    /// Creates (or replaces) the journal at `path` holding `state` as record 1 in slot 0.
    ///
    /// Written to `path.tmp`, `fdatasync`ed, renamed over `path` and the directory `fsync`ed, so `path` is
    /// either absent (or the old journal) or complete — never half-written.
    package static func create(path: String, state: JournalState) throws(JournalError) -> ResumeJournal {
        do throws(JournalError) {
            let record = try JournalCodec.validatedRecord(state, sequence: 1)
            let capacity = try slotCapacity(for: record)
            let file = try writeFresh(path: path, record: record, slotCapacity: capacity)
            return ResumeJournal(path: path, storage: Storage(file: file, formatVersion: JournalState.formatVersion,
                                                              slotCapacity: capacity, latestSlot: 0, sequence: 1),
                                 recoveredFrom: nil)
        } catch {
            throw wrap(error, path: path)
        }
    }

    /// Opens the journal at `path` and reads its latest valid state.
    ///
    /// If the newest slot is torn or corrupt, returns the previous state (``recoveredFrom`` says what was
    /// wrong); if neither slot is valid, throws ``JournalError/noValidRecord(slot0:slot1:)``.
    package static func open(path: String) throws(JournalError) -> (ResumeJournal, JournalState) {
        do throws(JournalError) {
            // Closed by its owner on every error below.
            let file = try call(path) { () throws(SystemError) in
                try FileDescriptor.opening(FilePath(path), .readWrite, options: [.noFollow])
            }
            let fileSize = Int(try call(path) { () throws(SystemError) in try file.descriptor.status().size })
            let headerBlock = try readAll(file.descriptor, count: min(fileSize, JournalCodec.headerBlockSize), path: path)
            let capacity = try JournalCodec.decodeHeader(headerBlock)
            let wanted = JournalCodec.slotOffset(2, slotCapacity: capacity)
            let image = try readAll(file.descriptor, count: min(fileSize, wanted), path: path)
            let inspection = try JournalCodec.inspectFile(image)
            let journal = ResumeJournal(
                path: path,
                storage: Storage(file: file, formatVersion: inspection.formatVersion,
                                 slotCapacity: inspection.slotCapacity,
                                 latestSlot: inspection.latestSlot, sequence: inspection.latest.sequence),
                recoveredFrom: inspection.otherSlotError
            )
            return (journal, inspection.latest.state)
        } catch {
            throw wrap(error, path: path)
        }
    }

    /// Records `state` durably: writes it with the next sequence number into the slot that does not hold
    /// the latest record, then `fdatasync`s. When this returns, ``open(path:)`` yields `state` (or a later
    /// one). If it throws, the previous checkpoint is still the durable one and the next call rewrites the
    /// same slot. A state larger than the slot rewrites the journal with larger slots (temp file + rename),
    /// and so does the first checkpoint into a file of an older format version (whose header would not
    /// announce this build's records).
    package func checkpoint(_ state: JournalState) throws(JournalError) {
        let path = self.path
        do throws(JournalError) {
            try storage.withLock { (storage: inout Storage) throws(JournalError) in
                guard storage.sequence < UInt64.max else {
                    // Never reached in practice (2^64 checkpoints); start a fresh file at sequence 1.
                    try replaceFile(&storage, path: path, record: try JournalCodec.validatedRecord(state, sequence: 1))
                    return
                }
                let sequence = storage.sequence + 1
                let record = try JournalCodec.validatedRecord(state, sequence: sequence)
                if record.count > storage.slotCapacity || storage.formatVersion != JournalState.formatVersion {
                    try replaceFile(&storage, path: path, record: record)
                    return
                }
                let target = 1 - storage.latestSlot
                let offset = JournalCodec.slotOffset(target, slotCapacity: storage.slotCapacity)
                let descriptor = storage.file.descriptor
                try Self.writeAll(descriptor, record, at: offset, path: path)
                try Self.call(path) { () throws(SystemError) in try descriptor.synchronizeData() }
                storage.latestSlot = target
                storage.sequence = sequence
            }
        } catch {
            throw Self.wrap(error, path: path)
        }
    }

    /// Deletes the journal at `path` (and a leftover temp file); a missing file is not an error.
    package static func remove(path: String) throws(JournalError) {
        for victim in [path, temporaryPath(path)] { try unlinkIfPresent(victim) }
    }

    /// The temp file a create or rewrite goes through.
    package static func temporaryPath(_ path: String) -> String { path + ".tmp" }

    // MARK: Internals

    private static func wrap(_ error: JournalError, path: String) -> JournalError {
        switch error {
        case .io, .inJournal: return error
        default: return .inJournal(path: path, error)
        }
    }

    /// Rewrites the journal with slots sized for `record`, which goes to slot 0; the new descriptor replaces
    /// (and so closes) the old one.
    private func replaceFile(_ storage: inout Storage, path: String, record: [UInt8]) throws(JournalError) {
        let capacity = try Self.slotCapacity(for: record)
        storage.file = try Self.writeFresh(path: path, record: record, slotCapacity: capacity)
        storage.formatVersion = JournalState.formatVersion
        storage.slotCapacity = capacity
        storage.latestSlot = 0
        storage.sequence = UInt64(littleEndianBytes: record[8..<16])
    }

    /// The slot capacity a file needs for `record`.
    private static func slotCapacity(for record: [UInt8]) throws(JournalError) -> Int {
        guard let capacity = JournalCodec.slotCapacity(forRecordOf: record.count) else {
            throw .stateTooLarge(bytes: record.count, limit: JournalLimits.maxSlotCapacity)
        }
        return capacity
    }

    /// Writes header + `record` in slot 0 (slots of `slotCapacity` bytes) to the temp file, syncs it,
    /// renames it over `path`, syncs the directory. Returns the open descriptor (now `path`).
    ///
    /// The temp file is always a new inode: whatever is at `path.tmp` (a leftover, or a symbolic link
    /// someone planted) is unlinked, then the file is created with `O_CREAT | O_EXCL | O_NOFOLLOW`, so the
    /// write can never land in another file. If something reappears at `path.tmp` in between, the create
    /// fails (`EEXIST`) rather than use it. `rename` replaces a link at `path` itself, not its target.
    private static func writeFresh(path: String, record: [UInt8], slotCapacity capacity: Int) throws(JournalError) -> OwnedFileDescriptor {
        let temporary = temporaryPath(path)
        try unlinkIfPresent(temporary)
        // Closed by its owner on every error below.
        let file = try call(temporary) { () throws(SystemError) in
            try FileDescriptor.opening(FilePath(temporary), .readWrite, options: [.create, .exclusiveCreate, .noFollow],
                                       permissions: [.ownerReadWrite, .groupRead, .otherRead])
        }
        do throws(JournalError) {
            let image = JournalCodec.fileImage(slotCapacity: capacity, slot0: record)
            try writeAll(file.descriptor, image, at: 0, path: temporary)
            try call(temporary) { () throws(SystemError) in try file.descriptor.synchronizeData() }
            try call(temporary) { () throws(SystemError) in try OutputFile.rename(temporary, to: path) }
        } catch {
            try? OutputFile.remove(temporary)
            throw error
        }
        try syncDirectory(of: path)
        return file
    }

    /// `fsync`s the directory holding `path`, so that a `rename` into it survives a power loss.
    private static func syncDirectory(of path: String) throws(JournalError) {
        let directory = OutputFile.directory(containing: path)
        try call(directory) { () throws(SystemError) in try OutputFile.synchronizeDirectory(directory) }
    }

    /// Removes `path` (never following a link there); a missing entry is not an error.
    private static func unlinkIfPresent(_ path: String) throws(JournalError) {
        try call(path) { () throws(SystemError) in try OutputFile.remove(path) }
    }

    private static func writeAll(_ file: FileDescriptor, _ bytes: [UInt8], at offset: Int, path: String) throws(JournalError) {
        // `withUnsafeBytes` rethrows untyped errors; the typed one travels in a Result.
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try file.writeAll(raw, at: Int64(offset)) }
        }
        try call(path) { () throws(SystemError) in try result.get() }
    }

    /// Reads up to `count` bytes from offset 0 (fewer only at end of file).
    private static func readAll(_ file: FileDescriptor, count: Int, path: String) throws(JournalError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(count, 0))
        let result = bytes.withUnsafeMutableBytes { raw in
            Result { () throws(SystemError) in try file.readAll(into: raw, at: 0) }
        }
        let done = try call(path) { () throws(SystemError) in try result.get() }
        return Array(bytes[0..<done])
    }

    /// Runs file calls of the syscall layer, adding the journal's `path` to their error.
    private static func call<T: ~Copyable>(_ path: String, _ body: () throws(SystemError) -> T) throws(JournalError) -> T {
        do { return try body() } catch { throw JournalError(error, path: path) }
    }
}

extension UInt64 {
    fileprivate init(littleEndianBytes bytes: ArraySlice<UInt8>) {
        var value: UInt64 = 0
        for (index, byte) in bytes.enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
        self = value
    }
}
