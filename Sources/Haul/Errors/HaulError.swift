import HaulIO
import HaulJournal

/// Why a download failed: one case per class of failure, each carrying what a person needs to act on it
/// (which host, which status, which path, which errno or TLS reason).
public enum HaulError: Error, Sendable, CustomStringConvertible {
    /// The URL (or a redirect's Location) is not a usable http/https URL.
    case invalidURL(URLParseError)
    /// A request header given by the caller is invalid (e.g. contains CR/LF).
    case invalidRequest(RequestHeadError)
    /// Name resolution, connect, reset, or a stall (no bytes for the stall timeout).
    case network(ConnectionError)
    /// The TLS handshake or the TLS stream failed (certificate, hostname, protocol).
    case tls(ConnectionError)
    /// TLS could not be set up locally (for example an unreadable CA file).
    case tlsSetup(TLSSetupError)
    /// The server's response broke HTTP/1.1.
    case malformedResponse(HTTPParseError, server: String)
    /// A TLS body delimited only by the connection close ended without close_notify.
    case truncatedTLS(server: String, bytesReceived: Int64)
    /// The server answered with a status that is not a success.
    case httpStatus(status: Int, reason: String, url: String)
    /// Following redirects failed.
    case redirect(RedirectError)
    /// The download took longer than the total time allowed.
    case timedOut(after: Duration, url: String, bytesReceived: Int64)
    /// The body ended before the length the server announced.
    case incomplete(url: String, expected: Int64, received: Int64)
    /// Reading or writing a local file failed.
    case disk(path: String, SystemError)
    /// The request's destination cannot be used as asked (a checksum for a stream, say).
    case invalidDestination(String)
    /// The destination exists and replacing it was not allowed.
    case destinationExists(path: String)
    /// The resource changed on the server (validator, length, or a full response to a ranged request).
    case changedOnServer(url: String, detail: String)
    /// A 206 response whose Content-Range is not the range that was asked for.
    case wrongContentRange(url: String, requested: String, received: String)
    /// A response broke its own promises — a body longer or shorter than its range, a length that does not
    /// match its `Content-Range` — while the resource itself looks unchanged; the range is fetched again.
    case faultyResponse(url: String, detail: String)
    /// A connection stayed below the low-speed limit (``DownloadOptions/lowSpeedLimit``).
    case belowSpeedLimit(url: String, limit: LowSpeedLimit)
    /// The stream a download was delivered to (``DownloadRequest/Destination/stream(_:)``) was closed by its
    /// reader (a broken pipe).
    case outputClosed
    /// Another download (in this process or another) is writing the same destination.
    case destinationBusy(path: String, holder: Int32?)
    /// Mirrors disagree about the resource (length).
    case mirrorMismatch(url: String, detail: String)
    /// The finished file's digest differs from the expected one; the file stays `.part`.
    case checksumMismatch(path: String, expected: Checksum, actual: String)
    /// The destination's filesystem has too little space for the file.
    case insufficientSpace(path: String, needed: Int64, available: Int64)
    /// The resume journal of an interrupted download cannot be used.
    case journal(JournalError)
    /// A partial download exists at the destination but belongs to something else.
    case partialDownloadMismatch(path: String, detail: String)
    /// The download was cancelled (``DownloadTask/cancel()`` or Swift task cancellation).
    case cancelled
    /// A pause could not record its progress in the resume journal; running again re-fetches what the
    /// last good checkpoint does not list.
    case checkpointFailed(JournalError)
    /// A failure Haul has no better name for (a bug if it is ever seen).
    case unexpected(String)

