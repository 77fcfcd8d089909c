/// What to do about a destination that already exists, before downloading and when the engine reports
/// ``Haul/HaulError/destinationExists(path:)`` after the server named a file.
///
/// The rule:
/// - `--allow-overwrite`: download and replace it.
/// - `--skip-existing` (wget's `-nc`): it is already complete; skip it, exit 0.
/// - With `-i`, a destination that exists with no `NAME.part` beside it is a file an earlier run of the same
///   list finished: already complete, exit 0. (With a `.part` beside it, the engine decides: it resumes an
///   interrupted download that has a journal, and otherwise refuses to replace the file.)
/// - Otherwise the engine refuses to replace it (exit 9).
public enum ExistingDestination {
    public enum Verdict: Sendable, Hashable {
        /// Start (or keep) the download; the engine checks the destination itself.
        case download
        /// Report `NAME: already complete` and skip it.
        case alreadyComplete
    }

    public static func verdict(destinationExists: Bool, partialExists: Bool, skipExisting: Bool,
                               fromInputFile: Bool, allowOverwrite: Bool) -> Verdict {
        guard destinationExists, !allowOverwrite else { return .download }
        if skipExisting { return .alreadyComplete }
        if fromInputFile && !partialExists { return .alreadyComplete }
        return .download
    }
}
