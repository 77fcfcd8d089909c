import Glibc
import Synchronization

/// How an open file without a name gets one: `linkat(fd, "", AT_EMPTY_PATH)` where the kernel allows it,
/// else `linkat` of its `/proc/self/fd/N` entry.
///
/// Both give the file a name atomically and never replace one (`EEXIST`). The `/proc` way works on every
/// kernel but walks `/proc/self/fd/N` and resolves that magic link for every file; `AT_EMPTY_PATH` starts from
/// the descriptor (about 3 µs less kernel CPU per file on ext4, 10% of creating, writing and naming a 4 KiB
/// file: `docs/benchmarks.md`). Linux 6.10 and later allow `AT_EMPTY_PATH` to a caller whose credentials are
/// the ones that opened the file; older kernels only with CAP_DAC_READ_SEARCH (root), and refuse others with
/// `ENOENT` (`EINVAL` before 2.6.39; a seccomp filter may answer `EPERM`).
///
/// `ENOENT` is also what a missing directory on the way to the new name gives, so a refusal is taken as the
/// kernel's only when the `/proc` way then succeeds: from then on this process links through `/proc` at once
/// (one failed call per process, not one per file). When both fail the `/proc` call's error is thrown and
/// nothing is remembered.
final class DescriptorLinking: Sendable {
    static let shared = DescriptorLinking()

    private let emptyPathRefused: Atomic<Bool>

    init(emptyPathRefused: Bool = false) {
        self.emptyPathRefused = Atomic(emptyPathRefused)
    }

    /// Whether this process has seen the kernel refuse `AT_EMPTY_PATH` (and now links through `/proc` only).
    var linksThroughProcOnly: Bool { emptyPathRefused.load(ordering: .relaxed) }

    /// Names `descriptor` `path` with `byEmptyPath` unless refused before, then with `throughProc` if it was
    /// refused now or before; see the type's description.
    func link(_ descriptor: Int32, to path: String,
              byEmptyPath: (Int32, String) throws(SystemError) -> Void,
              throughProc: (Int32, String) throws(SystemError) -> Void) throws(SystemError) {
        if !emptyPathRefused.load(ordering: .relaxed) {
            do {
                try byEmptyPath(descriptor, path)
                return
            } catch where Self.mayMeanRefused(error) {
                try throughProc(descriptor, path)
                emptyPathRefused.store(true, ordering: .relaxed)
                return
            }
        }
        try throughProc(descriptor, path)
    }

    /// Whether a failed `linkat(AT_EMPTY_PATH)` may be the kernel refusing the flag (to be told apart from a
    /// missing directory by the `/proc` call): `ENOENT`, `EINVAL`, `EPERM`. Anything else (`EEXIST`, `ENOSPC`,
    /// `EACCES` ...) would fail the `/proc` way too and is thrown as it is.
    static func mayMeanRefused(_ error: SystemError) -> Bool {
        error.errno == ENOENT || error.errno == EINVAL || error.errno == EPERM
    }
}
