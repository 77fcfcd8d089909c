import Glibc
import HaulHTTP
import HaulIO
import Logging
import SystemPackage

/// One request over one connection, redirects followed: what a download is not, for curl's `-I` (`HEAD`, the
/// response heads) and `-r` (one range of bytes, written as the output). A path of its own, apart from
/// ``SegmentedDownload``: no probe, no segments, no journal, no retry (one try, as curl's), no resume.
///
/// The request is built by ``MirrorSet`` like every request of a download, so headers and credentials go to
/// the first URL's origin only, as there. A ranged answer is judged by ``SingleRangeDecision`` before a byte
/// of its body is written, and its body is held to the count it promised: exactly the asked bytes, or an
/// error and no file (the `.part` is removed).
///
/// Loop-confined: created and run on one of the client's loops (its lane's).
final class SingleExchange: ResponseHandler, @unchecked Sendable {
    // @unchecked Sendable: every member is touched on its lane's loop only.

    enum Mode {
        /// `HEAD`: collect each response's head.
        case head
        /// `GET` with `Range`: write exactly those bytes.
        case range(ByteRange)
    }

    /// What the exchange produced.
    enum Outcome {
        case heads([HeadResponse])
        case range(DownloadResult)
    }

    /// Largest body of a redirect or error response read (to keep the connection) before closing it.
    static let maxDrainBytes: Int64 = 64 * 1024

    private let client: HaulClient
    /// The client's loop this exchange runs on, with its pool.
    private let lane: ClientLane
    private let request: DownloadRequest
    private let mode: Mode
    private let logger: Logger
    private var completion: ((Result<Outcome, HaulError>) -> Void)?
    private var mirrors: MirrorSet!
    private var url: HTTPURL!
    private var chain: [HTTPURL] = []
    private var heads: [HeadResponse] = []
    private var redirect: ResponseFacts?
    private var started = MonotonicInstant.now()
    private var cancellation: ExchangeCancellation?

    // The range being written.
    private var accepted: ClosedRange<Int64>?
    private var finalHead: ResponseHead?
    private var written: Int64 = 0
    private var drained: Int64 = 0
    private var file: OutputFile?
    private var destination = ""
    private var partPath = ""

    init(client: HaulClient, lane: ClientLane, request: DownloadRequest, mode: Mode, logger: Logger,
         completion: @escaping (Result<Outcome, HaulError>) -> Void) {
        self.client = client
        self.lane = lane
        self.request = request
        self.mode = mode
        self.logger = logger
        self.completion = completion
    }

    /// Checks the request and sends it.
    func startOnLoop() {
        precondition(lane.loop.inEventLoop)
        // Listed until it ends, for the lane's sweep at the client's shutdown (`endAfterShutdown()`).
        lane.exchanges[ObjectIdentifier(self)] = self
        started = MonotonicInstant.now()
        do throws(HaulError) {
            let first: HTTPURL
            do { first = try HTTPURL(request.url) } catch { throw .invalidURL(error) }
            guard request.mirrors.isEmpty else {
                throw .invalidDestination("a single request goes to one URL; mirrors have no meaning here")
            }
            mirrors = MirrorSet(urls: [first], headers: HTTPFields(client.options.headers + request.headersWithCredentials),
                                userAgent: client.options.userAgent)
            do { try mirrors.request(to: first, range: nil, ifRange: nil).validate() } catch { throw .invalidRequest(error) }
            if case .range = mode {
                switch request.destination {
                case .file(let path): try claimDestination(path)
                case .stream, .directory: break
                case .memory: throw .invalidDestination("a single range is written to a file or a stream, not kept in memory")
                }
                guard request.checksum == nil else { throw .invalidDestination("a checksum is of the whole file, not of a range") }
            }
            chain = [first]
            send(to: first)
        } catch {
            finish(.failure(error))
        }
    }

    /// Stops the exchange; the outcome is ``HaulError/cancelled``.
    func cancelOnLoop() {
        cancellation?.cancelOnLoop()
        cancellation = nil
        fail(.cancelled)
    }

