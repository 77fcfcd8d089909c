/// The names of a download's working files beside its destination, built here and nowhere else:
/// `NAME.part` holds the bytes so far, `NAME.part.haul` is its resume journal, and `NAME.part.haul.tmp` a
/// journal being replaced. A final name appears only once the download is complete (and durable, unless
/// told not to sync).
///
/// Final names and working names never meet: a name ending in one of ``suffixes`` would be a working file
/// of another download's destination (`x.part` is the partial file of `x`), so a name a server or a URL
/// chooses never ends in one (``SuggestedFileName`` changes the last `.` to `_`: `x.part` becomes
/// `x_part`), and a destination named so explicitly is refused while the download it belongs to is live,
/// or, when it would replace a working file of an interrupted download, at all.
public enum WorkingFileNames {
    /// Appended to the destination for the partial file: `NAME.part`.
    public static let partialSuffix = ".part"
    /// Appended to the destination for the resume journal: `NAME.part.haul`.
    public static let journalSuffix = ".part.haul"
    /// Appended to the destination for the journal's replacement while it is written: `NAME.part.haul.tmp`,
    /// the longest name Haul gives a working file (suggested names are shortened to leave room for it).
    public static let journalTemporarySuffix = ".part.haul.tmp"

    /// Every suffix a working file adds to its destination's name, longest first.
    public static let suffixes = [journalTemporarySuffix, journalSuffix, partialSuffix]

    /// The last byte of each of ``suffixes`` (`p`, `l`, `t`). A name whose last byte is none of them ends in
    /// no suffix, by bytes or by characters: each ends in a lowercase ASCII letter, and no character but that
    /// letter itself is canonically equivalent to one. Most names are answered by this one byte, without
    /// comparing characters (`hasSuffix`, a few hundred instructions per suffix, several times per download).
    static let suffixLastBytes: [UInt8] = suffixes.map { $0.utf8.last! }

    /// Whether `name`'s last byte is one of ``suffixLastBytes``: false means it ends in no working suffix.
    static func mayEndInSuffix(_ name: String) -> Bool {
        guard let last = name.utf8.last else { return false }
        return suffixLastBytes.contains(last)
    }

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

    /// The destination `path` is a working file of, and the suffix that makes it one (`x` and `.part` for
    /// `x.part`), or nil when `path` ends in no working suffix. Exact: what the file system would compare.
    public static func owner(ofWorkingName path: String) -> (destination: String, suffix: String)? {
        guard mayEndInSuffix(path) else { return nil }
        for suffix in suffixes where path.hasSuffix(suffix) && path.utf8.count > suffix.utf8.count {
            return (String(path.dropLast(suffix.utf8.count)), suffix)
        }
        return nil
    }

    /// Whether `name` ends in a working suffix in any mix of ASCII case (`x.PART` too: on a case-insensitive
    /// file system, a FAT stick or an ext4 directory with casefold, it is the same name as `x.part`).
    public static func endsInWorkingSuffix(ignoringCase name: String) -> Bool {
        let bytes = name.utf8
        return suffixes.contains { suffix in
            let tail = suffix.utf8
            guard bytes.count >= tail.count else { return false }
            return zip(bytes.suffix(tail.count), tail).allSatisfy { lowercasedASCII($0) == $1 }
        }
    }

    private static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
