import Glibc
import HaulIO
import Synchronization

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
public final class ResumeJournal: Sendable {
    /// Where the journal lives.
    public let path: String
    /// Why a slot was unusable when the journal was opened (a torn or corrupt last write), if one was.
    public let recoveredFrom: JournalError?

    private struct Storage {
        var fileDescriptor: Int32
        /// The format version in the file's header; a file older than this build's is rewritten by the next
        /// checkpoint, so that a record this build writes never sits behind an older header.
        var formatVersion: UInt16
        var slotCapacity: Int
        var latestSlot: Int
        var sequence: UInt64
    }

    private let storage: Mutex<Storage>

    private init(path: String, storage: Storage, recoveredFrom: JournalError?) {
        self.path = path
        self.storage = Mutex(storage)
        self.recoveredFrom = recoveredFrom
    }

    deinit {
        storage.withLock { _ = Glibc.close($0.fileDescriptor) }
    }

    /// Bytes each slot holds in the current file.
    public var slotCapacity: Int { storage.withLock { $0.slotCapacity } }
    /// The sequence number of the latest record written or read.
    public var sequence: UInt64 { storage.withLock { $0.sequence } }
    /// The slot (0 or 1) holding the latest record.
    public var latestSlot: Int { storage.withLock { $0.latestSlot } }

    /// Creates (or replaces) the journal at `path` holding `state` as record 1 in slot 0.
    ///
    /// Written to `path.tmp`, `fdatasync`ed, renamed over `path` and the directory `fsync`ed, so `path` is
    /// either absent (or the old journal) or complete — never half-written.
    public static func create(path: String, state: JournalState) throws(JournalError) -> ResumeJournal {
        do throws(JournalError) {
            let record = try JournalCodec.validatedRecord(state, sequence: 1)
            let (fd, capacity) = try writeFresh(path: path, record: record)
            return ResumeJournal(path: path, storage: Storage(fileDescriptor: fd, formatVersion: JournalState.formatVersion,
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
    public static func open(path: String) throws(JournalError) -> (ResumeJournal, JournalState) {
        let fd: Int32
        do throws(JournalError) {
            fd = try call("open", path) { Glibc.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) }
        } catch {
            throw wrap(error, path: path)
        }
        do throws(JournalError) {
            var info = stat()
            _ = try call("fstat", path) { fstat(fd, &info) }
            let fileSize = Int(info.st_size)
            let headerBlock = try readAll(fd, count: min(fileSize, JournalCodec.headerBlockSize), path: path)
            let capacity = try JournalCodec.decodeHeader(headerBlock)
            let wanted = JournalCodec.slotOffset(2, slotCapacity: capacity)
            let image = try readAll(fd, count: min(fileSize, wanted), path: path)
            let inspection = try JournalCodec.inspectFile(image)
            let journal = ResumeJournal(
                path: path,
                storage: Storage(fileDescriptor: fd, formatVersion: inspection.formatVersion,
                                 slotCapacity: inspection.slotCapacity,
                                 latestSlot: inspection.latestSlot, sequence: inspection.latest.sequence),
                recoveredFrom: inspection.otherSlotError
            )
            return (journal, inspection.latest.state)
        } catch {
            _ = Glibc.close(fd)
            throw wrap(error, path: path)
        }
    }

    /// Records `state` durably: writes it with the next sequence number into the slot that does not hold
    /// the latest record, then `fdatasync`s. When this returns, ``open(path:)`` yields `state` (or a later
    /// one). If it throws, the previous checkpoint is still the durable one and the next call rewrites the
    /// same slot. A state larger than the slot rewrites the journal with larger slots (temp file + rename),
    /// and so does the first checkpoint into a file of an older format version (whose header would not
    /// announce this build's records).
    public func checkpoint(_ state: JournalState) throws(JournalError) {
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
                try Self.writeAll(storage.fileDescriptor, record, at: offset, path: path)
                let fd = storage.fileDescriptor
                _ = try Self.call("fdatasync", path) { fdatasync(fd) }
                storage.latestSlot = target
                storage.sequence = sequence
            }
        } catch {
            throw Self.wrap(error, path: path)
        }
    }

    /// Deletes the journal at `path` (and a leftover temp file); a missing file is not an error.
    public static func remove(path: String) throws(JournalError) {
        for victim in [path, temporaryPath(path)] { try unlinkIfPresent(victim) }
    }

    /// The temp file a create or rewrite goes through.
    public static func temporaryPath(_ path: String) -> String { path + ".tmp" }

    // MARK: Internals

    private static func wrap(_ error: JournalError, path: String) -> JournalError {
        switch error {
        case .io, .inJournal: return error
        default: return .inJournal(path: path, error)
        }
    }

    /// Rewrites the journal with slots sized for `record`, which goes to slot 0; swaps descriptors.
    private func replaceFile(_ storage: inout Storage, path: String, record: [UInt8]) throws(JournalError) {
        let (fd, capacity) = try Self.writeFresh(path: path, record: record)
        _ = Glibc.close(storage.fileDescriptor)
        storage.fileDescriptor = fd
        storage.formatVersion = JournalState.formatVersion
        storage.slotCapacity = capacity
        storage.latestSlot = 0
        storage.sequence = UInt64(littleEndianBytes: record[8..<16])
    }

    /// Writes header + `record` in slot 0 to the temp file, syncs it, renames it over `path`, syncs the
    /// directory. Returns the open descriptor (now `path`) and the slot capacity.
    ///
    /// The temp file is always a new inode: whatever is at `path.tmp` (a leftover, or a symbolic link
    /// someone planted) is unlinked, then the file is created with `O_CREAT | O_EXCL | O_NOFOLLOW`, so the
    /// write can never land in another file. If something reappears at `path.tmp` in between, the create
    /// fails (`EEXIST`) rather than use it. `rename` replaces a link at `path` itself, not its target.
    private static func writeFresh(path: String, record: [UInt8]) throws(JournalError) -> (Int32, Int) {
        guard let capacity = JournalCodec.slotCapacity(forRecordOf: record.count) else {
            throw .stateTooLarge(bytes: record.count, limit: JournalLimits.maxSlotCapacity)
        }
        let temporary = temporaryPath(path)
        try unlinkIfPresent(temporary)
        let fd = try call("open", temporary) {
            Glibc.open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        do throws(JournalError) {
            let image = JournalCodec.fileImage(slotCapacity: capacity, slot0: record)
            try writeAll(fd, image, at: 0, path: temporary)
            _ = try call("fdatasync", temporary) { fdatasync(fd) }
            _ = try call("rename", temporary) { rename(temporary, path) }
        } catch {
            _ = Glibc.close(fd)
            _ = unlink(temporary)
            throw error
        }
        do throws(JournalError) {
            try syncDirectory(of: path)
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        return (fd, capacity)
    }

    /// `fsync`s the directory holding `path`, so that a `rename` into it survives a power loss.
    private static func syncDirectory(of path: String) throws(JournalError) {
        do {
            try OutputFile.synchronizeDirectory(containing: path)
        } catch {
            throw .io(call: error.call, errno: error.errno, path: OutputFile.directory(containing: path))
        }
    }

    /// Removes `path` (never following a link there); a missing entry is not an error.
    private static func unlinkIfPresent(_ path: String) throws(JournalError) {
        do throws(JournalError) {
            _ = try call("unlink", path) { unlink(path) }
        } catch {
            if case .io(_, let code, _) = error, code == ENOENT { return }
            throw error
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], at offset: Int, path: String) throws(JournalError) {
        let result = bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<Void, JournalError> in
            var done = 0
            while done < raw.count {
                do throws(JournalError) {
                    done += try call("pwrite", path) {
                        pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset + done))
                    }
                } catch {
                    return .failure(error)
                }
            }
            return .success(())
        }
        try result.get()
    }