    /// Ends the exchange with ``HaulError/Reason/clientShutDown`` on a thread that is not its loop's, once that
    /// loop's thread has exited (``ClientLane/endDownloadsAfterShutdown()``): its loop-confined state is the
    /// caller's then, and its connection went with the loop. The range's `.part` goes, as after any failure.
    func endAfterShutdown() {
        cancellation = nil
        fail(HaulError(.clientShutDown))
    }

    private func send(to target: HTTPURL) {
        url = target
        redirect = nil
        drained = 0
        var head = mirrors.request(to: target, range: nil, ifRange: nil)
        switch mode {
        case .head: head.method = .head
        case .range(let range): head.range = range.request
        }
        logger.debug("sending request", metadata: [
            LogKey.url: "\(target)", "haul.method": "\(head.method.rawValue)", LogKey.range: "\(head.range.map(\.headerValue) ?? "-")",
        ])
        cancellation = lane.httpClient.executeOnLoop(head, handler: self) { [self] result in
            cancellation = nil
            exchangeEnded(result)
        }
    }

    // MARK: ResponseHandler

    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision {
        guard completion != nil else { return .abandon }
        let facts = ResponseFacts(head)
        logger.debug("received response head", metadata: [
            LogKey.status: "\(facts.status)", LogKey.url: "\(url!)", "haul.content_range": "\(facts.contentRange ?? "-")",
        ])
        if case .head = mode {
            heads.append(HeadResponse(url: url, version: head.version, status: head.status, reason: head.reason,
                                      headers: DownloadResult.headers(of: head)))
        }
        if facts.isRedirect {
            redirect = facts
            return .receiveBody
        }
        guard case .range(let asked) = mode else { return .receiveBody }
        switch SingleRangeDecision.decide(facts, asked: asked, url: url.description) {
        case .accept(let served, _):
            let count = served.upperBound - served.lowerBound + 1
            if let limit = client.options.maximumFileSize, count > limit {
                throw HaulError.responseTooLarge(url: url.description, limit: Int(limit), length: count)
            }
            try open(head)
            accepted = served
            finalHead = head
            return .receiveBody
        case .redirect:
            return .receiveBody
        case .failed(let error):
            throw error
        }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision {
        guard completion != nil else { return .stop }
        guard let accepted else {
            drained += Int64(bytes.count)
            return drained > Self.maxDrainBytes ? .stop : .continue
        }
        let count = accepted.upperBound - accepted.lowerBound + 1
        guard written + Int64(bytes.count) <= count else {
            throw HaulError.faultyResponse(url: url.description, detail: "the body ran past the \(count) bytes of range \(accepted.lowerBound)-\(accepted.upperBound)")
        }
        try write(bytes, at: written)
        written += Int64(bytes.count)
        return .continue
    }

    // MARK: Output

    /// Refuses an existing `path` unless it may be replaced, before anything is fetched.
    private func claimDestination(_ path: String) throws(HaulError) {
        if !request.replacesExisting, OutputFile.hasEntry(path) { throw .destinationExists(path: path) }
        destination = path
        partPath = WorkingFileNames.partial(of: path)
    }

    /// Opens the output once the answer is known to be the range: a `.part` beside the destination (named
    /// now, for a directory), or nothing for a stream.
    private func open(_ head: ResponseHead) throws {
        switch request.destination {
        case .stream, .memory:
            return
        case .directory(let directory):
            let name = SuggestedFileName.forResponse(head, url: url)
            try claimDestination(directory.hasSuffix("/") ? directory + name : directory + "/" + name)
        case .file:
            break
        }
        if request.createsDirectories {
            let parent = OutputFile.directory(containing: destination)
            if !OutputFile.isDirectory(parent) {
                do { _ = try OutputFile.createDirectories(parent) } catch { throw HaulError.disk(path: parent, error) }
            }
        }
        // Locked and never another download's progress: a `NAME.part` held by a running download, or with the
        // journal of an interrupted one, used to be truncated and renamed to `NAME` (exit 0, its progress gone,
        // and the running one's writes landing in this file). A `.part` without a journal holds nothing any
        // download would resume (each starts it over), so it is taken.
        let opened: (file: OutputFile, created: Bool)
        do {
            opened = try OutputFile.openForDownload(partPath)
        } catch where error.call == "flock" && error.errno == EWOULDBLOCK {
            throw HaulError.destinationBusy(path: destination, holder: OutputFile.lockHolder(of: partPath))
        } catch {
            throw HaulError.disk(path: partPath, error)
        }
        if !opened.created {
            if OutputFile.hasEntry(WorkingFileNames.journal(of: destination)) {
                throw HaulError.invalidDestination("\(partPath) is the working file of an interrupted download of \(destination), "
                    + "with its resume journal; a single range is never written over it")
            }
            do { try opened.file.truncate(to: 0) } catch { throw HaulError.disk(path: partPath, error) }
        }
        file = opened.file
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        if case .stream(let descriptor) = request.destination {
            do {
                _ = try descriptor.writeAll(bytes)
            } catch {
                throw error.errno == EPIPE ? HaulError.outputClosed : HaulError.disk(path: "the output stream", error)
            }
            return
        }
        do { try file!.write(bytes, at: offset) } catch { throw HaulError.disk(path: partPath, error) }
    }

    // MARK: Ending

    private func exchangeEnded(_ result: Result<ExchangeSummary, HTTPClientError>) {
        guard completion != nil else { return }
        let summary: ExchangeSummary
        switch result {
        case .failure(let error): return fail(HaulError(mapping: error))
        case .success(let ended): summary = ended
        }
        if let redirect {
            do throws(RedirectError) {
                let target = try client.options.redirects.target(status: redirect.status, location: redirect.location,
                                                                 from: url, visited: &chain)
                logger.debug("following redirect", metadata: [LogKey.url: "\(target)", LogKey.status: "\(redirect.status)"])
                return send(to: target)
            } catch {
                return fail(.redirect(error))
            }
        }
        switch mode {
        case .head:
            finish(.success(.heads(heads)))
        case .range:
            guard let accepted, let finalHead else { return fail(.unexpected("a range exchange ended without an accepted answer")) }
            let count = accepted.upperBound - accepted.lowerBound + 1
            guard summary.complete, written == count else {
                return fail(.incomplete(url: url.description, expected: count, received: written))
            }
            do throws(HaulError) {
                if let file {
                    if client.options.synchronizesToDisk {
                        do { try file.synchronize() } catch { throw .disk(path: partPath, error) }
                    }
                    do throws(HaulError) {
                        try WorkingFileCheck.check(file, partPath: partPath, destination: destination)
                    } catch {
                        // The name is another program's file now (or nothing): not ours to remove.
                        self.file = nil
                        throw error
                    }
                    // Never replacing a file that appeared since the start unless that was allowed (``FinalNaming``).
                    try FinalNaming.name(file, partPath: partPath, destination: destination, mustBeNew: !request.replacesExisting)
                    self.file = nil
                }
            } catch {
                return fail(error)
            }
            let elapsed = MonotonicInstant.now().nanoseconds(since: started)
            finish(.success(.range(DownloadResult(
                path: destination.isEmpty ? "-" : destination, bytes: written, duration: .nanoseconds(Int64(elapsed)),
                finalURL: url, entityTag: finalHead.fields.first("etag").flatMap { EntityTag($0) },
                lastModified: finalHead.fields.first("last-modified").flatMap { HTTPDate($0) },
                redirects: chain.count - 1, connections: 1, bytesRequested: count, retries: 0,
                status: finalHead.status, headers: DownloadResult.headers(of: finalHead)))))
        }
    }

    /// Ends with `error`, removing the `.part` (nothing of a failed range is kept).
    private func fail(_ error: HaulError) {
        guard completion != nil else { return }
        if file != nil {
            file = nil
            try? OutputFile.remove(partPath)
        }
        finish(.failure(error.adding(url: url.map { HTTPURL.displayText(of: $0.description) } ?? HTTPURL.displayText(of: request.url))))
    }

    private func finish(_ result: Result<Outcome, HaulError>) {
        let completion = self.completion
        self.completion = nil
        lane.exchanges[ObjectIdentifier(self)] = nil
        completion?(result)
    }
}

/// One response head, as ``HaulClient/responseHeads(_:logger:)`` returns it (curl's `-I`).
public struct HeadResponse: Sendable {
    /// Where the request went.
    public var url: HTTPURL
    /// `1.1` or `1.0`.
    public var version: String
    public var status: Int
    /// The reason phrase as sent (may be empty).
    public var reason: String
    /// The fields in order, as sent.
    public var headers: [(name: String, value: String)]

