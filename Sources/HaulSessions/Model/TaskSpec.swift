import Haul
import HaulCommandLine
import HaulHTTP

/// The settings of one queued download that the engine keeps per `HaulClient` (connections, timeouts,
/// TLS, rate, retries, durability). The daemon runs tasks with equal options on one client; see
/// `docs/sessions.md`.
public struct TaskOptions: Sendable, Hashable {
    /// Most connections for this download.
    public var connections: Int = 8
    /// Smallest piece one connection is given or steals.
    public var minimumSegment: Int64 = 1 << 20
    public var userAgent: String = HaulVersion.userAgent
    /// Time allowed to connect (and for the TLS handshake).
    public var connectTimeout: Duration = DownloadOptions().timeouts.connect
    /// Time without a byte before a connection is given up.
    public var stallTimeout: Duration = DownloadOptions().timeouts.idle ?? .seconds(30)
    /// Longest the whole download may take (counted per run of the daemon); nil for no limit.
    public var totalTimeout: Duration?
    public var caFile: String?
    public var caDirectory: String?
    public var insecure: Bool = false
    /// Bytes per second for this download; nil for no limit.
    public var rateLimit: Int64?
    public var triesPerRange: Int = RetryPolicy().triesPerRange
    public var totalRetries: Int = RetryPolicy().totalRetries
    /// The engine's default (a queued download's waits end as a foreground one's do); nil turns it off.
    public var lowSpeedLimit: LowSpeedLimit? = DownloadOptions().lowSpeedLimit
    /// `fdatasync` before the rename and before each checkpoint (off: `--no-sync`).
    public var synchronizesToDisk: Bool = true
    public var checkpointBytes: Int64 = 32 << 20
    public var checkpointInterval: Duration = .seconds(1)
    /// Resolve and connect-to rules, one address family, an interface (`--resolve`, `--connect-to`, `-4`/`-6`,
    /// `--interface`). Part of the options' identity, so that tasks with other settings never share a client
    /// and its pooled connections.
    public var network = NetworkSettings()
    /// The TLS client certificate (`--cert`, `--key`; absolute paths).
    public var clientCertificate: TLSSettings.ClientCertificate?

    public init() {}

    /// The engine options for a client that runs downloads with these settings, under a connection cap of
    /// `maximumConnections` for the whole client.
    public func downloadOptions(maximumConnections: Int) -> DownloadOptions {
        var options = DownloadOptions()
        options.userAgent = userAgent
        options.timeouts = ConnectionTimeouts(connect: connectTimeout, tlsHandshake: connectTimeout, idle: stallTimeout)
        options.totalTimeout = totalTimeout
        options.tls.caFile = caFile
        options.tls.caDirectory = caDirectory
        options.tls.insecure = insecure
        options.tls.clientCertificate = clientCertificate
        options.network = network
        options.synchronizesToDisk = synchronizesToDisk
        options.connections = connections
        options.maximumConnections = max(maximumConnections, 1)
        options.minimumSegment = minimumSegment
        options.rateLimit = rateLimit
        options.retry = totalRetries == 0 ? .none : RetryPolicy(triesPerRange: triesPerRange, totalRetries: totalRetries)
        options.lowSpeedLimit = lowSpeedLimit
        options.checkpointBytes = checkpointBytes
        options.checkpointInterval = checkpointInterval
        return options
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
    /// Where the file goes; paths must be absolute (the daemon's working directory is not the client's).
    public var destination: DownloadRequest.Destination
    public var createsDirectories: Bool = true
    public var replacesExisting: Bool = false
    public var checksum: Checksum?
    public var ifChangedOnServer: ChangePolicy = .fail
    /// Discard a partial download found at the destination when the task first starts (never on later
    /// starts: those resume what this task itself wrote).
    public var discardsPartialDownload: Bool = false
    /// Request headers (`-H`, and `Authorization` from `-u` or a netrc file). Stored in the session
    /// directory, which only its owner can read.
    public var headers: [TaskHeader] = []
    public var options: TaskOptions = TaskOptions()
    /// A command run by `/bin/sh -c` once when this task completes (see `docs/sessions.md` for its environment).
    public var hook: String?

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
        return request
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
        let certificateFiles = [options.clientCertificate?.certificateFile, options.clientCertificate?.keyFile]
        for path in ([options.caFile, options.caDirectory] + certificateFiles).compactMap({ $0 }) where !path.hasPrefix("/") {
            return "\"\(path)\" is not an absolute path"
        }
        guard (1...64).contains(options.connections) else { return "connections must be between 1 and 64" }
        guard options.minimumSegment >= 1, options.checkpointBytes >= 1 else { return "sizes must be positive" }
        guard options.triesPerRange >= 1, options.totalRetries >= 0 else { return "retries must not be negative" }
        let probe = RequestHead(method: .get, url: try! HTTPURL("http://localhost/"), userAgent: options.userAgent,
                                headers: HTTPFields(headers.map { ($0.name, $0.value) }))
        do { _ = try probe.serialized() } catch { return "a header cannot be sent: \(error)" }
        return nil
    }
}

// MARK: - JSON

