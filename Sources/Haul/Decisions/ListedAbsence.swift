/// Whether a download takes its caller's listing of the destination's directory
/// (``DownloadRequest/listedAbsentPath``) instead of looking for `NAME` and `NAME.part` itself. Pure.
///
/// Those two lookups decide between a fresh download and an earlier run's file (refused, or resumed from its
/// `.part`). A caller that listed the directory before its first download knows the answer already for a
/// name that was not there (the CLI's `-i`: `DirectorySnapshot`), and a list of thousands of small files then
/// makes two `stat`s fewer per file — each of which takes the directory's lock that the downloads' `linkat`s
/// into that directory contend on.
///
/// Safety does not rest on the listing. It is taken only where ``WorkingFileChoice`` would choose a file
/// without a name once no `NAME.part` is found, and such a file gets its name by `linkat`, which never
/// replaces: a destination that appeared after the listing (another program, another `haul`) fails the
/// download as ``HaulError/Reason/destinationExists(path:)`` with its bytes kept as `NAME.part`
/// (``FinalNaming``); a `NAME.part` that appeared is another download's and is left alone (this one never
/// opens it). A named `.part` is renamed with `renameat2(RENAME_NOREPLACE)`, which a filesystem without the
/// flag turns into a `rename` that replaces: there the lookup is the guard, and the listing is not taken.
enum ListedAbsence {
    /// Whether the download of `request` may skip its lookups of `destination` and `destination.part`:
    ///
    /// - the caller listed exactly `destination` absent (a directory download the server named otherwise,
    ///   by `Content-Disposition` or a redirect, looks as before; so does a request without a listing, whose
    ///   directory may have been too large to list);
    /// - the file is on disk (not memory, not a stream);
    /// - nothing there may be replaced or asked about (`--allow-overwrite`, `-N`, `-z`): those keep the named
    ///   path's rules.
    ///
    /// `--restart` does not matter: no `.part` was listed, so there is nothing to discard or continue.
    /// `destination` is nil while a directory download has no name yet.
    static func skipsLookups(_ request: DownloadRequest, destination: String?) -> Bool {
        guard let listed = request.listedAbsentPath, let destination, listed == destination else { return false }
        switch request.destination {
        case .file, .directory: break
        case .stream, .memory: return false
        }
        return !request.replacesExisting && !request.onlyIfChanged && request.modifiedSince == nil
    }
}
