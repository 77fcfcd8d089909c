/// Downloads URLs into files: one file over up to N connections, following redirects, resuming failed
/// ranges, spreading work over mirrors.
///
/// Owns an event loop and a keep-alive pool; downloads from the same origin reuse connections.
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

    /// Downloads `url` into `path`; see ``download(_:mirrors:to:)``.
    public func download(_ url: String, to path: String) async throws(HaulError) -> DownloadResult {
        try await download(url, mirrors: [], to: path)
    }

    /// Downloads `url` (and the same resource at `mirrors`) into `path`.
    ///
    /// Bytes go to `path.part`; `path` appears only once complete: after the byte count, the checksum when
    /// one is given, and (unless disabled) `fdatasync`, it is renamed into place atomically.
    public func download(_ url: String, mirrors: [String], to path: String) async throws(HaulError) -> DownloadResult {
        let start = MonotonicInstant.now()
        if !options.replaceExisting && OutputFile.exists(path) { throw .destinationExists(path: path) }
        var urls: [HTTPURL] = []
        for text in [url] + mirrors {
            do { urls.append(try HTTPURL(text)) } catch { throw .invalidURL(error) }
        }
        let template = RequestHead(method: .get, url: urls[0], userAgent: options.userAgent, headers: HTTPFields(options.headers))
        do { _ = try template.serialized() } catch { throw .invalidRequest(error) }

        let partPath = path + ".part"
        let download = SegmentedDownload(loop: loop, client: client, options: options, urls: urls,
                                         partPath: partPath, requestTemplate: template)
        let loop = self.loop
        let outcome: Result<SegmentedDownload.Finished, HaulError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.execute { download.startOnLoop { continuation.resume(returning: $0) } }
            }
        } onCancel: {
            loop.execute { download.cancelOnLoop() }
        }
        let finished = try outcome.get()

        let options = self.options
        try await BlockingWork.run(name: "haul-finish") { () throws(HaulError) in
            do {
                if let checksum = options.checksum {
                    let actual = try FileDigest.hex(of: partPath, algorithm: checksum.algorithm)
                    guard actual == checksum.hex else {
                        throw HaulError.checksumMismatch(path: partPath, expected: checksum, actual: actual)
                    }
                }
                if options.synchronizesToDisk { try finished.file.synchronize() }
                try OutputFile.rename(partPath, to: path)
            } catch let error as SystemError {
                throw HaulError.disk(path: path, error)
            } catch let error as HaulError {
                throw error
            } catch {
                throw HaulError.unexpected(String(describing: error))
            }
        }
        return DownloadResult(
            path: path, bytes: finished.bytes,
            duration: .nanoseconds(Int64(MonotonicInstant.now().nanoseconds(since: start))),
            finalURL: finished.finalURL, entityTag: finished.entityTag, lastModified: finished.lastModified,
            redirects: finished.redirects, connections: finished.connections,
            bytesRequested: finished.bytesRequested, retries: finished.retries)
    }
}
