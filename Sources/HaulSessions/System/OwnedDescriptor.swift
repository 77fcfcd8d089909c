import Glibc
import Haul
import SystemPackage

/// A descriptor with exactly one owner: closed when the owner ends, on every path (a thrown error, an
/// early return), unless ``release()`` hands it to a new owner first. Non-copyable, so that no second copy
/// can close it again or keep using it after it was closed.
struct OwnedDescriptor: ~Copyable, Sendable {
    let descriptor: FileDescriptor

    init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    deinit {
        // Linux releases the descriptor even when `close` fails or is interrupted: nothing to retry.
        try? descriptor.close()
    }

    /// Gives up ownership without closing: the caller now owns the descriptor.
    consuming func release() -> FileDescriptor {
        let descriptor = self.descriptor
        discard self
        return descriptor
    }
}

/// Runs a swift-system call, reporting its `Errno` as the ``SystemError`` (named `call`) the rest of Haul
/// uses. swift-system's calls retry `EINTR` themselves and throw nothing but `Errno`.
func systemCall<Value>(_ call: String, _ body: () throws -> Value) throws(SystemError) -> Value {
    do {
        return try body()
    } catch let error as Errno {
        throw SystemError(call: call, errno: error.rawValue)
    } catch {
        throw SystemError(call: call, errno: EIO)
    }
}

extension FileDescriptor {
    /// Opens `path` with `O_CLOEXEC | O_NOFOLLOW` added to `options`: no child inherits a session's files,
    /// and a symbolic link planted at the path is refused rather than followed.
    static func openOwned(_ path: String, _ mode: AccessMode, options: OpenOptions = [],
                          permissions: FilePermissions? = nil) throws(SystemError) -> OwnedDescriptor {
        let descriptor = try systemCall("open") {
            try FileDescriptor.open(FilePath(path), mode, options: options.union([.closeOnExec, .noFollow]), permissions: permissions)
        }
        return OwnedDescriptor(descriptor)
    }

    /// Writes all of `bytes` at `offset` (`pwrite` until done).
    func writeAll(_ bytes: [UInt8], at offset: Int) throws(SystemError) {
        _ = try systemCall("pwrite") { try writeAll(toAbsoluteOffset: Int64(offset), bytes) }
    }

    /// `fdatasync`, which swift-system lacks.
    func synchronizeData() throws(SystemError) {
        _ = try blockingSyscall("fdatasync") { fdatasync(rawValue) }
    }
}

extension SessionError {
    /// The result of `body`, whose failure becomes ``SessionError/io(path:_:)`` at `path`.
    static func at<Value: ~Copyable>(_ path: String, _ body: () throws(SystemError) -> Value) throws(SessionError) -> Value {
        do { return try body() } catch { throw .io(path: path, error) }
    }
}

extension EventLoop {
    /// Watches `socket` (see ``EventLoop/register(_:interest:handler:)``); the caller keeps owning it.
    func register(_ socket: FileDescriptor, interest: IOEvents, handler: @escaping (IOEvents) -> Void) throws(SystemError) -> FileDescriptorRegistration {
        try register(socket.rawValue, interest: interest, handler: handler)
    }
}
