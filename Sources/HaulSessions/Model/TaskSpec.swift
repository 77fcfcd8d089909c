import Haul
import HaulHTTP

/// The settings of one queued download that the engine keeps per `HaulClient` (connections, timeouts,
/// TLS, rate, retries, durability): the per-task part of `DownloadOptions`, in its shapes (`timeouts`, `tls`,
/// `retry`). The daemon runs tasks with equal options on one client; see `docs/sessions.md`.
public struct TaskOptions: Sendable, Hashable {
    /// Most connections for this download.
    public var connections: Int = 8
    /// Smallest piece one connection is given or steals.
    public var minimumSegment: Int64 = 1 << 20
    public var userAgent: String = DownloadOptions().userAgent
    /// Connect, TLS handshake, stall and response-head limits, as `DownloadOptions/timeouts`.
    public var timeouts: ConnectionTimeouts = DownloadOptions().timeouts
    /// Longest the whole download may take (counted per run of the daemon); nil for no limit.
    public var totalTimeout: Duration?
    /// Trust and verification, as `DownloadOptions/tls`; relative paths in it are taken from the directory
    /// of the process that adds the task.
    public var tls: TLSSettings = TLSSettings()
    /// Where connections go and from where (`--resolve`, `--connect-to`, `-4`/`-6`, `--interface`), as
    /// `DownloadOptions/network`. Part of the options' identity, so that tasks with other settings never
    /// share a client and its pooled connections.
    public var network: NetworkSettings = NetworkSettings()
    /// Bytes per second for this download; nil for no limit.
    public var rateLimit: Int64?
    /// How failed requests are retried, as `DownloadOptions/retry`. A task's journal holds at most 1000 tries
    /// a range (``init(_:)`` caps `triesPerRange` there).
    public var retry: RetryPolicy = RetryPolicy()
    /// The engine's default (a queued download's waits end as a foreground one's do); nil turns it off.
    public var lowSpeedLimit: LowSpeedLimit? = DownloadOptions().lowSpeedLimit
    /// `fdatasync` before the rename and before each checkpoint (off: `--no-sync`).
    public var synchronizesToDisk: Bool = true
    public var checkpointBytes: Int64 = 32 << 20
    public var checkpointInterval: Duration = .seconds(1)

    public init() {}

    /// The per-task part of `options`: everything but its headers (a task's are in its request), its proxy,
    /// redirects, connection cap and the engine's internal tuning, which the daemon's client sets.
    public init(_ options: DownloadOptions) {
        connections = options.connections
        minimumSegment = options.minimumSegment
        userAgent = options.userAgent
        timeouts = options.timeouts
        totalTimeout = options.totalTimeout
        tls = options.tls
        network = options.network
        rateLimit = options.rateLimit
        retry = options.retry
        retry.triesPerRange = min(Self.mostTriesPerRange, retry.triesPerRange)
        lowSpeedLimit = options.lowSpeedLimit
        synchronizesToDisk = options.synchronizesToDisk
        checkpointBytes = options.checkpointBytes
        checkpointInterval = options.checkpointInterval
    }

    /// The most tries a range a task may make: its journal counts no further.
    static let mostTriesPerRange = 1000

    /// The engine options for a client that runs downloads with these settings, under a connection cap of
    /// `maximumConnections` for the whole client.
    public func downloadOptions(maximumConnections: Int) -> DownloadOptions {
        var options = DownloadOptions()
        options.userAgent = userAgent
        options.timeouts = timeouts
        options.totalTimeout = totalTimeout
        options.tls = tls
        options.network = network
        options.synchronizesToDisk = synchronizesToDisk
        options.connections = connections
        options.maximumConnections = max(maximumConnections, 1)
        options.minimumSegment = minimumSegment
        options.rateLimit = rateLimit
        options.retry = retry
        options.lowSpeedLimit = lowSpeedLimit
        options.checkpointBytes = checkpointBytes
        options.checkpointInterval = checkpointInterval
        return options
    }

    // The first shapes of these settings, kept for source compatibility.

    /// Time allowed to connect, and for the TLS handshake.
    @available(*, deprecated, message: "use timeouts.connect and timeouts.tlsHandshake")
    public var connectTimeout: Duration {
        get { timeouts.connect }
        set { (timeouts.connect, timeouts.tlsHandshake) = (newValue, newValue) }
    }

