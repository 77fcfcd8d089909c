/// Whether a download writes into a file without a name (``HaulIO/OutputFile/openUnnamed(becoming:)``) or into
/// its named `NAME.part`.
///
/// A small file's biggest cost is directory work, in one directory shared by thousands of downloads under
/// its lock: creating `NAME.part` (a lookup and an insert), looking for its journal, renaming it (two lookups,
/// an insert, a delete). A file without a name costs none of that until its finish names it once, straight
/// to `NAME` (`linkat`, which never replaces). It gets its `.part` name only if something needs one first
/// (a journal, a pause or failure that keeps bytes): see ``SegmentedDownload``.
///
/// Only for a fresh download (no `NAME.part` there: whatever is there keeps today's rules, resume or
/// refusal) of an ordinary name (a final name that is a working name of another download holds that one's
/// `.part` locked: ``DestinationClaims``), on disk, that must not replace an existing file (replacing is a
/// `rename`; a conditional request replaces what it asked about). Pure.
enum WorkingFileChoice: Equatable, Sendable {
    /// The named `NAME.part`, opened and locked as always.
    case named
    /// A file without a name in the destination's directory.
    case unnamed
    /// Unnamed if no `NAME.part` is there: look (one `lstat`), then decide again with ``Facts/partialExists``.
    case lookForPartial

    struct Facts: Equatable, Sendable {
        /// The download writes a file on disk (not memory, not a stream).
        var onDisk = true
        /// The destination ends in a working suffix (`x.part`, `x.part.haul`, ...): a working name of another name.
        var destinationIsWorkingName = false
        /// An existing destination may be replaced (`--allow-overwrite`).
        var replacesExisting = false
        /// The request asks the server whether the file changed (`-N`, `-z`): it may replace the file there.
        var asksFirst = false
        /// The client allows it (``DownloadOptions/writesUnnamedFiles``).
        var allowed = true
        /// The process may open files without a name in the destination's directory (``HaulIO/OutputFile/mayOpenUnnamed(in:)``).
        var mayOpenUnnamed = true
        /// Whether `NAME.part` exists; nil when not looked at yet.
        var partialExists: Bool?
    }

    static func decide(_ facts: Facts) -> WorkingFileChoice {
        guard facts.allowed, facts.onDisk, !facts.destinationIsWorkingName, !facts.replacesExisting, !facts.asksFirst,
              facts.mayOpenUnnamed else { return .named }
        switch facts.partialExists {
        case nil: return .lookForPartial
        case true?: return .named
        case false?: return .unnamed
        }
    }
}
