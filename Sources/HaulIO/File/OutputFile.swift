import CHaulSystem
import Glibc

/// A file being downloaded into: positional writes from any offset, preallocation, durability.
///
/// Every call goes through the syscall wrapper, so failures come back as ``SystemError`` naming the call and
/// errno; callers add the path. `pwrite` is safe from several threads at once on distinct ranges.
public final class OutputFile: Sendable {
    /// Where the file lives.
    public let path: String
    /// The open descriptor.
    public let fileDescriptor: Int32

    private init(path: String, fileDescriptor: Int32) {
        self.path = path
        self.fileDescriptor = fileDescriptor
    }

    deinit {
        _ = try? closeDescriptor(fileDescriptor)
    }

    /// Opens (creating if needed) `path` for writing. With `truncate`, existing content is discarded.
    public static func open(_ path: String, truncate: Bool) throws(SystemError) -> OutputFile {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0)
        let fd = try blockingSyscall("open") { Glibc.open(path, flags, 0o644) }
        return OutputFile(path: path, fileDescriptor: fd)
    }

    /// Writes all of `bytes` at `offset`, looping over short writes.
    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let written = try blockingSyscall("pwrite") {
                pwrite(fileDescriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            done += written
        }
    }

    /// Reserves `length` bytes of disk so that a full disk fails now rather than mid-download. Falls back to
    /// setting the size when the filesystem cannot preallocate (then space is not reserved).
    public func preallocate(length: Int64) throws(SystemError) {
        guard length > 0 else { return }
        do {
            _ = try blockingSyscall("fallocate") { haul_fallocate(fileDescriptor, 0, 0, length) }
        } catch where error.errno == EOPNOTSUPP || error.errno == ENOSYS {
            try truncate(to: length)
        }
    }

    /// Sets the file's size.
    public func truncate(to length: Int64) throws(SystemError) {
        _ = try blockingSyscall("ftruncate") { ftruncate(fileDescriptor, off_t(length)) }
    }

    /// The file's current size.
    public func size() throws(SystemError) -> Int64 {
        var info = stat()
        _ = try blockingSyscall("fstat") { fstat(fileDescriptor, &info) }
        return Int64(info.st_size)
    }

    /// Starts write-back of `length` bytes at `offset` without waiting for it, so that the final sync has
    /// little left to do.
    public func startWriteBack(offset: Int64, length: Int64) throws(SystemError) {
        _ = try blockingSyscall("sync_file_range") {
            haul_sync_file_range(fileDescriptor, offset, length, haul_SYNC_FILE_RANGE_WRITE)
        }
    }

    /// Makes the written data durable (`fdatasync`).
    public func synchronize() throws(SystemError) {
        _ = try blockingSyscall("fdatasync") { fdatasync(fileDescriptor) }
    }

    /// Renames `from` to `to` atomically (replacing `to`).
    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try blockingSyscall("rename") { Glibc.rename(from, to) }
    }

    /// Removes `path`; a missing file is not an error.
    public static func remove(_ path: String) throws(SystemError) {
        do {
            _ = try blockingSyscall("unlink") { unlink(path) }
        } catch where error.errno == ENOENT {
        }
    }

    /// Bytes an unprivileged writer may still use on the filesystem holding `directory`.
    public static func availableSpace(in directory: String) throws(SystemError) -> Int64 {
        var info = statvfs()
        _ = try blockingSyscall("statvfs") { statvfs(directory, &info) }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Whether something exists at `path`.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` is a directory (following symbolic links).
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Creates `path` and any missing parents (like `mkdir -p`); an existing directory is not an error.
    public static func createDirectories(_ path: String) throws(SystemError) {
        if path.isEmpty || isDirectory(path) { return }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try createDirectories(String(path[..<slash]))
        }
        do {
            _ = try blockingSyscall("mkdir") { mkdir(path, 0o777) }
        } catch where error.errno == EEXIST && isDirectory(path) {
        }
    }
}
