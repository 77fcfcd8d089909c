import CHaulSystem
import Glibc
import SystemPackage

// The file-system calls Haul makes by path rather than on an open ``OutputFile``: directories, renames,
// removals, existence, and small `/proc` files. Each goes through swift-system's `FilePath` or the package's one
// syscall wrapper; those whose failure the caller must hear of throw a ``SystemError`` naming the call.
extension OutputFile {
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
    ///
    /// Split at the last `/` byte, as the kernel splits a path: not at the last `Character` that is `/`, which
    /// costs a walk over grapheme clusters (a measurable part of each of many small downloads) and misses a
    /// `/` that a neighbouring scalar joins into one cluster (`/` then a combining mark).
    public static func directory(containing path: String) -> String {
        guard let slash = path.lastSlashByteIndex else { return "." }
        return slash == path.startIndex ? "/" : String(Substring(path.utf8[..<slash]))
    }

    /// Renames `from` to `to` atomically (replacing `to`).
    public static func rename(_ from: String, to: String) throws(SystemError) {
        _ = try blockingSyscall("rename") { Glibc.rename(from, to) }
    }

    /// Renames `from` to `to` atomically unless something is at `to` already: `renameat2(RENAME_NOREPLACE)`,
    /// which fails with `EEXIST` then (`from` stays). On a filesystem or kernel without the flag (`EINVAL`,
    /// `ENOSYS`) a plain `rename`, which replaces: the caller's earlier check is all there is then.
    public static func renameWithoutReplacing(_ from: String, to: String) throws(SystemError) {
        do {
            _ = try blockingSyscall("renameat2") { haul_rename_noreplace(from, to) }
        } catch where error.errno == EINVAL || error.errno == ENOSYS {
            try rename(from, to: to)
        }
    }

    /// Whether there is a directory entry `path` (`lstat`: a symbolic link counts, whatever it points to).
    public static func hasEntry(_ path: String) -> Bool {
        (try? FilePath(path).stat(followTargetSymlink: false)) != nil
    }

    /// Removes `path`; a missing file is not an error.
    public static func remove(_ path: String) throws(SystemError) {
        do {
            _ = try blockingSyscall("unlink") { unlink(path) }
        } catch where error.code == .noSuchFileOrDirectory {
        }
    }

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

    /// `/proc/meminfo` as text (what the machine holds dirty, among the rest), or nil when it cannot be read.
    public static func memoryInformation() -> String? {
        readSmallFile("/proc/meminfo")
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
}
