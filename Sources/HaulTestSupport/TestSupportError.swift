/// A fixture could not be set up or behaved unexpectedly; the message says what to do about it.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, written for the person reading a failed test run.
    public let message: String

    /// Creates an error with a human-readable message.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
