/// What to do about a destination that already exists, before downloading and when the engine reports
/// ``Haul/HaulError/destinationExists(path:)`` after the server named a file.
///
/// The rule:
/// - `--allow-overwrite`: download and replace it.
/// - `--skip-existing` (wget's `-nc`): it is already complete; skip it, exit 0.
/// - With `-i`, a destination that exists with no interrupted download beside it (no journal,
///   `NAME.part.haul`) is a file an earlier run of the same list finished: already complete, exit 0. (With a
///   journal beside it, the engine decides: it resumes that download. A `NAME.part` without a journal holds
///   nothing any run resumes — a concurrent run's copy that lost the race for the name, or a download that
///   stopped before its first checkpoint — and used to make every later run of the list fail with exit 9.
///   The run whose own download found the name taken asks with its kept `.part` instead: exit 9 there.)
/// - Otherwise the engine refuses to replace it (exit 9).
public enum ExistingDestination {
    public enum Verdict: Sendable, Hashable {
        /// Start (or keep) the download; the engine checks the destination itself.
        case download
        /// Report `NAME: already complete` and skip it.
        case alreadyComplete
    }

    public static func verdict(destinationExists: Bool, interruptedDownloadExists: Bool, skipExisting: Bool,
                               fromInputFile: Bool, allowOverwrite: Bool) -> Verdict {
        guard destinationExists, !allowOverwrite else { return .download }
        if skipExisting { return .alreadyComplete }
        if fromInputFile && !interruptedDownloadExists { return .alreadyComplete }
        return .download
    }
}
