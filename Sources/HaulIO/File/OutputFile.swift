import Glibc
import Synchronization
import SystemPackage

/// A file being downloaded into: positional writes from any offset, preallocation, durability.
///
/// Every call goes through the syscall layer (swift-system's `FileDescriptor`, and HaulIO's wrapper for the
/// Linux calls it lacks), so failures come back as ``SystemError`` naming the call and errno; callers add the
/// path. `pwrite` is safe from several threads at once on distinct ranges. The file owns its descriptor and
/// closes it when it goes away.
public final class OutputFile: Sendable {
    /// Where the file lives.
    public let path: String
    /// The open descriptor, owned: closed (and with it any ``openForDownload(_:)`` lock) in deinit.
    private let owner: OwnedFileDescriptor
    /// The open descriptor; valid as long as this ``OutputFile`` lives.
    public var fileDescriptor: FileDescriptor { owner.descriptor }
    /// The first failed `fdatasync` or write-back of this file, kept for good: Linux reports a write-back
    /// error to one sync of an open file only, and may drop the pages whose write-back failed, so a later
    /// sync that succeeds says nothing about them. Every later ``synchronize()`` throws it again.
    private let syncFailure = Mutex<SystemError?>(nil)
    /// Ranges waiting for ``writeBackInBackground(offset:length:)`` to start their write-back.
    let writeBehind = WriteBehindQueue()
    /// Rises with every file opened in this process: of two files, the one with the lower number was opened
    /// first. A `syncfs` reports the write-back errors of its filesystem since its descriptor was opened, so
    /// a group commit calls it on the first-opened file of a group (see ``synchronizeFileSystem()``).
    public let openOrder: UInt64
    private static let opened = Atomic<UInt64>(0)

    private init(path: String, owner: consuming OwnedFileDescriptor) {
        self.path = path
        self.owner = owner
        openOrder = Self.opened.add(1, ordering: .relaxed).newValue
    }

    /// Opens (creating if needed) `path` for writing. With `truncate`, existing content is discarded.
    ///
    /// Never follows a symbolic link at `path` itself (`O_NOFOLLOW`): one planted there fails with `ELOOP`
    /// (see ``SystemError/reason``) and its target is left untouched. Takes no lock; a download opens its
    /// file with ``openForDownload(_:)``.
    public static func open(_ path: String, truncate: Bool) throws(SystemError) -> OutputFile {
        let options: FileDescriptor.OpenOptions = truncate ? [.create, .noFollow, .truncate] : [.create, .noFollow]
        let owner = try FileDescriptor.opening(FilePath(path), .writeOnly, options: options, permissions: filePermissions)
        return OutputFile(path: path, owner: owner)
    }

    /// Opens (creating if needed) the file a download writes, read-write and without truncating it, and
    /// takes an exclusive lock on it that lasts as long as the returned ``OutputFile``: one writer per file,
    /// across processes and within one.
    ///
    /// The lock is `flock(LOCK_EX | LOCK_NB)` on the new descriptor. `flock` locks belong to the open file
    /// description, so a second `openForDownload` of the same file, in this process or another, fails while
    /// the first ``OutputFile`` is alive; the lock goes when its descriptor is closed (``OutputFile`` deinit),
    /// or when the process dies, however it dies. It is advisory: it stops other Haul downloads, not other
    /// programs.
    ///
    /// `created` says whether this call created the file (`O_CREAT | O_EXCL` is tried first), so a caller
    /// knows whether the content can be from an earlier run. A symbolic link at `path` is never followed
    /// (`ELOOP`).
    ///
    /// - Throws: ``SystemError`` with call `"flock"` and errno `EWOULDBLOCK` when another open file holds
    ///   the lock (``lockHolder(of:)`` tells who); the descriptor is closed first. Otherwise the failing
    ///   call (`"open"`, ...).
    public static func openForDownload(_ path: String) throws(SystemError) -> (file: OutputFile, created: Bool) {
        let filePath = FilePath(path)
        var created = false
        let owner = try openOrCreate(filePath, created: &created)
        // On a lock held elsewhere the owner closes the descriptor as it goes. The file is left in place
        // even when this call created it: a lock held on a file this call just created means another
        // download opened it since and writes into it; unlinking it would cut that download's `.part` from
        // its name.
        guard try owner.descriptor.lockExclusively() else { throw SystemError(call: "flock", .wouldBlock) }
        return (OutputFile(path: path, owner: owner), created)
    }

