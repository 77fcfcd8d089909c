import Haul
import HaulIO
import SystemPackage

// HaulSessions' files and sockets use HaulIO's file layer (HaulIO/System/FileCalls.swift): swift-system's
// `FileDescriptor`, owned by an `OwnedFileDescriptor` or a `closeAfter`, errors as `SystemError`. What is
// only the sessions' own is here.

extension FileDescriptor {
    /// Opens `path` as ``FileDescriptor/opening(_:_:options:permissions:)`` does, with `O_NOFOLLOW` added: a
    /// symbolic link planted at a session's path is refused rather than followed.
    static func openingSessionFile(_ path: String, _ mode: AccessMode, options: OpenOptions = [],
                                   permissions: FilePermissions? = nil) throws(SystemError) -> OwnedFileDescriptor {
        try opening(FilePath(path), mode, options: options.union(.noFollow), permissions: permissions)
    }

    /// Writes all of `bytes` at `offset`.
    func writeAll(_ bytes: [UInt8], at offset: Int) throws(SystemError) {
        let outcome = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try writeAll(raw, at: Int64(offset)) } }
        try outcome.get()
    }
}

extension SessionError {
    /// The result of `body`, whose failure becomes ``SessionError/io(path:_:)`` at `path`.
    static func at<Value: ~Copyable>(_ path: String, _ body: () throws(SystemError) -> Value) throws(SessionError) -> Value {
        do { return try body() } catch { throw .io(path: path, error) }
    }
}
