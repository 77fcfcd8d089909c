import CHaulSystem
import Glibc
import SystemPackage

// The file side of the syscall layer: swift-system's `FileDescriptor`, `FilePath` and `Errno` for what it
// covers (open, pread/pwrite, ftruncate, fstat, close), and the package's one wrapper (``syscall(_:_:_:)``)
// for the Linux calls it does not (flock, fallocate, sync_file_range, fdatasync, fsync, syncfs, posix_fadvise).
// Outside this directory a file descriptor is a `FileDescriptor`, owned by an ``OwnedFileDescriptor`` or a
// `closeAfter`, never a raw `Int32`.

/// One open file descriptor and the duty to close it.
///
/// Non-copyable, so exactly one value closes a descriptor: it is closed when its owner goes away, or handed
/// on with ``release()`` (ownership moves to the caller) or closed early with ``close()``. A descriptor
/// stored in a class or a `Mutex` is stored as one of these, so that its closing is not a `deinit` someone
/// must remember to write.
package struct OwnedFileDescriptor: ~Copyable, Sendable {
    /// The descriptor owned; valid as long as this value lives.
    package let descriptor: FileDescriptor

    /// Takes ownership of `descriptor`: it is closed when this value goes away.
    package init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Gives up ownership without closing: the caller now owns the descriptor.
    package consuming func release() -> FileDescriptor {
        let descriptor = self.descriptor
        discard self
        return descriptor
    }

    /// Closes the descriptor now and reports a failure (which `deinit` cannot). Linux releases the
    /// descriptor even when `close` fails, so it is never closed twice.
    package consuming func close() throws(SystemError) {
        let descriptor = self.descriptor
        discard self
        // swift-system's `close` does not retry EINTR (see ``SyscallBehaviour/noRetry`` for why).
        try systemCall("close") { try descriptor.close() }
    }

    deinit {
        try? descriptor.close()
    }
}

extension SystemError {
    /// An error for `call` failing with swift-system's `errno`.
    public init(call: String, _ errno: Errno) {
        self.init(call: call, errno: errno.rawValue)
    }

    /// ``errno`` as swift-system's `Errno`, for comparisons such as `error.code == .noSuchFileOrDirectory`.
    public var code: Errno { Errno(rawValue: errno) }
}

/// Runs swift-system calls, turning the `Errno` they throw into a ``SystemError`` naming `name`.
///
/// swift-system retries `EINTR` itself (its `retryOnInterrupt:` parameters, on by default) and throws only
/// `Errno` (its documented contract; its signatures are untyped `throws`).
@inline(__always)
package func systemCall<Result>(_ name: StaticString, _ body: () throws -> Result) throws(SystemError) -> Result {
    do {
        return try body()
    } catch let error as Errno {
        throw SystemError(call: "\(name)", error)
    } catch {
        preconditionFailure("swift-system threw \(error) from \(name), not an Errno")
    }
}

extension FileDescriptor {
    /// Opens `path` as swift-system's `FileDescriptor.open` does, with the error naming `open`; the result
    /// is owned by the caller's ``OwnedFileDescriptor``.
    package static func opening(
        _ path: FilePath, _ mode: AccessMode, options: OpenOptions = [], permissions: FilePermissions? = nil
    ) throws(SystemError) -> OwnedFileDescriptor {
        OwnedFileDescriptor(try systemCall("open") {
            try FileDescriptor.open(path, mode, options: options.union(.closeOnExec), permissions: permissions)
        })
    }

    /// `memfd_create(MFD_CLOEXEC)`: a new anonymous file that lives in memory (shmem) and has no name in any
    /// directory; it goes away with its last descriptor. `name` only labels it in `/proc/PID/fd`.
    package static func creatingMemoryFile(name: String) throws(SystemError) -> OwnedFileDescriptor {
        OwnedFileDescriptor(FileDescriptor(rawValue: try blockingSyscall("memfd_create") { haul_memfd_create(name) }))
    }

    /// `open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, permissions)`: a new regular file in `directory` that
    /// has no name yet (``link(to:)`` gives it one); it goes away with its last descriptor unless named.
    package static func openingUnnamed(inDirectory directory: String, permissions: FilePermissions) throws(SystemError) -> OwnedFileDescriptor {
        OwnedFileDescriptor(FileDescriptor(rawValue: try blockingSyscall("open") { haul_open_unnamed(directory, UInt32(permissions.rawValue)) }))
    }