    /// The head as the server sent it, one line each, with CR LF line ends and the empty line that ends a
    /// head: `HTTP/1.1 200 OK`, then `Name: value`, as curl `-I` prints it.
    public var text: String {
        var text = "HTTP/\(version) \(status)" + (reason.isEmpty ? "" : " \(reason)") + "\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return text + "\r\n"
    }
}

extension HaulClient {
    /// Fetches only `range` of `request`'s URL, in one request over one connection (curl's `-r`): the
    /// destination's offset 0 is the range's first byte. The answer must be a `206` whose `Content-Range` is
    /// exactly that range (its end clipped to the resource's end, as RFC 9110 allows): a `200` (the server
    /// ignores ranges), another range, a content-coded or a
    /// multipart answer is an error, and no file is left. Redirects are followed; there is no retry, no
    /// journal and no resume. `mirrors`, `checksum` and a memory destination are refused
    /// (``HaulError/Reason/invalidDestination(_:)``); a directory destination is named after the URL.
    public func download(_ request: DownloadRequest, range: ByteRange, logger: Logger? = nil) async throws(HaulError) -> DownloadResult {
        switch try await runSingleExchange(request, mode: .range(range), logger: logger) {
        case .range(let result): return result
        case .heads: throw .unexpected("a range request ended with heads")
        }
    }

