import HaulIO

/// What a download that stops before its first body byte takes away again: the files and directories this
/// run created for it, so that the directory is as it was (as wget and curl leave it) — never anything an
/// earlier run left, which a resume needs.
///
/// Pure: the facts go in, the paths to remove come out; ``SegmentedDownload`` and ``DownloadTask`` carry it out.
struct EarlyStopCleanup: Equatable, Sendable {
    /// What this run put on disk for the download.
    struct Created: Equatable, Sendable {
        /// This run created `NAME.part` (it was not there before).
        var part = false
        /// Directories this run created for it, outermost first.
        var directories: [String] = []
        /// The download writes into a file without a name (``WorkingFileChoice/unnamed``) that has not been
        /// given its `.part` name: nothing of it is on disk to remove, and a `NAME.part` or journal there now
        /// is another download's.
        var unnamed = false

        /// Both, `other`'s after this one's (a directory download learns its name, and may create the
        /// directory again, after preparing).
        func merged(with other: Created) -> Created {
            Created(part: part || other.part, directories: directories + other.directories, unnamed: unnamed || other.unnamed)
        }
    }

    struct Facts: Equatable, Sendable {
        var created: Created
        /// The download continues an earlier run's journal: everything on disk is that run's.
        var resumed: Bool
        /// Body bytes written into the file in this run.
        var bytesWritten: Int64
        /// The `.part` and its journal, or empty when not named yet (a directory download before the
        /// server named the file) or nothing is written beside a file (a stream, memory).
        var partPath: String
        var journalPath: String
    }

    /// The journal to remove (with its temp file), the `.part` to unlink (a missing one is fine), then the
    /// directories to remove if empty, innermost first.
    var journal: String?
    var part: String?
    var directories: [String] = []

    var isEmpty: Bool { journal == nil && part == nil && directories.isEmpty }

    static func decide(_ facts: Facts) -> EarlyStopCleanup {
        // A body byte makes the `.part` worth keeping (a failure checkpoints it for a resume); a resume's
        // files are an earlier run's progress, whatever this run managed.
        guard facts.bytesWritten == 0, !facts.resumed else { return EarlyStopCleanup() }
        var cleanup = EarlyStopCleanup()
        if !facts.created.unnamed, !facts.journalPath.isEmpty {
            // Not a resume: any journal there now was started by this run (one found stale was removed when
            // the run prepared), and it records no byte.
            cleanup.journal = facts.journalPath
        }
        if facts.created.part, !facts.created.unnamed, !facts.partPath.isEmpty { cleanup.part = facts.partPath }
        // A `.part` that was there before lives in a directory that was there before: the list is empty
        // then. Only empty directories are ever removed.
        cleanup.directories = facts.created.directories
        return cleanup
    }

    /// Carries it out (metadata calls only: quick enough for the loop), while the caller still holds the
    /// `.part`'s lock, so that no other download can have taken the file up meanwhile.
    func perform() {
        if let journal { Checkpointer.discard(path: journal) }
        if let part { try? OutputFile.remove(part) }
        OutputFile.removeEmptyDirectories(directories)
    }
}