extension Duration {
    /// Whole milliseconds (rounded down).
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

extension TaskOptions {
    /// Only the fields that differ from the defaults, so that records stay small and a default changed in a
    /// later version applies to tasks that never chose.
    var json: JSONValue {
        var object = JSONObject()
        let defaults = TaskOptions()
        if connections != defaults.connections { object["connections"] = .int(connections) }
        if minimumSegment != defaults.minimumSegment { object["minSegment"] = .int(minimumSegment) }
        if userAgent != defaults.userAgent { object["userAgent"] = .string(userAgent) }
        if connectTimeout != defaults.connectTimeout { object["connectTimeoutMs"] = .int(connectTimeout.milliseconds) }
        if stallTimeout != defaults.stallTimeout { object["stallTimeoutMs"] = .int(stallTimeout.milliseconds) }
        if let totalTimeout { object["maxTimeMs"] = .int(totalTimeout.milliseconds) }
        if let caFile { object["caFile"] = .string(caFile) }
        if let caDirectory { object["caPath"] = .string(caDirectory) }
        if insecure { object["insecure"] = .bool(true) }
        if let rateLimit { object["rateLimit"] = .int(rateLimit) }
        if triesPerRange != defaults.triesPerRange { object["triesPerRange"] = .int(triesPerRange) }
        if totalRetries != defaults.totalRetries { object["retries"] = .int(totalRetries) }
        if lowSpeedLimit != defaults.lowSpeedLimit {
            // Turned off: `speedLimit` 0, alone.
            object["speedLimit"] = .int(lowSpeedLimit?.bytesPerSecond ?? 0)
            if let lowSpeedLimit { object["speedTime"] = .int(lowSpeedLimit.seconds) }
        }
        if !synchronizesToDisk { object["sync"] = .bool(false) }
        if checkpointBytes != defaults.checkpointBytes { object["checkpointBytes"] = .int(checkpointBytes) }
        if checkpointInterval != defaults.checkpointInterval {
            object["checkpointIntervalMs"] = .int(checkpointInterval.milliseconds)
        }
        // In curl's syntax, as the command line gave them (and read back with the same parsers).
        if !network.resolve.isEmpty { object["resolve"] = .array(network.resolve.map { .string($0.text) }) }
        if !network.connectTo.isEmpty { object["connectTo"] = .array(network.connectTo.map { .string($0.text) }) }
        if let family = network.addressFamily { object["ipVersion"] = .int(family == .ipv4 ? 4 : 6) }
        if let interface = network.interface { object["interface"] = .string(interface.text) }
        if let clientCertificate {
            object["clientCert"] = .string(clientCertificate.certificateFile)
            if let key = clientCertificate.keyFile { object["clientKey"] = .string(key) }
        }
        return .object(object)
    }

