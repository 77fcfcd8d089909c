/// The names of a download's working files beside its destination, built here and nowhere else:
/// `NAME.part` holds the bytes so far, `NAME.part.haul` is its resume journal, and `NAME.part.haul.tmp` a
/// journal being replaced. A final name appears only once the download is complete (and durable, unless
/// told not to sync).
public enum WorkingFileNames {
    /// Appended to the destination for the partial file: `NAME.part`.
    public static let partialSuffix = ".part"
    /// Appended to the destination for the resume journal: `NAME.part.haul`.
    public static let journalSuffix = ".part.haul"
    /// Appended to the destination for the journal's replacement while it is written: `NAME.part.haul.tmp`,
    /// the longest name Haul gives a working file (suggested names are shortened to leave room for it).
    public static let journalTemporarySuffix = ".part.haul.tmp"

    /// `NAME.part` for the destination `NAME`.
    public static func partial(of destination: String) -> String { destination + partialSuffix }
    /// `NAME.part.haul` for the destination `NAME`.
    public static func journal(of destination: String) -> String { destination + journalSuffix }
    /// Every working file of the destination `NAME`, the journal's first (removing them in this order
    /// never leaves a journal without its partial file).
    public static func all(of destination: String) -> [String] {
        [destination + journalTemporarySuffix, journal(of: destination), partial(of: destination)]
    }
    /// The destination a partial file's path belongs to (`NAME` for `NAME.part`), or nil when `path` does
    /// not end in `.part`.
    public static func destination(ofPartial path: String) -> String? {
        path.hasSuffix(partialSuffix) ? String(path.dropLast(partialSuffix.utf8.count)) : nil
    }
}
