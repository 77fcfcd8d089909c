import Glibc

/// A failed system call: the call's name and the `errno` it left behind.
///
/// The description reads like `connect: Connection refused (errno 111)`, so it can be shown to a user as is.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The name of the failed call, e.g. `"connect"`.
    public let call: String
    /// The `errno` value the call reported.
    public let errno: Int32

    /// Creates an error for `call` failing with `errno`.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The human-readable text for `errno` (from the thread-safe `strerror_r`), e.g. `Connection refused`.
    ///
    /// One exception: `ELOOP` from `open`, which HaulIO's files report when `O_NOFOLLOW` met a symbolic
    /// link at the path, reads ``symbolicLinkRefused`` rather than the cryptic "Too many levels of
    /// symbolic links".
    public var reason: String {
        if errno == ELOOP && (call == "open" || call == "openat") { return SystemError.symbolicLinkRefused }
        return SystemError.describe(errno: errno)
    }

    /// The reason given for `ELOOP` from `open`: the path ends in a symbolic link, which is not followed
    /// (or resolving it met too many of them).
    public static let symbolicLinkRefused =
        "refusing to follow the symbolic link at this path (ELOOP: Too many levels of symbolic links)"

    /// `call: reason (errno N)`, e.g. `connect: Connection refused (errno 111)`.
    public var description: String { "\(call): \(reason) (errno \(errno))" }

    /// The `strerror_r` text for an errno value, without the call name.
    public static func describe(errno code: Int32) -> String {
        // strerror_r (the XSI variant Swift sees) rather than strerror, which is not thread-safe.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard strerror_r(code, buffer.baseAddress!, buffer.count) == 0 else { return "Unknown error \(code)" }
            return String(cString: buffer.baseAddress!)
        }
    }
}
