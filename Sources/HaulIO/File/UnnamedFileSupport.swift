import Glibc
import Synchronization

/// Where this process may open files without a name (`O_TMPFILE`, then `linkat`): not without `/proc` (looked
/// at once: where the kernel refuses `linkat(AT_EMPTY_PATH)` — before 6.10, without privilege — they are
/// named by `linkat` of `/proc/self/fd/N`, see ``DescriptorLinking``), and not in a directory whose
/// filesystem refused once (tmpfs before Linux 3.11, some network and FUSE filesystems, overlayfs on old
/// kernels). A refusal costs one failed `open`, after which every download into that directory takes the
/// named `.part` at once.
final class UnnamedFileSupport: Sendable {
    static let shared = UnnamedFileSupport()

    /// How many refusing directories are remembered; one more forgets them all (each costs one `open` again).
    private static let remembered = 64
    private let procAvailable: Bool
    private let refusingDirectories = Mutex<Set<String>>([])

    init(procAvailable: Bool = access("/proc/self/fd", X_OK) == 0) {
        self.procAvailable = procAvailable
    }

    func mayTry(in directory: String) -> Bool {
        procAvailable && !refusingDirectories.withLock { $0.contains(directory) }
    }

    func refused(in directory: String) {
        refusingDirectories.withLock { directories in
            if directories.count >= Self.remembered { directories.removeAll() }
            directories.insert(directory)
        }
    }

    /// Whether an `open(O_TMPFILE)` failure means the filesystem (or kernel) cannot do it, rather than a
    /// problem with the directory itself (missing, no permission): `EOPNOTSUPP`; `EISDIR` from a kernel that
    /// does not know `O_TMPFILE` (it sees `O_DIRECTORY | O_RDWR`); `EINVAL`.
    static func meansUnsupported(_ error: SystemError) -> Bool {
        [EOPNOTSUPP, ENOTSUP, EISDIR, EINVAL].contains(error.errno)
    }
}
