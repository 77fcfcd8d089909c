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
    /// The ``openOrder`` of the file opened last in this process so far (0: none): a file whose number is at
    /// most this was opened — its descriptor made, and with it the point from which a `syncfs` on it reports
    /// write-back errors — before this was read.
    public static var latestOpenOrder: UInt64 { opened.load(ordering: .acquiring) }
    /// What the latest `fstat` of this file found (``size()``, ``fileSystemAndSize()``): a group commit
    /// plans with it instead of an `fstat` of its own per file (``lastKnownFileSystemAndSize``).
    private let lastStatus = Mutex<(device: UInt64, size: Int64)?>(nil)
    /// True while the file has no name in any directory (``openUnnamed(becoming:)``), until ``materialize()``
    /// or ``link(to:)`` names it.
    private let unnamed: Atomic<Bool>

    private init(path: String, owner: consuming OwnedFileDescriptor, unnamed: Bool = false) {
        self.path = path
        self.owner = owner
        self.unnamed = Atomic(unnamed)
        // Releasing: whoever reads this number through ``latestOpenOrder`` sees the descriptor as made.
        openOrder = Self.opened.add(1, ordering: .releasing).newValue
    }

    /// Opens (creating if needed) `path` for writing, and reading (a piece of a download with piece hashes is
    /// read back to be hashed). With `truncate`, existing content is discarded.
    ///
    /// Never follows a symbolic link at `path` itself (`O_NOFOLLOW`): one planted there fails with `ELOOP`
    /// (see ``SystemError/reason``) and its target is left untouched. Takes no lock; a download opens its
    /// file with ``openForDownload(_:)``.
    public static func open(_ path: String, truncate: Bool) throws(SystemError) -> OutputFile {
        let options: FileDescriptor.OpenOptions = truncate ? [.create, .noFollow, .truncate] : [.create, .noFollow]
        let owner = try FileDescriptor.opening(FilePath(path), .readWrite, options: options, permissions: filePermissions)
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

    /// A new file with no name yet in the directory of `path` (`O_TMPFILE`), for a download that may finish
    /// before anything needs its name: its working file then costs no directory entry, no lookup and no
    /// rename, and the finish names it once (``link(to:)``), straight to its final name. ``path`` is `path`,
    /// the name it takes if it must have one before (``materialize()``).
    ///
    /// Takes no lock (nobody else can open a file without a name). Nil when the filesystem (or the kernel, or
    /// a missing `/proc`) cannot give a file no name (``mayOpenUnnamed(in:)`` then answers false for that
    /// directory for the rest of the process): the caller opens a named file instead. Other failures (no
    /// such directory, no permission) are thrown.
    public static func openUnnamed(becoming path: String) throws(SystemError) -> OutputFile? {
        let directory = directory(containing: path)
        guard mayOpenUnnamed(in: directory) else { return nil }
        do {
            let owner = try FileDescriptor.openingUnnamed(inDirectory: directory, permissions: filePermissions)
            return OutputFile(path: path, owner: owner, unnamed: true)
        } catch where UnnamedFileSupport.meansUnsupported(error) {
            UnnamedFileSupport.shared.refused(in: directory)
            return nil
        }
    }

    /// Whether ``openUnnamed(becoming:)`` may work in `directory`: `/proc/self/fd` is there (looked at once
    /// per process) and no earlier try in that directory was refused by its filesystem. No call but the first.
    public static func mayOpenUnnamed(in directory: String) -> Bool {
        UnnamedFileSupport.shared.mayTry(in: directory)
    }

    /// Whether the file has no name yet (``openUnnamed(becoming:)``, not yet ``materialize()``d or linked).
    public var isUnnamed: Bool { unnamed.load(ordering: .acquiring) }

    /// Gives a file without a name its ``path`` (the `.part` it would have had), locked as
    /// ``openForDownload(_:)`` locks: from then on it is what a download opened with that call would be. The
    /// lock is taken first, so that no other download can find the new name unlocked. Nothing to do for a
    /// file that has a name.
    ///
    /// - Throws: ``SystemError`` with call `"linkat"` and `EEXIST` when something has that name already (the
    ///   file keeps no name then), or another failure of `flock` or `linkat`.
    public func materialize() throws(SystemError) {
        guard isUnnamed else { return }
        guard try fileDescriptor.lockExclusively() else { throw SystemError(call: "flock", errno: EWOULDBLOCK) }
        try link(to: path)
    }

    /// Names this file `name` (`linkat(AT_EMPTY_PATH)` of its descriptor, or `linkat` of its `/proc/self/fd`
    /// entry on a kernel that refuses that), atomically and never replacing anything: `EEXIST` when `name`
    /// exists. For a file without a name (``openUnnamed(becoming:)``): its finish names it with its final
    /// name. (Of a named file it would make a second name.)
    public func link(to name: String) throws(SystemError) {
        try fileDescriptor.link(to: name)
        unnamed.store(false, ordering: .releasing)
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
        try fileSystemAndSize().size
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

    /// The filesystem holding this file (`st_dev` of `fstat`) and the file's size. Two files with the same
    /// device are on one filesystem; a filesystem may show several devices (btrfs subvolumes), which only
    /// costs a group commit one `syncfs` more.
    public func fileSystemAndSize() throws(SystemError) -> (device: UInt64, size: Int64) {
        let info = try fileDescriptor.status()
        let found = (device: UInt64(info.deviceID.rawValue), size: info.size)
        lastStatus.withLock { $0 = found }
        return found
    }

    /// The file's identity, `st_dev` and `st_ino` of `fstat`: what its name must still point to when it is
    /// renamed (another program may have removed or replaced the `.part` meanwhile; see ``PathStatus``).
    public func identity() throws(SystemError) -> (device: UInt64, inode: UInt64) {
        let info = try fileDescriptor.status()
        return (UInt64(info.deviceID.rawValue), UInt64(info.inode.rawValue))
    }

    /// The filesystem and size the latest ``size()`` or ``fileSystemAndSize()`` found, without a call; nil
    /// before the first. The filesystem of an open file never changes; the size is as of that call (a
    /// finished download's size is checked after its last write, so for it that is the final size).
    public var lastKnownFileSystemAndSize: (device: UInt64, size: Int64)? { lastStatus.withLock { $0 } }

    private func recordSyncFailure(_ error: SystemError) {
        syncFailure.withLock { if $0 == nil { $0 = error } }
    }
}
