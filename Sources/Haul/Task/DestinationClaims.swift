import Glibc
import HaulIO
import Synchronization
import SystemPackage

/// The final names the downloads of this process hold, and what makes two names collide.
///
/// The `.part` lock (``OutputFile/openForDownload(_:)``) stops two downloads writing one `.part`; it cannot
/// see two downloads whose names differ yet meet on disk: `x` and `x.part` (the second one's final rename
/// would replace the first one's partial file), or `x` and `x.part.haul` (its journal). A pure value, so
/// the rules are tested without files; ``DestinationClaims`` holds the process's one copy.
struct NameClaims: Sendable {
    /// The download holding a name, and its path as that download gave it (for messages).
    struct Holder: Sendable, Equatable {
        var owner: Int
        var path: String
    }

    /// Claimed names by key (see ``DestinationClaims/key(of:)``).
    private var holders: [String: Holder] = [:]
    /// The key each owner holds: a download has one final name at a time.
    private var keys: [Int: String] = [:]
    /// How many held keys end in the bytes of a working suffix. Only such a key can be `key + suffix` for
    /// another key: while none is held (the common case, thousands of ordinary names), a claim looks its own
    /// key up and nothing else, instead of building and looking up three longer names.
    private var heldWorkingSuffixKeys = 0

    /// Claims `key` for `owner` (giving up the one it held before, if another), or returns the holder of a
    /// colliding name and claims nothing. Names collide when they are the same, or when one is a working
    /// file of the other (it ends in one of ``WorkingFileNames/suffixes`` after the other).
    mutating func claim(_ key: String, path: String, owner: Int) -> Holder? {
        if let collision = collision(with: key, owner: owner) { return collision }
        release(owner: owner)
        holders[key] = Holder(owner: owner, path: path)
        keys[owner] = key
        if Self.endsInWorkingSuffixBytes(key) { heldWorkingSuffixKeys += 1 }
        return nil
    }

    /// Gives up whatever `owner` holds (nothing when it holds nothing).
    mutating func release(owner: Int) {
        guard let key = keys.removeValue(forKey: owner) else { return }
        holders[key] = nil
        if Self.endsInWorkingSuffixBytes(key) { heldWorkingSuffixKeys -= 1 }
    }

    /// The name `owner` holds, if any.
    func key(of owner: Int) -> String? { keys[owner] }

    /// In order: `key` itself, `key` with each working suffix, the name `key` is a working file of.
    private func collision(with key: String, owner: Int) -> Holder? {
        if let holder = holders[key], holder.owner != owner { return holder }
        // `key + suffix` ends in the suffix's bytes; a held key equal to it (canonically equivalent: a suffix
        // of ASCII letters and dots neither composes with what precedes it nor comes out of normalizing
        // anything else) ends in them too. None held: none can match.
        if heldWorkingSuffixKeys > 0 {
            for suffix in WorkingFileNames.suffixes {
                if let holder = holders[key + suffix], holder.owner != owner { return holder }
            }
        }
        if let base = WorkingFileNames.owner(ofWorkingName: key), let holder = holders[base.destination], holder.owner != owner {
            return holder
        }
        return nil
    }

    /// Whether `key`'s UTF-8 ends in the bytes of one of ``WorkingFileNames/suffixes``.
    private static func endsInWorkingSuffixBytes(_ key: String) -> Bool {
        // Most names end in none of the suffixes' last bytes: no suffix compared then.
        guard WorkingFileNames.mayEndInSuffix(key) else { return false }
        return WorkingFileNames.suffixes.contains { suffix in
            let bytes = key.utf8
            let tail = suffix.utf8
            return bytes.count >= tail.count && bytes.reversed().starts(with: tail.reversed())
        }
    }
}

