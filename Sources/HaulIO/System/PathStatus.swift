import SystemPackage

/// What `lstat` says of a path, as far as sessions recognise files: a regular file or not, its device and
/// inode (the identity a session records for a task's `.part`), its size. Through swift-system's `Stat`.
package struct PathStatus: Sendable, Equatable {
    package var isRegularFile: Bool
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64

    package init(isRegularFile: Bool, device: UInt64, inode: UInt64, size: Int64) {
        self.isRegularFile = isRegularFile
        self.device = device
        self.inode = inode
        self.size = size
    }

    /// `lstat` of `path` (a symbolic link at its end is described, not followed); nil when nothing is there or
    /// it cannot be reached: every caller treats those alike (no file to recognise).
    package static func of(_ path: String) -> PathStatus? {
        guard let info = try? FilePath(path).stat(followTargetSymlink: false) else { return nil }
        return PathStatus(isRegularFile: info.type == .regular, device: UInt64(info.deviceID.rawValue),
                          inode: UInt64(info.inode.rawValue), size: info.size)
    }
}
