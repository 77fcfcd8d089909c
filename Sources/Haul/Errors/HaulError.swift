import Glibc
import HaulIO
import HaulJournal

/// Why a download failed, and which download: the ``reason`` (one case per class of failure, each carrying what
/// a person needs to act on it — which host, which status, which path, which errno or TLS reason), the ``url``
/// that was being fetched and how many ``attempts`` were made.
///
/// ``description`` is one line for anyone: an embedding program's log or a person at a shell. It names what
/// failed, the URL and host, and the tries; it gives no advice about any one program's options (the `haul`
/// command adds its own). Match on ``reason``:
///
/// ```swift
/// catch let error as HaulError {
///     if case .httpStatus(let status, _, _) = error.reason, status == 404 { ... }
/// }
/// ```
///
/// or on its shortcuts: ``httpStatus`` (`error.httpStatus == 404`), ``isCancelled`` and ``isTransient``.
/// ``Reason`` is `Equatable`, so a reason without details compares directly (`error.reason == .outputClosed`).
public struct HaulError: Error, Sendable, CustomStringConvertible {
    /// The class of failure, with its details.
    ///
    /// Two reasons are equal when they are the same case with equal details: every detail is a plain value
    /// (a status, a URL, a path, an errno, a connection's kind, host, port and detail text), so equality
    /// compares what a message would print, e.g. `error.reason == .outputClosed`.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
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
        /// The server answered `status` with a `Retry-After` asking for a longer wait than the retry policy
        /// honours (``RetryPolicy/maxRetryAfter``): the try fails at once and counts like any failed try.
        case retryAfterTooLong(url: String, status: Int, asked: Duration, limit: Duration)
        /// The stream a download was delivered to (``DownloadRequest/Destination/stream(_:)``) was closed by its
        /// reader (a broken pipe).
        case outputClosed
        /// Another download (in this process or another) is writing the same destination, or one whose name
        /// collides with it: one is a working file of the other (`x` and `x.part`). `holder` is the pid of the
        /// process that runs the other download, when known (this process's own pid for one of its own).
        case destinationBusy(path: String, holder: Int32?)
        /// Mirrors disagree about the resource (length).
        case mirrorMismatch(url: String, detail: String)
        /// The server at `url` serves a file of `served` bytes where ``DownloadRequest/expectedSize`` (a
        /// Metalink's `<size>`) says `expected`: refused before its body was written. Not retried there; a
        /// mirror that does it is dropped, and the download fails when no mirror is left.
        case sizeMismatch(url: String, expected: Int64, served: Int64)
        /// The finished file's digest differs from the expected one; the file stays `.part`.
        case checksumMismatch(path: String, expected: Checksum, actual: String)
        /// A piece of a download with ``DownloadRequest/pieceHashes`` failed its hash and cannot be fetched
        /// again, or the finished file does not match a server's `Repr-Digest`; the file stays `.part`.
        case digestMismatch(DigestMismatch)
        /// The destination's filesystem has too little space for the file.
        case insufficientSpace(path: String, needed: Int64, available: Int64)
        /// A download into memory (``DownloadRequest/Destination/memory(limit:)``) is larger than its limit, or
        /// a download is larger than ``DownloadOptions/maximumFileSize`` (`limit` is the smaller of the two).
        /// `length` is the length the server announced, refused before any body byte was kept; nil when it
        /// announced none (chunked or close-delimited) and the body ran past `limit`: it was stopped there, and
        /// its partial file removed.
        case responseTooLarge(url: String, limit: Int, length: Int64?)
        /// The resume journal of an interrupted download cannot be used.
        case journal(JournalError)
        /// A partial download exists at the destination but belongs to something else.
        case partialDownloadMismatch(path: String, detail: String)
        /// The download's `.part` at `path` was removed or replaced by another program while the download ran:
        /// the name no longer leads to the bytes it wrote, so nothing is renamed to `destination` (the file there
        /// now is another program's and is left alone) and the download's journal, which describes the lost
        /// file, is removed. `replaced` says whether another file took the name (else nothing is there).
        case workingFileReplaced(path: String, destination: String, replaced: Bool)
        /// The download was cancelled (``DownloadTask/cancel()`` or Swift task cancellation).
        case cancelled
        /// A pause could not record its progress in the resume journal; running again re-fetches what the
        /// last good checkpoint does not list.
        case checkpointFailed(JournalError)
        /// The ``HaulClient`` was shut down (``HaulClient/shutdown()``) before the download ended, or the
        /// download was started, paused, resumed or cancelled after that: its files stay where they stood, and
        /// starting the same request on a new client resumes from its journal. A single request
        /// (``HaulClient/download(_:range:logger:)``, ``HaulClient/responseHeads(_:logger:)``) ends the same way.
        case clientShutDown
        /// A failure Haul has no better name for (a bug if it is ever seen).
        case unexpected(String)