    /// `linkat(AT_EMPTY_PATH)` of this descriptor to `path`, or `linkat` of `/proc/self/fd/N`
    /// (`AT_SYMLINK_FOLLOW`) where the kernel refuses that (``DescriptorLinking``): gives this open file the
    /// name `path`, atomically and never replacing a name there (`EEXIST`).
    package func link(to path: String) throws(SystemError) {
        try link(to: path, with: .shared)
    }

    /// ``link(to:)`` with the given ``DescriptorLinking`` (a test's, to choose the way).
    func link(to path: String, with linking: DescriptorLinking) throws(SystemError) {
        try linking.link(rawValue, to: path, byEmptyPath: Self.linkByEmptyPath, throughProc: Self.linkThroughProc)
    }

    /// `linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH)`.
    static func linkByEmptyPath(_ descriptor: Int32, _ path: String) throws(SystemError) {
        _ = try blockingSyscall("linkat") { haul_link_descriptor_by_empty_path(descriptor, path) }
    }

    /// `linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, path, AT_SYMLINK_FOLLOW)`.
    static func linkThroughProc(_ descriptor: Int32, _ path: String) throws(SystemError) {
        _ = try blockingSyscall("linkat") { haul_link_descriptor_through_proc(descriptor, path) }
    }

    /// `pipe2(O_CLOEXEC)` for a signal handler: its write end non-blocking (a handler must never block), its
    /// read end blocking (a thread waits on it). Not owned: such a pipe serves the whole life of the process.
    package static func openingSignalPipe() throws(SystemError) -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
        var ends: [Int32] = [0, 0]
        _ = try blockingSyscall("pipe2") { haul_pipe2_nonblocking(&ends) }
        let flags = try blockingSyscall("fcntl") { fcntl(ends[0], F_GETFL) }
        _ = try blockingSyscall("fcntl") { fcntl(ends[0], F_SETFL, flags & ~O_NONBLOCK) }
        return (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
    }

    /// `flock(LOCK_EX | LOCK_NB)`: true when this open file description now holds the exclusive lock, false
    /// when another one holds it.
    package func lockExclusively() throws(SystemError) -> Bool {
        switch try syscall("flock", .nonBlocking, { flock(rawValue, LOCK_EX | LOCK_NB) }) {
        case .processed: true
        case .wouldBlock: false
        }
    }

    /// `flock(LOCK_UN)`. A failure means there was no lock to drop (or the descriptor is gone); either way
    /// none is held afterwards, so there is nothing to report.
    package func unlock() {
        _ = try? syscall("flock", .failOnWouldBlock) { flock(rawValue, LOCK_UN) }
    }

    /// `fallocate(mode 0)`: reserves `length` bytes at `offset` on disk and extends the file to cover them.
    package func allocate(offset: Int64, length: Int64) throws(SystemError) {
        _ = try blockingSyscall("fallocate") { haul_fallocate(rawValue, 0, offset, length) }
    }

    /// `fsetxattr`: sets the extended attribute `name` (e.g. `user.haul.validators`) to `value` on this file.
    package func setExtendedAttribute(_ name: String, to value: [UInt8]) throws(SystemError) {
        _ = try blockingSyscall("fsetxattr") {
            value.withUnsafeBytes { haul_fsetxattr(rawValue, name, $0.baseAddress, $0.count) }
        }
    }

    /// `futimens`: sets the file's modification time (and its access time, to the same) to `seconds` since the
    /// epoch.
    package func setModificationTime(secondsSinceEpoch seconds: Int64) throws(SystemError) {
        var times = [timespec(tv_sec: Int(seconds), tv_nsec: 0), timespec(tv_sec: Int(seconds), tv_nsec: 0)]
        _ = try blockingSyscall("futimens") { futimens(rawValue, &times) }
    }

