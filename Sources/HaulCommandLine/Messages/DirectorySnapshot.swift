import Haul
import HaulIO
import Synchronization

/// The names a destination directory held when a run started, so that the check for a file an earlier run
/// finished (``ExistingDestination``) looks at the disk only for names that were there.
///
/// A list of thousands of files into one fresh directory otherwise costs a `stat` per file that finds
/// nothing, made on the run's thread while the event loop creates and renames files in that same directory
/// (both take the directory's lock: the `stat` of a name not yet looked up waits for each create and rename).
///
/// The engine is told the same (``listsNothing(of:)``, ``ListedAbsenceHints``), and then does not look for the
/// file and its `.part` either.
///
/// A name missing from the snapshot can still turn up later (another process, or a name the file system
/// folds, such as a case-insensitive directory). The engine never replaces it: a download told the name was
/// absent finds it when it names its file (`linkat`, which never replaces), fails with
/// ``Haul/HaulError/destinationExists(path:)`` and keeps its bytes as `NAME.part`; one not told finds it before
/// it writes anything, and the CLI applies its rule to that answer. So the snapshot only saves the look for
/// files that were not there; it never decides that a file is complete.
public struct DirectorySnapshot: Sendable {
    /// The directory as the run names it (`-d DIR`, `.` by default).
    public let directory: String
    private let names: Set<String>
    /// ``directory`` ending in one `/`: how the paths of its entries start.
    private let prefix: String

    /// `names` are the entries of `directory` (without `.` and `..`); none for a directory that does not exist.
    public init(directory: String, names: some Sequence<String>) {
        self.directory = directory
        self.names = Set(names)
        var prefix = directory.utf8.last == UInt8(ascii: "/") ? directory : directory + "/"
        prefix.makeContiguousUTF8()
        self.prefix = prefix
    }

    /// Whether a file may be at `path`: false only when `path` names an entry directly in ``directory``
    /// (`DIR/NAME`, as a download into it is named) that the directory did not hold.
    ///
    /// Asked once per download of a list: the bytes are compared in place, as in ``listsNothing(of:)``
    /// (`utf8.starts(with:)` stepped through both strings' indices, about 1,300 instructions per file).
    public func mayHold(_ path: String) -> Bool {
        guard isDirectlyInDirectory(path) else { return true }
        if names.isEmpty { return false }
        return names.contains(String(Substring(path.utf8.dropFirst(prefix.utf8.count))))
    }

    /// Whether the directory held none of `path`, `path.part` and `path.part.haul` (`path` directly in
    /// ``directory``): what a download of `path` would look for, to resume or refuse an earlier run's file.
    /// Asked once per download of a list: the bytes are compared in place, and an empty directory (the
    /// usual one for a long list) needs no name made.
    public func listsNothing(of path: String) -> Bool {
        guard isDirectlyInDirectory(path) else { return false }
        if names.isEmpty { return true }
        let name = String(Substring(path.utf8.dropFirst(prefix.utf8.count)))
        return !names.contains(name) && !names.contains(WorkingFileNames.partial(of: name))
            && !names.contains(WorkingFileNames.journal(of: name))
    }

    /// Whether `path` is `DIR/NAME`: ``directory``'s prefix, then a non-empty name without a `/` (false when
    /// the prefix's bytes are not contiguous, which `init` rules out).
    private func isDirectlyInDirectory(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { path in
            prefix.utf8.withContiguousStorageIfAvailable { prefix in
                path.count > prefix.count && UnsafeBufferPointer(rebasing: path[..<prefix.count]).elementsEqual(prefix)
                    && !UnsafeBufferPointer(rebasing: path[prefix.count...]).contains(UInt8(ascii: "/"))
            } ?? false
        }
    }
}

/// Which downloads of a run are told that their file was not in the destination directory when the run
/// started (``DirectorySnapshot``, ``Haul/DownloadRequest``'s `listedAbsentPath`), so that the engine does not
/// look for `NAME` and `NAME.part` again: two `stat`s fewer per file of a list into one directory.
///
/// Only the first download of a run to expect a path is told. A second one expecting the same path (a URL
/// listed twice, two URLs ending in the same name) may find the first one's file there: it looks, as before,
/// and gets the answer it always got. The paths told are remembered in a fixed number of bits (``SeenPaths``),
/// so memory does not grow with the list; a path whose bits another set only loses its hint.
public final class ListedAbsenceHints: Sendable {
    private let snapshot: DirectorySnapshot?
    private let told: Mutex<SeenPaths>

    /// `snapshot`: the run's listing, nil when there is none (not made, the directory too large, unreadable);
    /// `count`: about how many downloads the run has, to size the record of paths told.
    public init(snapshot: DirectorySnapshot?, count: Int) {
        self.snapshot = snapshot
        told = Mutex(SeenPaths(expecting: snapshot == nil ? 0 : count))
    }

    /// Whether the download expecting `path` may be told that nothing of it was there (and is now counted
    /// as told): the snapshot lists none of `path`, `path.part`, `path.part.haul`, and no download of this run
    /// was told about `path` before.
    public func tell(_ path: String) -> Bool {
        guard let snapshot, snapshot.listsNothing(of: path) else { return false }
        return told.withLock { $0.insert(path) }
    }
}

/// A set of paths in a fixed number of bits (a Bloom filter of two hashes): ``insert(_:)`` says for sure
/// when a path is new, and may take a new path for one seen (when other paths set both its bits), never the
/// reverse. Deterministic (FNV-1a), so its answers are the same in every run.
public struct SeenPaths: Sendable {
    private var words: [UInt64]
    private let mask: UInt64

    /// Sized for about `expecting` paths: at least 32 bits each (with that many paths in, a new one is taken
    /// for a seen one about once in 270), at least 4,096 bits and at most 8 Mi bits (1 MiB).
    public init(expecting: Int) {
        var bits = 4096
        while bits < min(max(expecting, 0), 1 << 18) * 32 { bits *= 2 }
        words = [UInt64](repeating: 0, count: bits / 64)
        mask = UInt64(bits - 1)
    }

    /// Adds `path`; true when it was certainly not there before.
    public mutating func insert(_ path: String) -> Bool {
        // The bytes where they lie: iterating `utf8` cost about 12 instructions a byte, once per file of a list.
        var hash: UInt64 = path.withUTF8Bytes { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return hash
        }
        // Two indices from the hash's halves, mixed first (splitmix64's finalizer) so that both depend on
        // every byte.
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        hash ^= hash >> 31
        let first = set(hash & mask), second = set((hash >> 32) & mask)
        return first || second
    }

    /// Sets bit `bit`; whether it was clear.
    private mutating func set(_ bit: UInt64) -> Bool {
        let word = Int(bit >> 6), flag = UInt64(1) << (bit & 63)
        defer { words[word] |= flag }
        return words[word] & flag == 0
    }
}