    public var description: String {
        switch self {
        case .invalidURL(let error): "invalid URL: \(error)"
        case .invalidRequest(let error): "invalid request: \(error)"
        case .network(let error): error.description
        case .tls(let error): error.description
        case .tlsSetup(let error): error.description
        case .malformedResponse(let error, let server): "malformed response from \(server): \(error)"
        case .truncatedTLS(let server, let bytes):
            "TLS connection to \(server) closed without close_notify after \(bytes) bytes; the body may be truncated"
        case .httpStatus(let status, let reason, let url): "HTTP \(status)\(reason.isEmpty ? "" : " \(reason)") from \(url)"
        case .redirect(let error): error.description
        case .timedOut(let after, let url, let bytes): "download of \(url) timed out after \(after) (\(bytes) bytes received)"
        case .incomplete(let url, let expected, let received): "download of \(url) ended after \(received) of \(expected) bytes"
        case .disk(let path, let error): "\(path): \(error)"
        case .destinationExists(let path): "\(path) already exists (DownloadRequest.replacesExisting replaces it)"
        case .unexpected(let what): "unexpected failure: \(what)"
        case .cancelled: "cancelled"
        case .checkpointFailed(let error): "cannot record progress in the resume journal: \(error)"
        case .journal(let error): "cannot resume: \(error) (pass --restart to discard the partial download)"
        case .partialDownloadMismatch(let path, let detail): "\(path): \(detail) (pass --restart to discard it)"
        case .changedOnServer(let url, let detail): "\(url) changed on the server: \(detail)"
        case .wrongContentRange(let url, let requested, let received):
            "\(url) answered a request for bytes \(requested) with Content-Range \"\(received)\""
        case .mirrorMismatch(let url, let detail): "mirror \(url) disagrees: \(detail)"
        case .faultyResponse(let url, let detail): "faulty response from \(url): \(detail)"
        case .belowSpeedLimit(let url, let limit):
            "transfer from \(url) stayed below \(limit.bytesPerSecond) bytes/s for \(limit.seconds) s"
        case .outputClosed: "the output was closed by its reader"
        case .invalidDestination(let reason): "invalid destination: \(reason)"
        case .destinationBusy(let path, let holder):
            "\(path) is being written by another download\(holder.map { " (process \($0))" } ?? ""); not touching it"
        case .checksumMismatch(let path, let expected, let actual):
            "\(path): \(expected.algorithm.rawValue) is \(actual), expected \(expected.hex)"
        case .insufficientSpace(let path, let needed, let available):
            "not enough space for \(path): need \(needed) bytes, \(available) available"
        }
    }

    /// Whether trying again (on a new connection, after a pause) may succeed.
    public var isTransient: Bool {
        switch self {
        // A proxy that refuses our credentials will refuse them again; a proxy that is down may come back.
        case .network(let error) where error.kind == .proxyFailed: error.proxyFailure?.isTransient ?? true
        case .network, .truncatedTLS, .incomplete, .timedOut, .faultyResponse, .wrongContentRange, .belowSpeedLimit: true
        // One broken response says little about the next: like a faulty range it is tried again, and only a
        // server that keeps breaking HTTP fails the download (after the retry policy's tries).
        case .malformedResponse: true
        case .httpStatus(let status, _, _): status == 408 || status == 429 || status >= 500
        default: false
        }
    }

    /// Maps a failure of the HTTP layer into the engine's vocabulary.
    init(_ error: HTTPClientError) {
        switch error {
        case .connection(let error):
            switch error.kind {
            case .tlsHandshakeFailed, .tlsHandshakeTimedOut, .tlsFailure: self = .tls(error)
            default: self = .network(error)
            }
        case .malformedResponse(let error, let origin): self = .malformedResponse(error, server: origin.hostAndPort)
        case .truncatedTLSBody(let origin, let bytes): self = .truncatedTLS(server: origin.hostAndPort, bytesReceived: bytes)
        case .invalidRequest(let error): self = .invalidRequest(error)
        case .tlsSetup(let error): self = .tlsSetup(error)
        case .handlerFailed(let error):
            self = (error as? HaulError) ?? .unexpected(String(describing: error))
        }
    }
}
