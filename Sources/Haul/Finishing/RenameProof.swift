/// What makes a batch's renames durable in the ``GroupCommit``: its directories' own `fsync`, or the `syncfs`
/// with which the next batch flushes its data. Pure.
///
/// A rename is durable once its directory is written. `syncfs` writes everything the filesystem holds
/// dirty, data and metadata, directories included (`syncfs(2)`: like `sync`, which writes "all pending
/// modifications to filesystem metadata and cached file data"), and from Linux 5.8 reports a failed
/// write-back of any of it since the descriptor it is called on was opened. So a `syncfs` that begins after a
/// rename has returned, on a descriptor opened before the rename (a failed write-back of the directory in
/// between would otherwise go unreported), proves that rename as well as an `fsync` of its directory would. Under load a batch is followed at once by the next, whose small files
/// share a `syncfs`: the directory `fsync` in between was a second flush of the disk per batch (about 40% of
/// a batch's flush time on this project's disk, docs/benchmarks.md). The next batch's `syncfs` now proves
/// the renames of the previous one; a directory on a filesystem it does not flush that way (per-file syncs,
/// another filesystem, an unknown one) is synced on its own, before the next batch's flush, so its files do
/// not wait for it.
enum RenameProof: Equatable, Sendable {
    /// An `fsync` of the directory itself.
    case ownDirectorySync
    /// The next batch's `syncfs` of the filesystem holding the directory.
    case nextSyncfs

    /// The proof for renames into a directory on `directoryFileSystem` (nil: unknown), made after every file
    /// up to ``HaulIO/OutputFile/openOrder`` `openedBeforeRenames` was opened, when the next batch flushes each
    /// filesystem of `nextSyncfs` with a `syncfs` on the file of the open order given there.
    static func decide(directoryFileSystem: UInt64?, openedBeforeRenames: UInt64, nextSyncfs: [UInt64: UInt64]) -> RenameProof {
        guard let directoryFileSystem, let syncfsOn = nextSyncfs[directoryFileSystem], syncfsOn <= openedBeforeRenames else {
            return .ownDirectorySync
        }
        return .nextSyncfs
    }
}