    /// A new file in memory (`memfd_create`), for a download whose bytes are kept in memory rather than on
    /// disk: the same positional writes from any connection as a file, no name in any directory, nothing to
    /// lock, rename or remove (it goes away with this value). `label` names it in messages and in
    /// `/proc/PID/fd`; it is not a path. Its pages count as the process's memory (shmem), so a caller bounds
    /// its size.
    public static func inMemory(label: String) throws(SystemError) -> OutputFile {
        OutputFile(path: label, owner: try FileDescriptor.creatingMemoryFile(name: label))
    }

    /// The whole content, read from offset 0 (`pread`): for a file in memory, once every byte is in.
    public func readAll() throws(SystemError) -> [UInt8] {
        let size = Int(try size())
        let descriptor = fileDescriptor
        var failure: SystemError?
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            do throws(SystemError) {
                initialized = try descriptor.readAll(into: UnsafeMutableRawBufferPointer(buffer), at: 0)
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        // Shorter than `fstat` said only if someone truncated the file meanwhile: not the content asked for.
        guard bytes.count == size else { throw SystemError(call: "pread", errno: EIO) }
        return bytes
    }

    /// The mode of the files Haul creates (`0644`, less the umask).
    private static let filePermissions: FilePermissions = [.ownerReadWrite, .groupRead, .otherRead]

    /// `open` read-write with `O_NOFOLLOW`: creates `path` exclusively if it is absent (`created` set),
    /// opens it otherwise.
    private static func openOrCreate(_ path: FilePath, created: inout Bool) throws(SystemError) -> OwnedFileDescriptor {
        // A file removed between the two opens (or created between them) makes one of them fail with
        // ENOENT (or EEXIST); try again a few times rather than report a race as an error.
        var attempts = 0
        while true {
            attempts += 1
            do {
                let owner = try FileDescriptor.opening(path, .readWrite, options: [.create, .exclusiveCreate, .noFollow],
                                                       permissions: filePermissions)
                created = true
                return owner
            } catch where error.code == .fileExists {
                // Also what a symbolic link at `path` gives (O_EXCL never follows one); the open below
                // reports it as ELOOP.
            }
            do {
                let owner = try FileDescriptor.opening(path, .readWrite, options: [.noFollow])
                created = false
                return owner
            } catch where error.code == .noSuchFileOrDirectory && attempts < 8 {
            }
        }
    }

    /// Gives up the ``openForDownload(_:)`` lock before the descriptor closes: a download that has stopped
    /// (paused, failed) may still be referenced for a moment by work finishing on its loop, and another
    /// download of the same destination — say, its own resume — must not find it busy meanwhile.
    public func unlock() {
        fileDescriptor.unlock()
    }

    /// Whether a download holds the ``openForDownload(_:)`` lock on the file at `path` now: the file is
    /// opened read-only (never created, a symbolic link never followed) and the lock tried and dropped at
    /// once. False when nothing is there. For checking that a name is free before anything is created; the
    /// answer can be stale as soon as it is returned. While the probe holds the lock, for a moment, a
    /// download opening the same file finds it busy — only a download whose name collides with the caller's.
    public static func isLockedForDownload(_ path: String) -> Bool {
        guard let owner = try? FileDescriptor.opening(FilePath(path), .readOnly, options: [.noFollow, .nonBlocking]) else {
            return false
        }
        // Closing the descriptor (`owner` going away) drops the probe's lock.
        return (try? owner.descriptor.lockExclusively()) == false
    }

    /// The pid of the process holding a `flock` lock on the file at `path`, read from `/proc/locks`; nil if
    /// no such lock is listed, `/proc` is not mounted, or the holder is outside this pid namespace.
    ///
    /// `/proc/locks` names a file by `MAJOR:MINOR:INODE` of its filesystem; that is matched against
    /// `stat(path)`. Some filesystems (btrfs subvolumes, overlayfs) report a different device to `stat`
    /// than the one `/proc/locks` lists; then a lock on the same inode number is taken if it is the only
    /// `flock` lock with that number. The answer is for messages ("held by pid N"); it can be stale as
    /// soon as it is returned.
    public static func lockHolder(of path: String) -> Int32? {
        guard let info = FilePath(path).existingStatus() else { return nil }
        guard let table = readSmallFile("/proc/locks") else { return nil }
        let device = UInt64(info.deviceID.rawValue)
        // glibc's major()/minor() (sys/sysmacros.h), which Swift does not import.
        let major = ((device & 0x0000_0000_000F_FF00) >> 8) | ((device & 0xFFFF_F000_0000_0000) >> 32)
        let minor = (device & 0x0000_0000_0000_00FF) | ((device & 0x0000_0FFF_FFF0_0000) >> 12)
        let inode = UInt64(info.inode.rawValue)
        var sameInode: [Int32] = []
        for line in table.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters have "->" after the number.
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK" else { continue }
            guard let pid = Int32(fields[4]), pid > 0 else { continue }
            let location = fields[5].split(separator: ":")
            guard location.count == 3, let lockMajor = UInt64(location[0], radix: 16),
                  let lockMinor = UInt64(location[1], radix: 16), let lockInode = UInt64(location[2]),
                  lockInode == inode
            else { continue }
            if lockMajor == major && lockMinor == minor { return pid }
            sameInode.append(pid)
        }
        return sameInode.count == 1 ? sameInode[0] : nil
    }