    /// `getxattr`: the value of the extended attribute `name` of the file at `path` (a symbolic link followed);
    /// nil when the file has no such attribute, or no file or filesystem support is there.
    package static func extendedAttribute(_ name: String, ofPath path: String, limit: Int = 4096) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: limit)
        let length = try? blockingSyscall("getxattr") {
            buffer.withUnsafeMutableBytes { haul_getxattr(path, name, $0.baseAddress, $0.count) }
        }
        guard let length, length >= 0 else { return nil }
        return Array(buffer[..<Int(length)])
    }

    /// The modification time of the file at `path` (a symbolic link followed), in whole seconds since the
    /// epoch; nil when nothing is there.
    package static func modificationTime(ofPath path: String) -> Int64? {
        guard let info = try? FilePath(path).stat(followTargetSymlink: true) else { return nil }
        return Int64(info.st_mtim.tv_sec)
    }

    /// The modification time (as ``modificationTime(ofPath:)``) and the length in bytes of the file at `path`,
    /// from one `stat`; nil when nothing is there.
    package static func modificationTimeAndLength(ofPath path: String) -> (time: Int64, length: Int64)? {
        guard let info = try? FilePath(path).stat(followTargetSymlink: true) else { return nil }
        return (Int64(info.st_mtim.tv_sec), Int64(info.size))
    }

    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)`: starts write-back of the range without waiting for it.
    package func startWriteBack(offset: Int64, length: Int64) throws(SystemError) {
        _ = try blockingSyscall("sync_file_range") {
            haul_sync_file_range(rawValue, offset, length, haul_SYNC_FILE_RANGE_WRITE)
        }
    }

    /// `fdatasync`: the file's data (and the metadata needed to read it) is on stable storage.
    package func synchronizeData() throws(SystemError) {
        _ = try blockingSyscall("fdatasync") { fdatasync(rawValue) }
    }

    /// `fsync`: the file, or the directory's entries for a directory, is on stable storage.
    package func synchronize() throws(SystemError) {
        _ = try blockingSyscall("fsync") { fsync(rawValue) }
    }

    /// `syncfs`: every dirty page and inode of the filesystem holding this descriptor — other writers'
    /// too — is on stable storage.
    ///
    /// Errors: since Linux 5.8 a write-back error anywhere on that filesystem since this descriptor was opened
    /// (or since its last `syncfs`) is reported here, once per descriptor (the superblock's `errseq`);
    /// older kernels return 0 after such errors. Either way a file's own error is still reported by a later
    /// `fdatasync` of that file's descriptor.
    package func synchronizeFileSystem() throws(SystemError) {
        _ = try blockingSyscall("syncfs") { haul_syncfs(rawValue) }
    }

    /// `posix_fadvise(SEQUENTIAL)` on the whole file: a hint for read-ahead, so a failure is ignored.
    package func adviseSequentialReading() {
        _ = posix_fadvise(rawValue, 0, 0, POSIX_FADV_SEQUENTIAL)
    }

    /// `fstat`, with the error naming it.
    package func status() throws(SystemError) -> Stat {
        do { return try stat() } catch { throw SystemError(call: "fstat", error) }
    }

    /// Writes all of `bytes` at `offset` (`pwrite`, looping over short writes).
    package func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            done += try systemCall("pwrite") {
                try write(toAbsoluteOffset: offset + Int64(done), UnsafeRawBufferPointer(rebasing: bytes[done...]))
            }
        }
    }

    /// Writes all of `bytes` at the current position (`write`, looping over short writes): for pipes and
    /// terminals, which have no offsets.
    package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            done += try systemCall("write") { try write(UnsafeRawBufferPointer(rebasing: bytes[done...])) }
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` (`pread`), fewer only at the end of the file.
    package func readAll(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let count = try systemCall("pread") {
                try read(fromAbsoluteOffset: offset + Int64(done), into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            }
            if count == 0 { break }
            done += count
        }
        return done
    }
}

extension FilePath {
    /// `stat` of this path (following a symbolic link at its end), or nil when it fails (absent, not
    /// reachable).
    package func existingStatus() -> Stat? {
        try? stat()
    }
}

/// The process's soft limit on open descriptors (`RLIMIT_NOFILE`; `Int.max` when unlimited), or nil if
/// `getrlimit` fails.
package func openFileLimit() -> Int? {
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
    // `RLIM_INFINITY` is all ones, beyond `Int.max`: clamped to it.
    return Int(clamping: limit.rlim_cur)
}

/// The running kernel's release (`uname -r`, say "6.8.0-45-generic"), or nil if `uname` fails.
package func kernelRelease() -> String? {
    var names = utsname()
    guard uname(&names) == 0 else { return nil }
    return withUnsafeBytes(of: &names.release) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}