/// The process-wide registry of final names (``NameClaims``), and the locks that show names to downloads of
/// other processes, which only see each other's `.part` locks.
///
/// A download claims its final name before it creates or opens anything (a file destination as it is
/// prepared, a directory download once the server's head names it) and holds it until its end — after the
/// final rename — or until it pauses, when it gives up its `.part` lock too. Every client of the process
/// shares it: two ``HaulClient``s downloading into one directory collide as two tasks of one client do.
///
/// Across processes every lock is on one file: the `.part` of the name whose working files meet. A download of
/// `x` locks `x.part`, its own partial file, as every download does. A download whose final name is a working
/// name of `x` (`x.part`, `x.part.haul`, `x.part.haul.tmp`: only ever named so explicitly, since no server or
/// URL can choose such a name) holds `x.part` locked too, for its whole claim, creating it (empty) when it is
/// absent (a *placeholder*, removed when the claim ends unless the download's own final rename replaced it).
/// Whichever of the two comes second finds the lock held and is refused. So a download of an ordinary name
/// makes no call for other processes at all beyond opening and locking its `.part`: the rare download that
/// could break another pays for the check, the common one does not. (Before, every download probed the three
/// `.part` files of the downloads that could replace its working files: three failed `open`s per file.)
/// A fresh download writing into a file without a name (``WorkingFileChoice``) holds no `.part` lock until
/// it needs the name; other processes cannot see it meanwhile, and its final `linkat` never replaces what
/// one of them put there first (``FinalNaming``).
enum DestinationClaims {
    private static let claims = Mutex(NameClaims())
    private static let owners = Atomic<Int>(0)
    /// The `.part` files that downloads whose final names are working names hold locked, by owner.
    private static let placeholders = Mutex<[Int: Placeholder]>([:])

    /// A `.part` of another name held locked by a download whose final name is a working name of that name.
    struct Placeholder: Sendable {
        var file: OutputFile
        /// This download created it (and removes it at the end, if it is still the file created).
        var created: Bool
    }

    /// A number for a new claimant, unique in the process.
    static func newOwner() -> Int { owners.add(1, ordering: .relaxed).newValue }

    /// Claims `path` for `owner`, or throws:
    /// - ``HaulError/Reason/destinationBusy(path:holder:)`` (this process's pid) when another download of
    ///   this process holds the same name, or a name one of them would replace as a working file;
    /// - ``HaulError/Reason/destinationBusy(path:holder:)`` (the other pid, when known) when `path` is a working
    ///   file of `x` and a download of another process holds `x.part` locked: a download of `x`, or another
    ///   download whose final name is a working name of `x`;
    /// - ``HaulError/Reason/invalidDestination(_:)`` when `path` is a working file of an interrupted download
    ///   that it would replace: a replace is for finished files only.
    /// (A download of `x` is refused when another process holds `x.part`: that is its own `.part`, whose
    /// lock ``DownloadPreparation`` takes.)
    static func claim(_ path: String, owner: Int) throws(HaulError) {
        let key = key(of: path)
        if let holder = claims.withLock({ $0.claim(key, path: path, owner: owner) }) {
            throw .destinationBusy(path: holder.path, holder: getpid())
        }
        do {
            try holdWorkingNamesOwner(path, owner: owner)
        } catch {
            release(owner: owner)
            throw error
        }
    }

    /// Gives up the name `owner` holds, if any, and the placeholder it holds, if any.
    static func release(owner: Int) {
        claims.withLock { $0.release(owner: owner) }
        if let placeholder = placeholders.withLock({ $0.removeValue(forKey: owner) }) { drop(placeholder) }
    }

    /// Whether the file at `path` is a placeholder a download of this process created (and so not a file that
    /// was there before: a destination `x.part` is its own placeholder until its final rename).
    static func isCreatedPlaceholder(_ path: String) -> Bool {
        placeholders.withLock { $0.values.contains { $0.created && $0.file.path == path } }
    }

    /// What only the file system knows: downloads of other processes, and interrupted downloads. Nothing to do
    /// (no call) unless `path` is a working name of another name `x`: then `x.part` is locked (created if
    /// absent) and held until ``release(owner:)``, and `path` may not replace a working file of an interrupted
    /// download of `x`.
    private static func holdWorkingNamesOwner(_ path: String, owner: Int) throws(HaulError) {
        if let previous = placeholders.withLock({ $0.removeValue(forKey: owner) }) { drop(previous) }
        guard let base = WorkingFileNames.owner(ofWorkingName: path) else { return }
        let partial = WorkingFileNames.partial(of: base.destination)
        let held: Placeholder?
        do {
            let opened = try OutputFile.openForDownload(partial)
            held = Placeholder(file: opened.file, created: opened.created)
        } catch where error.call == "flock" && error.errno == EWOULDBLOCK {
            // A download of `x`, or of another working name of `x`, in this process or another.
            throw .destinationBusy(path: base.destination, holder: OutputFile.lockHolder(of: partial))
        } catch {
            // Not even openable (no such directory yet, a symbolic link there): nothing can be downloading
            // there now, and there is nothing to hold.
            held = nil
        }
        if let held { placeholders.withLock { $0[owner] = held } }
        // `path` replacing a working file of `x` while `x` waits to be resumed (its journal is there) would
        // corrupt that download. Asked while `x.part` is held, so no download of `x` starts meanwhile; a
        // placeholder this claim just created at `path` itself was not there before.
        let createdHere = held?.created == true && path == partial
        if !createdHere, OutputFile.exists(path), OutputFile.exists(WorkingFileNames.journal(of: base.destination)) {
            throw .invalidDestination("\(path) is a working file of the interrupted download of \(base.destination); replacing it would corrupt that download")
        }
    }

