/// Downloads URLs into files over one HTTP/1.1 connection each, following redirects.
///
/// Owns an event loop and a keep-alive pool: downloads from the same origin reuse connections.
public final class Downloader: Sendable {
    /// The settings every download of this downloader uses.
    public let options: DownloadOptions
    /// The HTTP client (its pool counts connections, for tests and statistics).
    public let client: HTTPClient
    private let loop: EventLoop

    public init(options: DownloadOptions = DownloadOptions()) throws(HaulError) {
        self.options = options
        do {
            loop = try EventLoop(name: "haul-loop")
        } catch {
            throw HaulError.unexpected("cannot start the event loop: \(error)")
        }
        var connectionOptions = ConnectionOptions()
        connectionOptions.timeouts = options.timeouts
        do {
            client = try HTTPClient(loop: loop, tls: options.tls, connectionOptions: connectionOptions)
        } catch {
            loop.shutdown()
            throw HaulError.tlsSetup(error)
        }
    }

    deinit {
        loop.shutdown()
    }

    /// Downloads `url` into `path`. Bytes go to `path.part` first; `path` appears only once complete
    /// (renamed atomically after the length check and, unless disabled, `fdatasync`).
    public func download(_ url: String, to path: String) async throws(HaulError) -> DownloadResult {
        let start = MonotonicInstant.now()
        if !options.replaceExisting && OutputFile.exists(path) { throw .destinationExists(path: path) }
        var request: RequestHead
        do {
            request = RequestHead(method: .get, url: try HTTPURL(url), userAgent: options.userAgent,
                                  headers: HTTPFields(options.headers))
        } catch {
            throw .invalidURL(error)
        }
        let partPath = path + ".part"
        var visited = [request.url]
        while true {
            let writer = FileBodyWriter(url: request.url, partPath: partPath, totalTimeout: options.totalTimeout, startedAt: start)
            let summary: ExchangeSummary
            do {
                summary = try await client.execute(request, handler: writer)
            } catch {
                throw HaulError(error)
            }
            switch writer.outcome {
            case .pending:
                throw .unexpected("exchange with \(request.url) ended without a response")
            case .redirect:
                do {
                    guard let next = try options.redirects.follow(summary.head, from: request, visited: &visited) else {
                        throw HaulError.unexpected("redirect status without a redirect")
                    }
                    request = next
                } catch let error as RedirectError {
                    throw .redirect(error)
                } catch {
                    throw error as! HaulError
                }
            case .body(let head):
                guard summary.complete, let file = writer.file else {
                    throw .unexpected("body of \(request.url) was not received completely")
                }
                if case .contentLength(let expected) = head.framing, expected != writer.written {
                    throw .incomplete(url: request.url.description, expected: expected, received: writer.written)
                }
                do {
                    if try file.size() != writer.written { try file.truncate(to: writer.written) }
                    if options.synchronizesToDisk { try file.synchronize() }
                    try OutputFile.rename(partPath, to: path)
                } catch {
                    throw .disk(path: path, error)
                }
                return DownloadResult(
                    path: path, bytes: writer.written,
                    duration: .nanoseconds(Int64(MonotonicInstant.now().nanoseconds(since: start))),
                    finalURL: request.url, entityTag: head.fields.first("etag").flatMap { EntityTag($0) },
                    lastModified: head.fields.first("last-modified").flatMap { HTTPDate($0) },
                    redirects: visited.count - 1)
            }
        }
    }
}
