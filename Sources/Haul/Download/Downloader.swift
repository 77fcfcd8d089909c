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
        client = HTTPClient(loop: loop, tls: options.tls, connectionOptions: connectionOptions)
    }

    deinit {
        // The last reference can go away on the loop thread itself (a closure that ran there), which
        // cannot wait for its own end: then another thread does the waiting.
        let loop = self.loop
        if loop.inEventLoop {
            BlockingWork.start(name: "haul-shutdown") { loop.shutdown() }
        } else {
            loop.shutdown()
        }
    }

    /// Downloads `url` into `path`; see ``download(_:mirrors:to:restart:)``.
    public func download(_ url: String, to path: String, restart: Bool = false) async throws(HaulError) -> DownloadResult {
        try await download(url, mirrors: [], to: path, restart: restart)
    }

    /// Downloads `url` (and the same resource at `mirrors`) into `path`.
    ///
    /// Bytes go to `path.part`; `path` appears only once complete: after the byte count, the checksum when
    /// one is given, and (unless disabled) `fdatasync`, it is renamed into place atomically.
    ///
    /// An interrupted download of the same URL into the same path resumes by itself from its journal
    /// (`path.part.haul`); `restart` discards it instead.
    public func download(_ url: String, mirrors: [String], to path: String, restart: Bool = false) async throws(HaulError) -> DownloadResult {
        let start = MonotonicInstant.now()
        if !options.replaceExisting && OutputFile.exists(path) { throw .destinationExists(path: path) }
        var urls: [HTTPURL] = []
        for text in [url] + mirrors {
            do { urls.append(try HTTPURL(text)) } catch { throw .invalidURL(error) }
        }
        let template = RequestHead(method: .get, url: urls[0], userAgent: options.userAgent, headers: HTTPFields(options.headers))
        do { _ = try template.serialized() } catch { throw .invalidRequest(error) }

        let partPath = path + ".part"
        let resume = try Self.interruptedDownload(at: partPath, url: urls[0], restart: restart)
        let download = SegmentedDownload(loop: loop, client: client, options: options, urls: urls,
                                         partPath: partPath, requestTemplate: template, resume: resume)
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
                // The file is complete under its final name; the journal has nothing left to describe.
                try? ResumeJournal.remove(path: finished.journalPath)
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

    /// The journal of an interrupted download at `partPath`, if there is one to resume.
    ///
    /// A journal without its `.part` file (or with one of the wrong size) cannot be trusted and is
    /// discarded; a journal for another URL, or one that cannot be read, is an error unless `restart`.
    static func interruptedDownload(at partPath: String, url: HTTPURL, restart: Bool) throws(HaulError) -> (journal: ResumeJournal, state: JournalState)? {
        let journalPath = partPath + ".haul"
        guard OutputFile.exists(journalPath) else { return nil }
        if restart {
            try? ResumeJournal.remove(path: journalPath)
            try? OutputFile.remove(partPath)
            return nil
        }
        let opened: (ResumeJournal, JournalState)
        do {
            opened = try ResumeJournal.open(path: journalPath)
        } catch {
            throw .journal(error)
        }
        let state = opened.1
        guard state.url == url.description else {
            throw .partialDownloadMismatch(path: partPath, detail: "this partial download is of \(state.url), not \(url)")
        }
        let partSize: Int64?
        do {
            partSize = OutputFile.exists(partPath) ? try OutputFile.open(partPath, truncate: false).size() : nil
        } catch {
            throw .disk(path: partPath, error)
        }
        guard partSize == state.totalLength else {
            // The data the journal describes is gone (or was replaced): start over rather than trust it.
            try? ResumeJournal.remove(path: journalPath)
            return nil
        }
        return opened
    }
}