        /// What went wrong, without the URL or the tries (``HaulError/description`` adds them).
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
            case .destinationExists(let path): "\(path) already exists"
            case .unexpected(let what): "unexpected failure: \(what)"
            case .cancelled: "cancelled"
            case .checkpointFailed(let error): "cannot record progress in the resume journal: \(error)"
            case .journal(let error): "cannot resume: \(error)"
            case .partialDownloadMismatch(let path, let detail): "\(path): \(detail)"
            case .workingFileReplaced(let path, let destination, let replaced):
                "\(path) was \(replaced ? "replaced by another file" : "removed") during the download (by another program): "
                    + "nothing was saved as \(destination); run it again to start over"
            case .changedOnServer(let url, let detail): "\(url) changed on the server: \(detail)"
            case .wrongContentRange(let url, let requested, let received):
                "\(url) answered a request for bytes \(requested) with Content-Range \"\(received)\""
            case .mirrorMismatch(let url, let detail): "mirror \(url) disagrees: \(detail)"
            case .sizeMismatch(let url, let expected, let served):
                "\(url) serves \(served) bytes where \(expected) are expected (the size the download was given); not saved"
            case .faultyResponse(let url, let detail): "faulty response from \(url): \(detail)"
            case .belowSpeedLimit(let url, let limit):
                "transfer from \(url) stayed below \(limit.bytesPerSecond) bytes/s for \(limit.seconds) s"
            case .retryAfterTooLong(let url, let status, let asked, let limit):
                "\(url) answered HTTP \(status) asking to retry after \(Self.text(of: asked)), longer than the \(Self.text(of: limit)) allowed to wait"
            case .outputClosed: "the output was closed by its reader"
            case .clientShutDown: "the client was shut down before the download ended"
            case .invalidDestination(let reason): "invalid destination: \(reason)"
            case .destinationBusy(let path, let holder) where holder == getpid():
                // Two downloads of one run (or of one program's client): the pid would only be haul's own.
                "\(path) is being written by another download of this process; not touching it"
            case .destinationBusy(let path, let holder):
                "\(path) is being written by another download\(holder.map { " (process \($0))" } ?? ""); not touching it"
            case .checksumMismatch(let path, let expected, let actual):
                "\(path): \(expected.algorithm.rawValue) is \(actual), expected \(expected.hex)"
            case .digestMismatch(let mismatch): mismatch.description
            case .insufficientSpace(let path, let needed, let available):
                "not enough space for \(path): need \(needed) bytes, \(available) available"
            case .responseTooLarge(let url, let limit, let length?):
                "\(url) is \(length) bytes, more than the limit of \(limit) bytes"
            case .responseTooLarge(let url, let limit, nil):
                "\(url) sent more than the limit of \(limit) bytes (it announced no length)"
            }
        }

        /// `90 s`, or `1500 ms` for a duration that is not whole seconds: no overflow for the largest
        /// `Retry-After` a server can send.
        private static func text(of duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            if attoseconds == 0 || seconds >= 1_000_000 { return "\(seconds) s" }
            return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
        }

        /// Whether trying again (on a new connection, after a pause) may succeed.
        public var isTransient: Bool {
            switch self {
            // A proxy that refuses our credentials will refuse them again; a proxy that is down may come back.
            case .network(let error) where error.kind == .proxyFailed: error.proxyFailure?.isTransient ?? true
            case .network, .truncatedTLS, .incomplete, .timedOut, .faultyResponse, .wrongContentRange, .belowSpeedLimit: true
            // Its status (503, 429, ...) is retried; only the wait it asked for is not honoured.
            case .retryAfterTooLong: true
            // One broken response says little about the next: like a faulty range it is tried again, and only a
            // server that keeps breaking HTTP fails the download (after the retry policy's tries).
            case .malformedResponse: true
            case .httpStatus(let status, _, _): status == 408 || status == 429 || status >= 500
            default: false
            }
        }

        /// Whether the failure is about what a server or the network did (a message then names the URL),
        /// rather than about local things — files, paths, options — that the message names themselves.
        var concernsServer: Bool {
            switch self {
            case .invalidURL, .network, .tls, .malformedResponse, .truncatedTLS, .httpStatus, .redirect, .timedOut,
                 .incomplete, .changedOnServer, .wrongContentRange, .faultyResponse, .belowSpeedLimit, .retryAfterTooLong,
                 .mirrorMismatch, .sizeMismatch,
                 .responseTooLarge, .unexpected:
                true
            case .invalidRequest, .tlsSetup, .disk, .invalidDestination, .destinationExists, .outputClosed,
                 .destinationBusy, .checksumMismatch, .digestMismatch, .insufficientSpace, .journal, .partialDownloadMismatch,
                 .workingFileReplaced,
                 .cancelled, .checkpointFailed, .clientShutDown:
                false
            }
        }
    }

    /// What failed.
    public var reason: Reason
    /// The URL that was being fetched when the download failed: the request's URL, a mirror's, or the target
    /// of a redirect. nil for an error that ends no download: a ``HaulClient`` that cannot start, or a
    /// ``DownloadTask/pause()`` whose last checkpoint failed. Safe to print: user information is shown as
    /// `***`, so a credential given in the URL never reaches a message, a log or a session event.
    public var url: String?
    /// How many times the request that failed was tried, the failed try included: 1 when it was not retried.
    /// Retries follow the ``RetryPolicy`` (``DownloadOptions/retry``); only ``Reason/isTransient`` failures
    /// are retried.
    public var attempts: Int

    /// An error for `reason`, with what is known of its context.
    public init(_ reason: Reason, url: String? = nil, attempts: Int = 1) {
        self.reason = reason
        self.url = url
        self.attempts = attempts
    }

    /// The same error with the context of the download it ended: `url` and `attempts` where the error does
    /// not know them yet (the context closest to the failure wins; a later, wider one only fills gaps).
    public func adding(url: String?, attempts: Int? = nil) -> HaulError {
        var copy = self
        if copy.url == nil { copy.url = url }
        if let attempts, copy.attempts <= 1 { copy.attempts = max(1, attempts) }
        return copy
    }

    /// One line: what failed, the URL being fetched (unless the reason's own text names it, or the failure is
    /// a local one that names its path), and the tries when there was more than one. For example
    /// `https://example.com/a.iso: connect to example.com:443: Connection refused (after 5 tries)`.
    public var description: String {
        var text = reason.description
        if let url, reason.concernsServer, !text.contains(url) { text = "\(url): \(text)" }
        if attempts > 1 { text += " (after \(attempts) tries)" }
        return text
    }

    /// Whether trying again (on a new connection, after a pause) may succeed (``Reason/isTransient``).
    public var isTransient: Bool { reason.isTransient }

    /// Whether the download was cancelled (``Reason/cancelled``): by ``DownloadTask/cancel()`` or by
    /// cancelling the Swift task that awaited it. An app usually treats this as no failure at all.
    public var isCancelled: Bool {
        if case .cancelled = reason { return true }
        return false
    }

    /// The HTTP status of a download the server refused (``Reason/httpStatus(status:reason:url:)``), or of one
    /// whose `Retry-After` asked for too long a wait (``Reason/retryAfterTooLong(url:status:asked:limit:)``);
    /// nil for every other failure:
    ///
    /// ```swift
    /// catch let error as HaulError where error.httpStatus == 404 { ... }
    /// ```
    public var httpStatus: Int? {
        switch reason {
        case .httpStatus(let status, _, _), .retryAfterTooLong(_, let status, _, _): status
        default: nil
        }
    }

    /// Whether this is a ``Reason/disk(path:_:)`` failure because a directory on the path is missing or is
    /// not a directory (`ENOENT`, `ENOTDIR`): the one disk failure that creating the directory can cure.
    var isMissingDirectory: Bool {
        guard case .disk(_, let error) = reason else { return false }
        return error.errno == ENOENT || error.errno == ENOTDIR
    }

    /// ``Reason/invalidURL(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func invalidURL(_ error: URLParseError) -> HaulError {
        HaulError(Reason.invalidURL(error))
    }
    /// ``Reason/invalidRequest(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func invalidRequest(_ error: RequestHeadError) -> HaulError {
        HaulError(Reason.invalidRequest(error))
    }
    /// ``Reason/network(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func network(_ error: ConnectionError) -> HaulError {
        HaulError(Reason.network(error))
    }
    /// ``Reason/tls(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func tls(_ error: ConnectionError) -> HaulError {
        HaulError(Reason.tls(error))
    }
    /// ``Reason/tlsSetup(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func tlsSetup(_ error: TLSSetupError) -> HaulError {
        HaulError(Reason.tlsSetup(error))
    }
    /// ``Reason/malformedResponse(_:server:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func malformedResponse(_ error: HTTPParseError, server: String) -> HaulError {
        HaulError(Reason.malformedResponse(error, server: server))
    }
    /// ``Reason/truncatedTLS(server:bytesReceived:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func truncatedTLS(server: String, bytesReceived: Int64) -> HaulError {
        HaulError(Reason.truncatedTLS(server: server, bytesReceived: bytesReceived))
    }
    /// ``Reason/httpStatus(status:reason:url:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func httpStatus(status: Int, reason: String, url: String) -> HaulError {
        HaulError(Reason.httpStatus(status: status, reason: reason, url: url))
    }
    /// ``Reason/redirect(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func redirect(_ error: RedirectError) -> HaulError {
        HaulError(Reason.redirect(error))
    }
    /// ``Reason/timedOut(after:url:bytesReceived:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func timedOut(after: Duration, url: String, bytesReceived: Int64) -> HaulError {
        HaulError(Reason.timedOut(after: after, url: url, bytesReceived: bytesReceived))
    }
    /// ``Reason/incomplete(url:expected:received:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func incomplete(url: String, expected: Int64, received: Int64) -> HaulError {
        HaulError(Reason.incomplete(url: url, expected: expected, received: received))
    }
    /// ``Reason/disk(path:_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func disk(path: String, _ error: SystemError) -> HaulError {
        HaulError(Reason.disk(path: path, error))
    }
    /// ``Reason/invalidDestination(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func invalidDestination(_ detail: String) -> HaulError {
        HaulError(Reason.invalidDestination(detail))
    }
    /// ``Reason/destinationExists(path:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func destinationExists(path: String) -> HaulError {
        HaulError(Reason.destinationExists(path: path))
    }
    /// ``Reason/changedOnServer(url:detail:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func changedOnServer(url: String, detail: String) -> HaulError {
        HaulError(Reason.changedOnServer(url: url, detail: detail))
    }
    /// ``Reason/wrongContentRange(url:requested:received:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func wrongContentRange(url: String, requested: String, received: String) -> HaulError {
        HaulError(Reason.wrongContentRange(url: url, requested: requested, received: received))
    }
    /// ``Reason/faultyResponse(url:detail:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func faultyResponse(url: String, detail: String) -> HaulError {
        HaulError(Reason.faultyResponse(url: url, detail: detail))
    }
    /// ``Reason/belowSpeedLimit(url:limit:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func belowSpeedLimit(url: String, limit: LowSpeedLimit) -> HaulError {
        HaulError(Reason.belowSpeedLimit(url: url, limit: limit))
    }
    /// ``Reason/retryAfterTooLong(url:status:asked:limit:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func retryAfterTooLong(url: String, status: Int, asked: Duration, limit: Duration) -> HaulError {
        HaulError(Reason.retryAfterTooLong(url: url, status: status, asked: asked, limit: limit))
    }
    /// ``Reason/outputClosed`` without context: the engine adds the URL and the tries where the download ends.
    public static var outputClosed: HaulError { HaulError(Reason.outputClosed) }
    /// ``Reason/destinationBusy(path:holder:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func destinationBusy(path: String, holder: Int32?) -> HaulError {
        HaulError(Reason.destinationBusy(path: path, holder: holder))
    }
    /// ``Reason/mirrorMismatch(url:detail:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func mirrorMismatch(url: String, detail: String) -> HaulError {
        HaulError(Reason.mirrorMismatch(url: url, detail: detail))
    }
    /// ``Reason/sizeMismatch(url:expected:served:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func sizeMismatch(url: String, expected: Int64, served: Int64) -> HaulError {
        HaulError(Reason.sizeMismatch(url: url, expected: expected, served: served))
    }
    /// ``Reason/checksumMismatch(path:expected:actual:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func checksumMismatch(path: String, expected: Checksum, actual: String) -> HaulError {
        HaulError(Reason.checksumMismatch(path: path, expected: expected, actual: actual))
    }
    /// ``Reason/digestMismatch(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func digestMismatch(_ mismatch: DigestMismatch) -> HaulError {
        HaulError(Reason.digestMismatch(mismatch))
    }
    /// ``Reason/insufficientSpace(path:needed:available:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func insufficientSpace(path: String, needed: Int64, available: Int64) -> HaulError {
        HaulError(Reason.insufficientSpace(path: path, needed: needed, available: available))
    }
    /// ``Reason/responseTooLarge(url:limit:length:)`` without context: the engine adds the tries where the download ends.
    public static func responseTooLarge(url: String, limit: Int, length: Int64?) -> HaulError {
        HaulError(Reason.responseTooLarge(url: url, limit: limit, length: length))
    }
    /// ``Reason/journal(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func journal(_ error: JournalError) -> HaulError {
        HaulError(Reason.journal(error))
    }
    /// ``Reason/partialDownloadMismatch(path:detail:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func partialDownloadMismatch(path: String, detail: String) -> HaulError {
        HaulError(Reason.partialDownloadMismatch(path: path, detail: detail))
    }
    /// ``Reason/workingFileReplaced(path:destination:replaced:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func workingFileReplaced(path: String, destination: String, replaced: Bool) -> HaulError {
        HaulError(Reason.workingFileReplaced(path: path, destination: destination, replaced: replaced))
    }
    /// ``Reason/cancelled`` without context: the engine adds the URL and the tries where the download ends.
    public static var cancelled: HaulError { HaulError(Reason.cancelled) }
    /// ``Reason/checkpointFailed(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func checkpointFailed(_ error: JournalError) -> HaulError {
        HaulError(Reason.checkpointFailed(error))
    }
    /// ``Reason/unexpected(_:)`` without context: the engine adds the URL and the tries where the download ends.
    public static func unexpected(_ what: String) -> HaulError {
        HaulError(Reason.unexpected(what))
    }

    /// Maps a failure of the HTTP layer into the engine's vocabulary. Labelled: `HaulError(.tlsSetup(x))`
    /// must never mean `HTTPClientError.tlsSetup` (both enums have that case and `invalidRequest`).
    init(mapping error: HTTPClientError) {
        switch error {
        case .connection(let error):
            switch error.kind {
            case .tlsHandshakeFailed, .tlsHandshakeTimedOut, .tlsFailure: self.init(Reason.tls(error))
            default: self.init(Reason.network(error))
            }
        case .malformedResponse(let error, let origin, let route):
            self.init(Reason.malformedResponse(error, server: origin.hostAndPort(through: route)))
        case .truncatedTLSBody(let origin, let bytes, let route):
            self.init(Reason.truncatedTLS(server: origin.hostAndPort(through: route), bytesReceived: bytes))
        case .invalidRequest(let error): self.init(Reason.invalidRequest(error))
        case .tlsSetup(let error): self.init(Reason.tlsSetup(error))
        case .handlerFailed(let error):
            self = (error as? HaulError) ?? HaulError(Reason.unexpected(String(describing: error)))
        }
    }
}