    /// Sends `HEAD` to `request`'s URL (its headers and credentials as a download sends them) and returns the
    /// response heads, one per redirect followed, the last one the final answer (curl's `-I -L`). Nothing is
    /// written; the destination is not looked at. An error status is a head like any other, not an error.
    public func responseHeads(_ request: DownloadRequest, logger: Logger? = nil) async throws(HaulError) -> [HeadResponse] {
        switch try await runSingleExchange(request, mode: .head, logger: logger) {
        case .heads(let heads): return heads
        case .range: throw .unexpected("a HEAD request ended with a range")
        }
    }

    private func runSingleExchange(_ request: DownloadRequest, mode: SingleExchange.Mode, logger: Logger?) async throws(HaulError) -> SingleExchange.Outcome {
        let lane = enterLane(), loop = lane.loop
        defer { lane.leave() }
        let box = SingleExchangeBox()
        let result: Result<SingleExchange.Outcome, HaulError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let accepted = loop.executeUnlessShuttingDown { [self] in
                    let exchange = SingleExchange(client: self, lane: lane, request: request, mode: mode, logger: logger ?? self.logger) { result in
                        continuation.resume(returning: result)
                    }
                    box.exchange = exchange
                    exchange.startOnLoop()
                    if box.cancelled { exchange.cancelOnLoop() }
                }
                // Begun after the client's shutdown: no loop runs it, and nothing was sent.
                if !accepted { continuation.resume(returning: .failure(HaulError(.clientShutDown).adding(url: HTTPURL.displayText(of: request.url)))) }
            }
        } onCancel: {
            // Dropped once the loop has stopped: the lane's sweep has ended the exchange then.
            loop.execute {
                box.cancelled = true
                box.exchange?.cancelOnLoop()
            }
        }
        return try result.get()
    }
}

/// The exchange of a running ``HaulClient/download(_:range:logger:)``, for its Swift task's cancellation.
/// Touched on the client's loop only.
private final class SingleExchangeBox: @unchecked Sendable {
    var exchange: SingleExchange?
    var cancelled = false
}
