import SystemPackage

/// Who holds a `flock` lock on a file, read from the text of `/proc/locks`: pure parsing and matching, so that
/// the rules are testable without a second process.
///
/// A line reads `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`: the holder's pid, then the file as
/// `MAJOR:MINOR:INODE` of its filesystem (hex, hex, decimal). A waiter's line has `->` after the number and is
/// not a holder.
package enum ProcLocks {
    /// The pid holding a `flock` lock on the file with `inode` on `device` (its `st_dev`), as `table` lists
    /// it; nil when none is listed.
    ///
    /// Some filesystems (btrfs subvolumes, overlayfs) report a different device to `stat` than the one
    /// `/proc/locks` lists; then a lock on the same inode number is taken if it is the only `flock` lock with
    /// that number.
    package static func holder(in table: String, device: UInt64, inode: UInt64) -> Int32? {
        let (major, minor) = majorAndMinor(of: device)
        var sameInode: [Int32] = []
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK" else { continue }
            guard let pid = Int32(fields[4]), pid > 0 else { continue }
            let location = fields[5].split(separator: ":")
            guard location.count == 3, let lockMajor = UInt64(location[0], radix: 16),
                  let lockMinor = UInt64(location[1], radix: 16), let lockInode = UInt64(location[2]),
                  lockInode == inode
            else { continue }
            if lockMajor == major && lockMinor == minor { return pid }
            sameInode.append(pid)
        }
        return sameInode.count == 1 ? sameInode[0] : nil
    }

    /// glibc's `major()` and `minor()` (sys/sysmacros.h), which Swift does not import.
    package static func majorAndMinor(of device: UInt64) -> (major: UInt64, minor: UInt64) {
        let major = ((device & 0x0000_0000_000F_FF00) >> 8) | ((device & 0xFFFF_F000_0000_0000) >> 32)
        let minor = (device & 0x0000_0000_0000_00FF) | ((device & 0x0000_0FFF_FFF0_0000) >> 12)
        return (major, minor)
    }
}

extension OutputFile {
    /// The pid of the process holding a `flock` lock on the file at `path`, read from `/proc/locks`; nil if
    /// no such lock is listed, `/proc` is not mounted, or the holder is outside this pid namespace.
    ///
    /// The file is matched by the device and inode of `stat(path)` (``ProcLocks/holder(in:device:inode:)``
    /// says how). The answer is for messages ("held by pid N"); it can be stale as soon as it is returned.
    public static func lockHolder(of path: String) -> Int32? {
        guard let info = FilePath(path).existingStatus() else { return nil }
        guard let table = readSmallFile("/proc/locks") else { return nil }
        return ProcLocks.holder(in: table, device: UInt64(info.deviceID.rawValue), inode: UInt64(info.inode.rawValue))
    }
}