    /// Closes a placeholder (dropping its lock), removing it first if this claim created it and it is still
    /// that empty file: a download whose final name is the placeholder's has replaced it by then.
    private static func drop(_ placeholder: Placeholder) {
        guard placeholder.created else { return }
        let path = placeholder.file.path
        guard let held = try? placeholder.file.fileDescriptor.status(), held.size == 0,
              let there = try? FilePath(path).stat(followTargetSymlink: false),
              there.inode.rawValue == held.inode.rawValue, there.deviceID.rawValue == held.deviceID.rawValue
        else { return }
        try? OutputFile.remove(path)
    }

    /// The name `path` is claimed under: its directory resolved (`realpath`: `./a`, `a` and `dir/../a` are
    /// one name, as are two routes through a symbolic link), its last component as given. A directory that
    /// does not exist yet is made absolute and normalized by its text alone.
    static func key(of path: String) -> String {
        // Split at the last `/` byte, as ``OutputFile/directory(containing:)`` does (and the kernel). The
        // directory stays a slice of `path` unless it has to be resolved: the common case (the last directory
        // again) makes one string, the key, in one allocation.
        let bytes = path.utf8
        let slash = path.lastSlashByteIndex
        let name = slash.map { Substring(bytes[bytes.index(after: $0)...]) } ?? Substring(path)
        let directory: Substring
        if let slash {
            directory = slash == bytes.startIndex ? "/" : Substring(bytes[..<slash])
        } else {
            directory = "."
        }
        let resolved = resolvedDirectory(directory)
        let separator = resolved.utf8.last != UInt8(ascii: "/")
        let count = resolved.utf8.count + (separator ? 1 : 0) + name.utf8.count
        return String(unsafeUninitializedCapacity: count) { buffer in
            var end = copy(resolved.utf8, into: buffer, at: 0)
            if separator {
                buffer[end] = UInt8(ascii: "/")
                end += 1
            }
            return copy(name.utf8, into: buffer, at: end)
        }
    }

    /// Copies `bytes` into `buffer` from `start`; returns the index after them.
    private static func copy(_ bytes: some Collection<UInt8>, into buffer: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        if let end = bytes.withContiguousStorageIfAvailable({ contiguous in
            _ = UnsafeMutableBufferPointer(rebasing: buffer[start...]).initialize(from: contiguous)
            return start + contiguous.count
        }) { return end }
        var end = start
        for byte in bytes {
            buffer[end] = byte
            end += 1
        }
        return end
    }

    /// The last directory resolved, and when: a list of thousands of downloads into one directory would
    /// otherwise resolve it once per download.
    private static let recent = Mutex<(directory: String, resolved: String, at: MonotonicInstant)?>(nil)

    private static func resolvedDirectory(_ given: Substring) -> String {
        let now = MonotonicInstant.now()
        // Compared under the lock, where it is: only the resolved name is copied out.
        if let resolved = recent.withLock({ recent -> String? in
            guard let cached = recent, cached.directory == given, now < cached.at.advanced(by: .seconds(1)) else { return nil }
            return cached.resolved
        }) {
            return resolved
        }
        let directory = String(given)
        guard let real = realpath(directory, nil) else { return lexicallyNormalized(directory) }
        defer { free(real) }
        let resolved = String(cString: real)
        recent.withLock { $0 = (directory, resolved, now) }
        return resolved
    }

    /// `path` made absolute (against the working directory) with `.`, `..` and repeated `/` taken out by
    /// their text, for a directory `realpath` cannot resolve because it is not there yet.
    static func lexicallyNormalized(_ path: String, workingDirectory: String? = nil) -> String {
        var full = path
        if !path.hasPrefix("/") {
            let cwd = workingDirectory ?? currentDirectory()
            full = cwd + "/" + path
        }
        var parts: [Substring] = []
        for part in full.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    private static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "" }
        defer { free(cwd) }
        return String(cString: cwd)
    }
}
