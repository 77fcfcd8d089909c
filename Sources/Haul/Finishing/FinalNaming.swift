import Glibc
import HaulIO

/// How a finished file gets its final name: a file without a name (``WorkingFileChoice/unnamed``) is linked
/// to it (`linkat`: no `.part`, no rename, never replacing); a named `.part` is renamed, without replacing
/// (`renameat2(RENAME_NOREPLACE)`) when the destination was checked absent at the start and may not be
/// replaced (``SegmentedDownload/Finished/finalNameIsNew``), with a plain `rename` otherwise (a resume, an
/// allowed overwrite, a changed file replacing the one asked about).
///
/// A file that appeared at the destination meanwhile — another program, another `haul` that finished the same
/// name first — is never replaced then: the download fails as "destination exists" and its bytes stay, as
/// `NAME.part` (a file without a name is given that name first).
enum FinalNaming {
    /// Names `file` (whose `.part` is `partPath`) `destination`; see the type's description.
    static func name(_ file: OutputFile, partPath: String, destination: String, mustBeNew: Bool) throws(HaulError) {
        do throws(SystemError) {
            try name(file, partPath: partPath, destination: destination, mustBeNew: mustBeNew,
                     link: { file, name throws(SystemError) in try file.link(to: name) },
                     renameWithoutReplacing: { from, to throws(SystemError) in try OutputFile.renameWithoutReplacing(from, to: to) },
                     rename: { from, to throws(SystemError) in try OutputFile.rename(from, to: to) })
        } catch where error.errno == EEXIST {
            keepBytes(of: file)
            throw .destinationExists(path: destination)
        } catch {
            throw .disk(path: destination, error)
        }
    }

    /// The choice of call, with the calls given (``GroupCommit`` passes its replaceable ones).
    static func name(_ file: OutputFile, partPath: String, destination: String, mustBeNew: Bool,
                     link: (OutputFile, String) throws(SystemError) -> Void,
                     renameWithoutReplacing: (String, String) throws(SystemError) -> Void,
                     rename: (String, String) throws(SystemError) -> Void) throws(SystemError) {
        if file.isUnnamed {
            try link(file, destination)
        } else if mustBeNew {
            try renameWithoutReplacing(partPath, destination)
        } else {
            try rename(partPath, destination)
        }
    }

    /// After a refused name: a file without a name takes its `.part` name, so its bytes are not lost (a
    /// named `.part` is where it was). Best effort: a `.part` of another download there leaves it unnamed.
    static func keepBytes(of file: OutputFile) {
        try? file.materialize()
        file.unlock()
    }
}
