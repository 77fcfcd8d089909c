import Glibc
import Synchronization

/// Recent free-space figures per directory, so that thousands of small files written into one directory do
/// not cost a `statvfs` each (``OutputFile/availableSpace(in:forWriting:)`` keeps one set for the process).
///
/// A figure answers for a file of at most ``smallFileLimit`` bytes, for one second after it was measured, and
/// only while what remains of it after that file is at least ``spaceMargin``: below that (a disk that is
/// really getting full) every call measures again, so a refusal for lack of space is as exact as a fresh
/// `statvfs`. Each answer hands its file's length out of the figure. Pure: the caller measures and passes
/// the time.
package struct FreeSpaceFigures: Sendable {
    /// The largest file a recent figure may answer for.
    package static let smallFileLimit: Int64 = 1 << 20
    /// What must be left of a recent figure, after the file asking, for the figure to answer.
    package static let spaceMargin: Int64 = 1 << 30
    /// Directories remembered at most: forgetting them all costs one `statvfs` each, and bounds memory for a
    /// run over many directories.
    package static let directoryLimit = 64

    private struct Figure {
        /// The measured free space less the lengths handed out since.
        var remaining: Int64
        var measured: MonotonicInstant
    }

    private var figures: [String: Figure] = [:]

    package init() {}

    /// The free space in `directory` for a file of `length` bytes at `now` from a recent figure, which
    /// hands the length out; nil when it must be measured (then ``record(_:in:forWriting:at:)`` the result).
    package mutating func recent(in directory: String, forWriting length: Int64, at now: MonotonicInstant) -> Int64? {
        guard length >= 0, length <= Self.smallFileLimit, var figure = figures[directory],
              now < figure.measured.advanced(by: .seconds(1)), figure.remaining - length >= Self.spaceMargin
        else { return nil }
        let remaining = figure.remaining
        figure.remaining -= length
        figures[directory] = figure
        return remaining
    }

    /// Keeps `available`, measured in `directory` at `now` for a file of `length` bytes, less that length.
    package mutating func record(_ available: Int64, in directory: String, forWriting length: Int64, at now: MonotonicInstant) {
        if figures.count >= Self.directoryLimit { figures.removeAll(keepingCapacity: true) }
        figures[directory] = Figure(remaining: available - max(0, length), measured: now)
    }
}

extension FreeSpaceFigures {
    /// The bytes an unprivileged writer may still use, from `statvfs`'s figures; nil when the filesystem
    /// reports no size at all (`f_blocks` 0: ramfs, and some FUSE and network filesystems), whose free space
    /// is unknown rather than none — a download there is not refused up front, and a full disk still fails its
    /// writes (`ENOSPC`, naming the file). Clamped, so that no figure overflows.
    package static func available(totalBlocks: UInt64, availableBlocks: UInt64, fragmentSize: UInt64) -> Int64? {
        guard totalBlocks > 0 else { return nil }
        let (bytes, overflow) = availableBlocks.multipliedReportingOverflow(by: fragmentSize)
        return overflow ? Int64.max : Int64(clamping: bytes)
    }
}

extension OutputFile {
    /// Bytes an unprivileged writer may still use on the filesystem holding `directory`; nil when the
    /// filesystem does not say (``FreeSpaceFigures/available(totalBlocks:availableBlocks:fragmentSize:)``).
    public static func availableSpace(in directory: String) throws(SystemError) -> Int64? {
        var info = statvfs()
        _ = try blockingSyscall("statvfs") { statvfs(directory, &info) }
        return FreeSpaceFigures.available(totalBlocks: UInt64(info.f_blocks), availableBlocks: UInt64(info.f_bavail),
                                          fragmentSize: UInt64(info.f_frsize))
    }

    /// Free space for a file of `length` bytes in `directory`: ``availableSpace(in:)``, or, for a small
    /// file, a figure measured under a second ago for the same directory less what was handed out since
    /// (``FreeSpaceFigures`` says when); nil when the filesystem does not say.
    public static func availableSpace(in directory: String, forWriting length: Int64) throws(SystemError) -> Int64? {
        let now = MonotonicInstant.now()
        if let recent = spaceFigures.withLock({ $0.recent(in: directory, forWriting: length, at: now) }) { return recent }
        guard let available = try availableSpace(in: directory) else { return nil }
        spaceFigures.withLock { $0.record(available, in: directory, forWriting: length, at: now) }
        return available
    }

    private static let spaceFigures = Mutex(FreeSpaceFigures())
}