    init(reading reader: inout FieldReader) throws(SchemaError) {
        self.init()
        let day: ClosedRange<Int64> = 1...86_400_000
        if let value = try reader.optionalInteger("connections", in: 1...64) { connections = Int(value) }
        if let value = try reader.optionalInteger("minSegment", in: 1...(1 << 40)) { minimumSegment = value }
        if let value = try reader.optionalString("userAgent", maximumBytes: 1024) { userAgent = value }
        if let value = try reader.optionalInteger("connectTimeoutMs", in: day) { connectTimeout = .milliseconds(value) }
        if let value = try reader.optionalInteger("stallTimeoutMs", in: day) { stallTimeout = .milliseconds(value) }
        if let value = try reader.optionalInteger("maxTimeMs", in: 1...(Int64(365) * 86_400_000)) { totalTimeout = .milliseconds(value) }
        caFile = try reader.optionalString("caFile", maximumBytes: 4096)
        caDirectory = try reader.optionalString("caPath", maximumBytes: 4096)
        insecure = try reader.bool("insecure", default: false)
        rateLimit = try reader.optionalInteger("rateLimit", in: 1...(Int64(1) << 50))
        if let value = try reader.optionalInteger("triesPerRange", in: 1...1000) { triesPerRange = Int(value) }
        if let value = try reader.optionalInteger("retries", in: 0...1_000_000) { totalRetries = Int(value) }
        let speed = try reader.optionalInteger("speedLimit", in: 0...(Int64(1) << 50))
        let time = try reader.optionalInteger("speedTime", in: 1...86_400)
        switch (speed, time) {
        case (nil, nil): break
        case (0, nil): lowSpeedLimit = nil
        case (let speed?, let time?) where speed > 0: lowSpeedLimit = LowSpeedLimit(bytesPerSecond: speed, seconds: Int(time))
        default: throw SchemaError(field: reader.name("speedLimit"), "speedLimit and speedTime go together (speedLimit 0 alone: no limit)")
        }
        synchronizesToDisk = try reader.bool("sync", default: true)
        if let value = try reader.optionalInteger("checkpointBytes", in: 1...(Int64(1) << 40)) { checkpointBytes = value }
        if let value = try reader.optionalInteger("checkpointIntervalMs", in: day) { checkpointInterval = .milliseconds(value) }
        for (index, text) in try reader.stringArray("resolve", maximumCount: 256, maximumBytes: 4096).enumerated() {
            do { network.resolve.append(try ResolveRule(parsing: text)) } catch {
                throw SchemaError(field: reader.name("resolve") + "[\(index)]", "\(error)")
            }
        }
        for (index, text) in try reader.stringArray("connectTo", maximumCount: 256, maximumBytes: 4096).enumerated() {
            do { network.connectTo.append(try ConnectToRule(parsing: text)) } catch {
                throw SchemaError(field: reader.name("connectTo") + "[\(index)]", "\(error)")
            }
        }
        if let version = try reader.optionalInteger("ipVersion", in: 4...6) {
            guard version != 5 else { throw SchemaError(field: reader.name("ipVersion"), "expected 4 or 6") }
            network.addressFamily = version == 4 ? .ipv4 : .ipv6
        }
        if let text = try reader.optionalString("interface", maximumBytes: 64) {
            do { network.interface = try NetworkInterface(parsing: text) } catch {
                throw SchemaError(field: reader.name("interface"), "\(error)")
            }
        }
        let key = try reader.optionalString("clientKey", maximumBytes: 4096)
        if let certificate = try reader.optionalString("clientCert", maximumBytes: 4096) {
            clientCertificate = TLSSettings.ClientCertificate(certificateFile: certificate, keyFile: key)
        } else if key != nil {
            throw SchemaError(field: reader.name("clientKey"), "a key needs clientCert")
        }
        try reader.finish()
    }
}

extension TaskSpec {
    /// The spec as the session log and the protocol carry it (`docs/sessions.md`, "Task spec").
    public var json: JSONValue {
        var object = JSONObject()
        object["url"] = .string(url)
        if !mirrors.isEmpty { object["mirrors"] = .array(mirrors.map(JSONValue.string)) }
        switch destination {
        case .file(let path): object["path"] = .string(path)
        case .directory(let directory): object["dir"] = .string(directory)
        case .stream, .memory: break   // refused by problem() before a spec is ever written
        }
        if !createsDirectories { object["createDirectories"] = .bool(false) }
        if replacesExisting { object["replaceExisting"] = .bool(true) }
        if let checksum { object["checksum"] = .string(checksum.description) }
        // Stored under its first name, "onChange", so that queues written before the rename still load.
        if ifChangedOnServer != .fail { object["onChange"] = .string(ifChangedOnServer.rawValue) }
        if discardsPartialDownload { object["restart"] = .bool(true) }
        if !headers.isEmpty {
            object["headers"] = .array(headers.map { .array([.string($0.name), .string($0.value)]) })
        }
        let options = options.json
        if options.object?.count ?? 0 > 0 { object["options"] = options }
        if let hook { object["hook"] = .string(hook) }
        return .object(object)
    }

    /// Reads a spec strictly (every field known, every value in range).
    public init(json value: JSONValue, path: String = "spec") throws(SchemaError) {
        var reader = try FieldReader(value, path: path)
        try self.init(reading: &reader)
        try reader.finish()
    }

    init(reading reader: inout FieldReader) throws(SchemaError) {
        let url = try reader.string("url", maximumBytes: 8192)
        let file = try reader.optionalString("path", maximumBytes: 4096)
        let directory = try reader.optionalString("dir", maximumBytes: 4096)
        let destination: DownloadRequest.Destination
        switch (file, directory) {
        case (let file?, nil): destination = .file(file)
        case (nil, let directory?): destination = .directory(directory)
        default: throw SchemaError(field: reader.name("path"), "exactly one of path and dir is required")
        }
        self.init(url: url, destination: destination)
        mirrors = try reader.stringArray("mirrors", maximumCount: 64, maximumBytes: 8192)
        createsDirectories = try reader.bool("createDirectories", default: true)
        replacesExisting = try reader.bool("replaceExisting", default: false)
        if let text = try reader.optionalString("checksum", maximumBytes: 300) {
            do {
                checksum = try Checksum(text)
            } catch {
                throw SchemaError(field: reader.name("checksum"), "\(error)")
            }
        }
        if let text = try reader.optionalString("onChange", maximumBytes: 16) {
            guard let policy = ChangePolicy(rawValue: text) else {
                throw SchemaError(field: reader.name("onChange"), "expected fail or restart, found \"\(text)\"")
            }
            ifChangedOnServer = policy
        }
        discardsPartialDownload = try reader.bool("restart", default: false)
        for (index, item) in (try reader.optionalArray("headers", maximumCount: 256) ?? []).enumerated() {
            guard case .array(let pair) = item, pair.count == 2, let name = pair[0].string, let value = pair[1].string,
                  name.utf8.count <= 1024, value.utf8.count <= 8192
            else {
                throw SchemaError(field: reader.name("headers") + "[\(index)]", "expected [name, value], two strings")
            }
            headers.append(TaskHeader(name: name, value: value))
        }
        if var optionsReader = try reader.optionalObject("options") {
            options = try TaskOptions(reading: &optionsReader)
        }
        hook = try reader.optionalString("hook", maximumBytes: 8192)
    }
}