    /// Time without a byte before a connection is given up.
    @available(*, deprecated, renamed: "timeouts.idle")
    public var stallTimeout: Duration {
        get { timeouts.idle ?? .zero }
        set { timeouts.idle = newValue }
    }

    @available(*, deprecated, renamed: "tls.caFile")
    public var caFile: String? {
        get { tls.caFile }
        set { tls.caFile = newValue }
    }

    @available(*, deprecated, renamed: "tls.caDirectory")
    public var caDirectory: String? {
        get { tls.caDirectory }
        set { tls.caDirectory = newValue }
    }

    @available(*, deprecated, renamed: "tls.insecure")
    public var insecure: Bool {
        get { tls.insecure }
        set { tls.insecure = newValue }
    }

    @available(*, deprecated, renamed: "retry.triesPerRange")
    public var triesPerRange: Int {
        get { retry.triesPerRange }
        set { retry.triesPerRange = newValue }
    }

    @available(*, deprecated, renamed: "retry.totalRetries")
    public var totalRetries: Int {
        get { retry.totalRetries }
        set { retry.totalRetries = newValue }
    }
}

/// One request header of a task.
public struct TaskHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Everything the daemon needs to run one download, now or after any number of restarts: the request, the
/// per-download options and an optional completion hook. Stored in the session log when the task is added.
public struct TaskSpec: Sendable, Hashable {
    public var url: String
    public var mirrors: [String] = []
    /// Where the file goes. The daemon takes only absolute paths (its working directory is not the client's):
    /// `HaulSession/add(_:)` makes a relative one absolute against the caller's working directory first.
    public var destination: DownloadRequest.Destination
    public var createsDirectories: Bool = true
    public var replacesExisting: Bool = false
    public var checksum: Checksum?
    public var ifChangedOnServer: ChangePolicy = .fail
    /// Discard a partial download found at the destination when the task first starts (never on later
    /// starts: those resume what this task itself wrote).
    public var discardsPartialDownload: Bool = false
    /// `DownloadRequest.onlyIfChanged`: fetch only a changed file (`-N`).
    public var onlyIfChanged: Bool = false
    /// `DownloadRequest.setsRemoteTime`: the server's time on the file (`-R`).
    public var setsRemoteTime: Bool = false
    /// `DownloadRequest.pieceHashes`: each piece checked as it is written (a Metalink's `<pieces>`).
    public var pieceHashes: PieceHashes?
    /// `DownloadRequest.modifiedSince`: fetch only a file modified after this date (`-z DATE`).
    public var modifiedSince: HTTPDate?
    /// `DownloadRequest.expectedSize`: the only length the file may have (a Metalink's `<size>`).
    public var expectedSize: Int64?
    /// `DownloadRequest.followsMetalink`. Carried so that a spec says what its request said, but refused by
    /// ``problem()``: the files a followed document lists would be tasks of their own, which a task cannot add.
    public var followsMetalink: Bool = false
    /// Request headers (`-H`, and `Authorization` from `-u` or a netrc file). Stored in the session
    /// directory, which only its owner can read.
    public var headers: [TaskHeader] = []
    public var options: TaskOptions = TaskOptions()
    /// A command run by `/bin/sh -c` once when this task completes (see `docs/sessions.md` for its environment).
    public var hook: String?
    /// Asked for a fresh URL when the task's URL expires mid-download (`--url-command`; ``URLCommand``).
    public var urlCommand: URLCommand?

    public init(url: String, mirrors: [String] = [], destination: DownloadRequest.Destination) {
        self.url = url
        self.mirrors = mirrors
        self.destination = destination
    }

    /// A spec for `request`, with `options` and `hook`.
    public init(_ request: DownloadRequest, options: TaskOptions = TaskOptions(), hook: String? = nil) {
        url = request.url
        mirrors = request.mirrors
        destination = request.destination
        createsDirectories = request.createsDirectories
        replacesExisting = request.replacesExisting
        checksum = request.checksum
        ifChangedOnServer = request.ifChangedOnServer
        discardsPartialDownload = request.discardsPartialDownload
        onlyIfChanged = request.onlyIfChanged
        setsRemoteTime = request.setsRemoteTime
        pieceHashes = request.pieceHashes
        modifiedSince = request.modifiedSince
        expectedSize = request.expectedSize
        followsMetalink = request.followsMetalink
        // Credentials are kept as the `Authorization` header they are sent as (as `-u` is): one scoped field.
        headers = request.headersWithCredentials.map { TaskHeader(name: $0.name, value: $0.value) }
        self.options = options
        self.hook = hook
    }

