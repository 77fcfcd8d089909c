import HaulIO

/// Whether the name a finished download is about to rename — its `NAME.part` — still leads to the file it
/// wrote. The rename works on the name, not on the open file: another program that removed the `.part` or put
/// another file there (a browser's or a script's own `NAME.part`, a cleanup) would otherwise have that file
/// renamed to the final name and reported saved, or a bare `ENOENT` from `renameat2`. The check compares the
/// open file's `fstat` identity with what `lstat` finds at the name, just before the rename. (A program that
/// replaces the name between that check and the rename is not caught; it could as well replace the final
/// file afterwards.) A file without a name is linked by its descriptor and needs no check.
enum WorkingFileCheck: Equatable, Sendable {
    /// The name is the file that was written: rename it.
    case same
    /// Nothing is at the name any more.
    case removed
    /// Another file (or a link, a directory) is at the name.
    case replaced

    /// The verdict for the written file's identity and what is at its name now (nil: nothing). An unknown
    /// identity of the written file (its `fstat` failed) is taken as the same: the rename then says what it finds.
    static func decide(written: (device: UInt64, inode: UInt64)?, atName: PathStatus?) -> WorkingFileCheck {
        guard let atName else { return .removed }
        guard let written else { return .same }
        return atName.isRegularFile && atName.device == written.device && atName.inode == written.inode ? .same : .replaced
    }

    /// Checks `file` against `partPath` (see the type): throws ``HaulError/Reason/workingFileReplaced(path:destination:replaced:)``
    /// when the name no longer leads to it; nothing to check for a file without a name.
    static func check(_ file: OutputFile, partPath: String, destination: String) throws(HaulError) {
        guard !file.isUnnamed else { return }
        switch decide(written: try? file.identity(), atName: PathStatus.of(partPath)) {
        case .same: return
        case .removed: throw .workingFileReplaced(path: partPath, destination: destination, replaced: false)
        case .replaced: throw .workingFileReplaced(path: partPath, destination: destination, replaced: true)
        }
    }
}
