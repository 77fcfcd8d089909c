/// Receives one response on the loop thread: a success body goes to the file with `pwrite` straight from
/// the receive buffer; a redirect's small body is read and dropped so the connection can be reused; any
/// other status abandons the exchange with ``HaulError/httpStatus(status:reason:url:)``.
final class FileBodyWriter: ResponseHandler, @unchecked Sendable {
    // @unchecked Sendable: used only on the event-loop thread that runs the exchange.

    /// Largest redirect body read to keep the connection; longer ones close it instead.
    static let maxDiscardedBody = 64 * 1024

    enum Outcome {
        case pending
        case redirect
        case body(ResponseHead)
    }

    private let url: HTTPURL
    private let partPath: String
    private let deadline: MonotonicInstant?
    private let totalTimeout: Duration?
    private(set) var outcome = Outcome.pending
    private(set) var file: OutputFile?
    private(set) var written: Int64 = 0
    private var discarded = 0

    init(url: HTTPURL, partPath: String, totalTimeout: Duration?, startedAt: MonotonicInstant) {
        self.url = url
        self.partPath = partPath
        self.totalTimeout = totalTimeout
        self.deadline = totalTimeout.map { startedAt.advanced(by: $0) }
    }

    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision {
        if RedirectPolicy.redirectStatuses.contains(head.status) {
            outcome = .redirect
            return .receiveBody
        }
        guard (200..<300).contains(head.status) else {
            throw HaulError.httpStatus(status: head.status, reason: head.reason, url: url.description)
        }
        let file: OutputFile
        do {
            file = try OutputFile.open(partPath, truncate: true)
            if case .contentLength(let length) = head.framing { try file.preallocate(length: length) }
        } catch {
            throw HaulError.disk(path: partPath, error)
        }
        self.file = file
        outcome = .body(head)
        return .receiveBody
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        guard let file else {
            discarded += bytes.count
            return discarded > Self.maxDiscardedBody ? .stop : .continue
        }
        do {
            try file.write(bytes, at: written)
        } catch {
            throw HaulError.disk(path: partPath, error)
        }
        written += Int64(bytes.count)
        if let deadline, MonotonicInstant.now() > deadline {
            throw HaulError.timedOut(after: totalTimeout!, url: url.description, bytesReceived: written)
        }
        return .continue
    }
}