    /// The engine request for one start of this task; `firstStart` says whether it may discard a partial
    /// download.
    public func request(firstStart: Bool) -> DownloadRequest {
        var request = DownloadRequest(url: url, mirrors: mirrors, destination: destination,
                                      createsDirectories: createsDirectories, replacesExisting: replacesExisting,
                                      checksum: checksum, ifChangedOnServer: ifChangedOnServer,
                                      discardsPartialDownload: discardsPartialDownload && firstStart)
        request.headers = headers.map { ($0.name, $0.value) }
        request.onlyIfChanged = onlyIfChanged
        request.setsRemoteTime = setsRemoteTime
        request.pieceHashes = pieceHashes
        request.modifiedSince = modifiedSince
        request.expectedSize = expectedSize
        request.followsMetalink = followsMetalink
        return request
    }

    /// This spec with its relative paths (destination, CA file and directory) made absolute against the
    /// current working directory, as a `DownloadRequest` run in this process would take them.
    public func resolvingRelativePaths() -> TaskSpec {
        var spec = self
        switch destination {
        case .file(let path): spec.destination = .file(SessionPaths.absolute(path))
        case .directory(let path): spec.destination = .directory(SessionPaths.absolute(path))
        case .stream, .memory: break
        }
        spec.options.tls.caFile = options.tls.caFile.map(SessionPaths.absolute)
        spec.options.tls.caDirectory = options.tls.caDirectory.map(SessionPaths.absolute)
        spec.options.tls.clientCertificate = options.tls.clientCertificate.map {
            TLSSettings.ClientCertificate(certificateFile: SessionPaths.absolute($0.certificateFile), keyFile: $0.keyFile.map(SessionPaths.absolute))
        }
        return spec
    }

    /// The destination file's path when it is known from the spec alone (a `.file` destination).
    public var filePath: String? {
        if case .file(let path) = destination { return path }
        return nil
    }

    /// Checks what the daemon can check before accepting the task: absolute paths, usable URLs and headers,
    /// sane numbers. Returns a message for the client, or nil when the spec is fine.
    public func problem() -> String? {
        for text in [url] + mirrors {
            do { _ = try HTTPURL(text) } catch { return "\"\(text)\" is not a usable http(s) URL: \(error)" }
        }
        switch destination {
        case .file(let path), .directory(let path):
            guard path.hasPrefix("/") else { return "the destination \"\(path)\" is not an absolute path" }
            if case .file = destination, path.hasSuffix("/") { return "the destination \"\(path)\" names a directory" }
        case .stream:
            return "a background task cannot stream to a descriptor: the daemon outlives the client that has it"
        case .memory:
            return "a background task cannot download into memory: the bytes would be the daemon's, not the client's"
        }
        if followsMetalink {
            return "a background task cannot follow a Metalink document: the files it lists would be tasks of their own (add them with -M)"
        }
        let certificateFiles = [options.tls.clientCertificate?.certificateFile, options.tls.clientCertificate?.keyFile]
        for path in ([options.tls.caFile, options.tls.caDirectory] + certificateFiles).compactMap({ $0 }) where !path.hasPrefix("/") {
            return "\"\(path)\" is not an absolute path"
        }
        if let urlCommand {
            guard !urlCommand.command.isEmpty, urlCommand.command.utf8.count <= 8192 else { return "the URL command must have 1 to 8192 bytes" }
            guard urlCommand.timeout >= .milliseconds(1), urlCommand.timeout <= .seconds(86_400) else {
                return "the URL command's timeout must be between 1 ms and a day"
            }
        }
        guard (1...64).contains(options.connections) else { return "connections must be between 1 and 64" }
        guard options.minimumSegment >= 1, options.checkpointBytes >= 1 else { return "sizes must be positive" }
        guard options.retry.totalRetries >= 0 else { return "retries must not be negative" }
        guard (1...TaskOptions.mostTriesPerRange).contains(options.retry.triesPerRange) else {
            return "tries per range must be between 1 and \(TaskOptions.mostTriesPerRange)"
        }
        let probe = RequestHead(method: .get, url: try! HTTPURL("http://localhost/"), userAgent: options.userAgent,
                                headers: HTTPFields(headers.map { ($0.name, $0.value) }))
        do { _ = try probe.serialized() } catch { return "a header cannot be sent: \(error)" }
        return nil
    }
}

