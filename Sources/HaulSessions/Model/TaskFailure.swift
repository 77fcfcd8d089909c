import Haul
import HaulHTTP
import HaulIO

/// Why a queued task failed: the engine's `HaulError`, as a direct download's `DownloadTask.value` would
/// have thrown it, and the class and exit code `haul` gives it.
///
/// The daemon records the error as a structured value in the session's log (`docs/sessions.md`, "Events"),
/// so a client in another process, or after any restart, matches it as it would a direct download's:
///
/// ```swift
/// do {
///     _ = try await task.value
/// } catch let error where error.httpStatus == 404 {
///     // gone from the server
/// } catch where error.failure?.error.reason == .outputClosed { ... }
/// ```
///
/// Reasons whose details are plain values (a status, a URL, a path, an errno, a connection's kind, host and
/// port) come back equal to the engine's. A few carry nested error values the log does not spell out — a
/// malformed response's parse error, a redirect's error, a resume journal's error — and come back as
/// `HaulError.Reason.unexpected` holding the recorded message, with ``failureClass`` and ``exitCode``
/// as recorded. So do failures recorded by a Haul older than this type, which kept only the message.
public struct TaskFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The engine's error: `HaulError.reason`, the URL and the tries.
    public var error: HaulError
    /// The class `haul` gives the failure (``FailureClass/http`` for a 404).
    public var failureClass: FailureClass
    /// The exit code `haul` gives the failure, as recorded (``FailureClass/code`` unless an older log says
    /// otherwise).
    public var exitCode: Int32
    /// The engine's one-line description of the failure, as the daemon recorded it.
    public var message: String
    /// The reason's name in the log (`httpStatus`, `network`, ...), kept so that a failure read back is
    /// written again the same way.
    let recordedReason: String

    /// The failure of a download that ended with `error`.
    public init(_ error: HaulError) {
        self.error = error
        failureClass = FailureClass(error)
        exitCode = failureClass.code
        message = error.description
        recordedReason = FailureCodec.name(of: error.reason)
    }

    init(error: HaulError, failureClass: FailureClass, exitCode: Int32, message: String, recordedReason: String) {
        self.error = error
        self.failureClass = failureClass
        self.exitCode = exitCode
        self.message = message
        self.recordedReason = recordedReason
    }

    /// A failure recorded before failures were structured: only the message, the class and the code.
    static func legacy(message: String, className: String, code: Int32) -> TaskFailure {
        TaskFailure(error: HaulError(.unexpected(message)), failureClass: FailureClass(rawValue: className) ?? .unexpected,
                    exitCode: code, message: message, recordedReason: "unexpected")
    }

    /// The HTTP status of a refused download (`HaulError.httpStatus`), else nil.
    public var httpStatus: Int? { error.httpStatus }

    /// ``message``.
    public var description: String { message }

    public static func == (lhs: TaskFailure, rhs: TaskFailure) -> Bool {
        lhs.error.reason == rhs.error.reason && lhs.error.url == rhs.error.url && lhs.error.attempts == rhs.error.attempts
            && lhs.failureClass == rhs.failureClass && lhs.exitCode == rhs.exitCode && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(message)
        hasher.combine(failureClass)
        hasher.combine(exitCode)
    }
}

/// The class of a download failure, and the exit code `haul` gives it: what a script tells apart without
/// reading messages ("try again later" from "the file is wrong"). `haul`'s `ExitStatus` classifies through
/// this type, so a queued task and a direct download of the same failure get the same code.
public enum FailureClass: String, Sendable, Hashable, CaseIterable {
    /// The request cannot be made as given: an invalid URL, header or destination. Exit code 2.
    case usage
    /// DNS, connect, reset, stall, time or speed limit, a body cut short, truncated TLS. Exit code 3.
    case network
    /// The TLS handshake, a certificate, or setting TLS up locally. Exit code 4.
    case tls
    /// An error status, or a redirect that could not be followed. Exit code 5.
    case http
    /// The server broke HTTP: malformed or faulty responses, a wrong `Content-Range`, mirrors that disagree.
    /// Exit code 6.
    case `protocol`
    /// The file changed on the server, or the partial download belongs to another file. Exit code 7.
    case changed
    /// The finished file's checksum is not the expected one. Exit code 8.
    case checksum
    /// Writing the output: disk errors, no space, an existing or busy destination, the journal. Exit code 9.
    case disk
    /// Larger than the download's `DownloadOptions/maximumFileSize` (curl's `--max-filesize`), or a download into
    /// memory over its limit. Exit code 63, as curl's.
    case tooLarge = "too-large"
    /// Cancelled. Exit code 130.
    case interrupted
    /// No better class (a bug in Haul if it is ever seen). Exit code 1.
    case unexpected

    /// The exit code `haul` gives a failure of this class.
    public var code: Int32 {
        switch self {
        case .unexpected: 1
        case .usage: 2
        case .network: 3
        case .tls: 4
        case .http: 5
        case .protocol: 6
        case .changed: 7
        case .checksum: 8
        case .disk: 9
        case .tooLarge: 63
        case .interrupted: 130
        }
    }

    /// The class of `error`.
    ///
    /// A `malformedResponse` that is only a connection closing early (`connectionClosedBeforeResponse`,
    /// `incompleteMessage`) is ``network``: nothing the server sent was wrong, and trying again may succeed.
    public init(_ error: HaulError) {
        switch error.reason {
        case .invalidURL, .invalidRequest, .invalidDestination: self = .usage
        case .network, .truncatedTLS, .timedOut, .incomplete, .belowSpeedLimit: self = .network
        case .tls, .tlsSetup: self = .tls
        case .httpStatus, .redirect, .retryAfterTooLong: self = .http
        case .malformedResponse(let parseError, _):
            switch parseError.kind {
            case .connectionClosedBeforeResponse, .incompleteMessage: self = .network
            default: self = .protocol
            }
        case .wrongContentRange, .mirrorMismatch, .sizeMismatch, .faultyResponse: self = .protocol
        case .changedOnServer, .partialDownloadMismatch: self = .changed
        case .checksumMismatch, .digestMismatch: self = .checksum
        case .responseTooLarge: self = .tooLarge
        case .disk, .insufficientSpace, .destinationExists, .destinationBusy, .journal, .checkpointFailed,
             .outputClosed, .workingFileReplaced:
            self = .disk
        case .cancelled, .clientShutDown: self = .interrupted
        case .unexpected: self = .unexpected
        }
    }
}