    /// Reads up to `count` bytes from offset 0 (fewer only at end of file).
    private static func readAll(_ fd: Int32, count: Int, path: String) throws(JournalError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(count, 0))
        var done = 0
        let result = bytes.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) -> Result<Void, JournalError> in
            while done < raw.count {
                do throws(JournalError) {
                    let read = try call("pread", path) {
                        pread(fd, raw.baseAddress! + done, raw.count - done, off_t(done))
                    }
                    if read == 0 { break }
                    done += read
                } catch {
                    return .failure(error)
                }
            }
            return .success(())
        }
        try result.get()
        return Array(bytes[0..<done])
    }

    /// Runs a system call, retrying `EINTR`; -1 becomes ``JournalError/io(call:errno:path:)``.
    /// The package's one syscall wrapper (EINTR retried), with the journal's path added to its error.
    private static func call<T: FixedWidthInteger>(_ name: StaticString, _ path: String, _ body: () -> T) throws(JournalError) -> T {
        do { return try blockingSyscall(name, body) } catch { throw .io(call: error.call, errno: error.errno, path: path) }
    }
}

extension UInt64 {
    fileprivate init(littleEndianBytes bytes: ArraySlice<UInt8>) {
        var value: UInt64 = 0
        for (index, byte) in bytes.enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
        self = value
    }
}