    /// The whole content of a small file (a `/proc` file), or nil if it cannot be read.
    package static func readSmallFile(_ path: FilePath) -> String? {
        guard let file = try? FileDescriptor.opening(path, .readOnly) else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in try? file.descriptor.read(into: buffer) }
            guard let count else { return nil }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > 64 << 20 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes all of `bytes` at `offset`, looping over short writes.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        try fileDescriptor.writeAll(bytes, at: offset)
    }

    /// Reserves `length` bytes of disk so that a full disk fails now rather than mid-download. Falls back to
    /// setting the size when the filesystem cannot preallocate (then space is not reserved).
    public func preallocate(length: Int64) throws(SystemError) {
        guard length > 0 else { return }
        do {
            try fileDescriptor.allocate(offset: 0, length: length)
        } catch where error.code == .notSupported || error.code == .noFunction {
            try truncate(to: length)
        }
    }

    /// Sets the file's size.
    public func truncate(to length: Int64) throws(SystemError) {
        try systemCall("ftruncate") { try fileDescriptor.resize(to: length) }
    }

    /// The file's current size.
    public func size() throws(SystemError) -> Int64 {
        try fileDescriptor.status().size
    }

    /// Starts write-back of `length` bytes at `offset` without waiting for it, so that the next sync has
    /// little left to do. Blocks while the device's queue is full; see
    /// ``writeBackInBackground(offset:length:)`` for a caller that must not block.
    ///
    /// Only `SYNC_FILE_RANGE_WRITE`, never its wait flags: waiting through `sync_file_range` would hand a
    /// write-back error to this call and no longer to the next `fdatasync` of the file. A failure is kept
    /// and thrown by every later ``synchronize()``.
    public func startWriteBack(offset: Int64, length: Int64) throws(SystemError) {
        do {
            try fileDescriptor.startWriteBack(offset: offset, length: length)
        } catch {
            recordSyncFailure(error)
            throw error
        }
    }

    /// Queues ``startWriteBack(offset:length:)`` of `length` bytes at `offset` for a blocking-work thread and
    /// returns at once: starting write-back submits I/O and may wait for room in the device's queue, which an
    /// event loop must not. Adjacent ranges queued meanwhile are started as one. A failure is not thrown
    /// here but kept for ``synchronize()``.
    public func writeBackInBackground(offset: Int64, length: Int64) {
        guard length > 0, writeBehind.add(offset..<offset + length) else { return }
        BlockingWork.start { [self] in
            while let ranges = writeBehind.take() {
                for range in ranges {
                    try? startWriteBack(offset: range.lowerBound, length: range.upperBound - range.lowerBound)
                }
            }
        }
    }

    /// Makes the written data durable (`fdatasync`). Once a sync or a write-back of this file has failed,
    /// throws that failure every time without syncing (see ``syncFailure``).
    public func synchronize() throws(SystemError) {
        if let failure = syncFailure.withLock({ $0 }) { throw failure }
        do {
            try fileDescriptor.synchronizeData()
        } catch {
            recordSyncFailure(error)
            throw error
        }
    }

    /// The failure ``synchronize()`` would throw without syncing: an earlier failed sync or write-back of
    /// this file; nil when there was none.
    public var recordedSyncFailure: SystemError? { syncFailure.withLock { $0 } }

    /// Flushes the whole filesystem holding this file (`syncfs` of its descriptor): this file's data and
    /// every other dirty file's there, other programs' included. One call makes a batch of files on one
    /// filesystem durable for the price of one journal commit and one cache flush.
    ///
    /// It reports (Linux ≥ 5.8) a write-back error of any file of the filesystem since this descriptor was
    /// opened, once: it cannot tell whose. So the error is not recorded as this file's; ``synchronize()`` of
    /// each file of the batch afterwards says which of them failed (each descriptor still holds its own).
    public func synchronizeFileSystem() throws(SystemError) {
        try fileDescriptor.synchronizeFileSystem()
    }

    /// `/proc/meminfo` as text (what the machine holds dirty, among the rest), or nil when it cannot be read.
    public static func memoryInformation() -> String? {
        readSmallFile("/proc/meminfo")
    }

    /// The filesystem holding this file (`st_dev` of `fstat`) and the file's size. Two files with the same
    /// device are on one filesystem; a filesystem may show several devices (btrfs subvolumes), which only
    /// costs a group commit one `syncfs` more.
    public func fileSystemAndSize() throws(SystemError) -> (device: UInt64, size: Int64) {
        let info = try fileDescriptor.status()
        return (UInt64(info.deviceID.rawValue), info.size)
    }

    private func recordSyncFailure(_ error: SystemError) {
        syncFailure.withLock { if $0 == nil { $0 = error } }
    }

    /// Makes the directory entries in the directory holding `path` durable (`fsync` of the directory):
    /// after a `rename` or a create, the new name survives a power loss only once this returns.
    ///
    /// The directory is the part of `path` before its last `/` (`/` for `/name`, `.` for a bare name).
    /// Errors name the call (`"open"` or `"fsync"`); the path is the caller's to add.
    public static func synchronizeDirectory(containing path: String) throws(SystemError) {
        try synchronizeDirectory(directory(containing: path))
    }

    /// Makes the entries of `directory` itself durable (`fsync` of it). Errors name the call.
    public static func synchronizeDirectory(_ directory: String) throws(SystemError) {
        let owner = try FileDescriptor.opening(FilePath(directory), .readOnly, options: [.directory])
        try owner.descriptor.synchronize()
    }

    /// The directory holding `path`: everything before its last `/` (`/` for `/name`, `.` for a bare name).
    public static func directory(containing path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Renames `from` to `to` atomically (replacing `to`).
    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try blockingSyscall("rename") { Glibc.rename(from, to) }
    }

    /// Removes `path`; a missing file is not an error.
    public static func remove(_ path: String) throws(SystemError) {
        do {
            _ = try blockingSyscall("unlink") { unlink(path) }
        } catch where error.code == .noSuchFileOrDirectory {
        }
    }

    /// Bytes an unprivileged writer may still use on the filesystem holding `directory`.
    public static func availableSpace(in directory: String) throws(SystemError) -> Int64 {
        var info = statvfs()
        _ = try blockingSyscall("statvfs") { statvfs(directory, &info) }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Free space for a file of `length` bytes in `directory`: ``availableSpace(in:)``, or, for a small
    /// file, a figure measured under a second ago for the same directory less what was handed out since.
    ///
    /// Thousands of small files in one directory would otherwise cost a `statvfs` each. The recent figure
    /// is used only while what remains of it, after this file, is at least ``spaceMargin``; below that (a
    /// disk that is really getting full) every call measures again, so a refusal for lack of space is as
    /// exact as before. A file larger than ``smallFileLimit`` always measures.
    public static func availableSpace(in directory: String, forWriting length: Int64) throws(SystemError) -> Int64 {
        let now = MonotonicInstant.now()
        if length >= 0, length <= smallFileLimit {
            let recent: Int64? = spaceFigures.withLock { figures in
                guard var figure = figures[directory], now < figure.measured.advanced(by: .seconds(1)),
                      figure.remaining - length >= spaceMargin
                else { return nil }
                let remaining = figure.remaining
                figure.remaining -= length
                figures[directory] = figure
                return remaining
            }
            if let recent { return recent }
        }
        let available = try availableSpace(in: directory)
        spaceFigures.withLock { figures in
            // A bound on memory for a run over many directories: forgetting only costs a `statvfs`.
            if figures.count >= 64 { figures.removeAll(keepingCapacity: true) }
            figures[directory] = SpaceFigure(remaining: available - max(0, length), measured: now)
        }
        return available
    }

    /// The largest file ``availableSpace(in:forWriting:)`` may answer from a recent figure.
    static let smallFileLimit: Int64 = 1 << 20
    /// What must be left of a recent figure for ``availableSpace(in:forWriting:)`` to use it.
    static let spaceMargin: Int64 = 1 << 30

    private struct SpaceFigure {
        /// The measured free space less the lengths handed out since.
        var remaining: Int64
        var measured: MonotonicInstant
    }

    private static let spaceFigures = Mutex<[String: SpaceFigure]>([:])

    /// Whether something exists at `path`.
    public static func exists(_ path: String) -> Bool {
        FilePath(path).existingStatus() != nil
    }

    /// Whether `path` is a directory (following symbolic links).
    public static func isDirectory(_ path: String) -> Bool {
        FilePath(path).existingStatus()?.type == .directory
    }

    /// Creates `path` and any missing parents (like `mkdir -p`); an existing directory is not an error.
    /// Returns the directories this call created, outermost first, so that a caller can take them away
    /// again (``removeEmptyDirectories(_:)``).
    @discardableResult
    public static func createDirectories(_ path: String) throws(SystemError) -> [String] {
        if path.isEmpty || isDirectory(path) { return [] }
        var created: [String] = []
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            created = try createDirectories(String(path[..<slash]))
        }
        do {
            _ = try blockingSyscall("mkdir") { mkdir(path, 0o777) }
            created.append(path)
        } catch where error.code == .fileExists && isDirectory(path) {
        }
        return created
    }

    /// Removes each of `directories` that is empty, innermost (last) first; one that is not empty (another
    /// download wrote into it meanwhile) or is gone already is left alone. `rmdir` never removes a file.
    public static func removeEmptyDirectories(_ directories: [String]) {
        for directory in directories.reversed() { _ = rmdir(directory) }
    }
}
