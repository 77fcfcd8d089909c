import Glibc

/// A fixture could not be set up or behaved unexpectedly; the message says what to do about it.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, written for the person reading a failed test run.
    public let message: String

    /// Creates an error with a human-readable message.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }

    /// `call failed: <errno text>` for the current `errno`, e.g. `socket failed: Too many open files`.
    public static func system(_ call: String, errno code: Int32 = errno) -> TestSupportError {
        TestSupportError("\(call) failed: \(describe(errno: code))")
    }

    /// The text for an errno value, from strerror_r (the XSI variant Swift sees): strerror is not thread-safe,
    /// and the fixtures run on many threads.
    public static func describe(errno code: Int32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            guard strerror_r(code, buffer.baseAddress!, buffer.count) == 0 else { return "Unknown error \(code)" }
            return String(cString: buffer.baseAddress!)
        }
    }
}
