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

    /// One file of the batch whose renames await their proof, as ``standIn(fileSystem:groupFirstOpened:openedBeforeRenames:awaiting:)`` sees it.
    struct Candidate: Equatable, Sendable {
        /// The filesystem holding the file (nil: unknown).
        var fileSystem: UInt64?
        /// ``HaulIO/OutputFile/openOrder``.
        var openOrder: UInt64
        /// A `syncfs` was called on its descriptor already (that batch's own flush).
        var usedForSyncfs: Bool
    }

    /// The file of the batch awaiting proof on whose descriptor the next batch calls its `syncfs` of
    /// `fileSystem`, instead of the first-opened file of its own group there (opened as `groupFirstOpened`);
    /// nil: that file.
    ///
    /// A `syncfs` reports the filesystem's write-back errors since its descriptor was opened, or since that
    /// descriptor's last `syncfs` (each descriptor keeps its own place in the filesystem's error sequence). The
    /// group's first-opened file proves its group's data, and the renames before it only when it was opened
    /// before them. Small files come and go within a millisecond: often every file of the next batch was
    /// opened after the renames, and the directory needed an `fsync` of its own. A file of
    /// the batch awaiting proof serves then, on the same filesystem: opened before its batch's renames and
    /// before the group's first file, and no `syncfs` called on it yet — so a `syncfs` on it reports every
    /// write-back error since before the group's data and the renames were written. One used for a `syncfs`
    /// already never serves: that call took the errors up to it, among them maybe those of a file of the next
    /// group already written then. Of the files that may serve, the one opened last (an older one could
    /// report an error its batch has handled already: a needless fallback to per-file syncs, never a false proof).
    static func standIn(fileSystem: UInt64, groupFirstOpened: UInt64, openedBeforeRenames: UInt64, awaiting: [Candidate]) -> Int? {
        // Opened before the renames, a file is opened before the group's first too.
        guard groupFirstOpened > openedBeforeRenames else { return nil }
        var chosen: Int?
        for (index, candidate) in awaiting.enumerated()
        where candidate.fileSystem == fileSystem && !candidate.usedForSyncfs && candidate.openOrder <= openedBeforeRenames
            && chosen.map({ candidate.openOrder > awaiting[$0].openOrder }) ?? true {
            chosen = index
        }
        return chosen
    }
}
