import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// Reads a destination directory's names once, before a run's downloads start (``DirectorySnapshot``).
enum DirectoryListing {
    /// The snapshot of `directory`: empty when it does not exist (nothing can be there yet); nil when it
    /// cannot be read or holds more than `limit` entries (each file is then looked for on its own, as before).
    static func snapshot(of directory: String, limit: Int) -> DirectorySnapshot? {
        guard let stream = opendir(directory) else {
            return errno == ENOENT ? DirectorySnapshot(directory: directory, names: []) : nil
        }
        defer { closedir(stream) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                // nil with errno set: the listing broke off, and an unlisted name proves nothing.
                return errno == 0 ? DirectorySnapshot(directory: directory, names: names) : nil
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            guard names.count < limit else { return nil }
            names.append(name)
        }
    }
}
