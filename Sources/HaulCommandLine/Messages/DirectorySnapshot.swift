/// The names a destination directory held when a run started, so that the check for a file an earlier run
/// finished (``ExistingDestination``) looks at the disk only for names that were there.
///
/// A list of thousands of files into one fresh directory otherwise costs a `stat` per file that finds
/// nothing, made on the run's thread while the event loop creates and renames files in that same directory
/// (both take the directory's lock: the `stat` of a name not yet looked up waits for each create and rename).
///
/// A name missing from the snapshot can still turn up later (another process, or a name the file system
/// folds, such as a case-insensitive directory): then the engine finds the file before it writes anything and
/// refuses it (``Haul/HaulError/destinationExists(path:)``), and the CLI applies the same rule to that answer.
/// So the snapshot only saves the look for files that were not there; it never decides that a file is complete.
public struct DirectorySnapshot: Sendable {
    /// The directory as the run names it (`-d DIR`, `.` by default).
    public let directory: String
    private let names: Set<String>
    /// ``directory`` ending in `/`: what a path directly in it starts with.
    private let prefix: String

    /// `names` are the entries of `directory` (without `.` and `..`); none for a directory that does not exist.
    public init(directory: String, names: some Sequence<String>) {
        self.directory = directory
        self.names = Set(names)
        prefix = directory.utf8.last == UInt8(ascii: "/") ? directory : directory + "/"
    }

    /// Whether `directory` (as the run names it) is this snapshot's and held no entry: then no file directly
    /// in it needs its name made to know that the snapshot did not hold it (``mayHold(_:)`` is false).
    public func heldNothing(asDirectory directory: String) -> Bool {
        names.isEmpty && directory == self.directory
    }

    /// Whether a file may be at `path`: false only when `path` names an entry directly in ``directory``
    /// (`DIR/NAME`, as a download into it is named) that the directory did not hold.
    public func mayHold(_ path: String) -> Bool {
        guard path.utf8.starts(with: prefix.utf8) else { return true }
        let name = path.utf8.dropFirst(prefix.utf8.count)
        guard !name.isEmpty, !name.contains(UInt8(ascii: "/")) else { return true }
        return names.contains(String(Substring(name)))
    }
}
