import Haul
import HaulHTTP

// A task spec as the session log and the protocol carry it (docs/sessions.md, "Task spec"): through `Codable`,
// the request in `DownloadRequest`'s own encoding. A stored property added to TaskSpec or TaskOptions (or to
// the settings types TaskOptions holds) must be added to `CodingKeys`, `init(from:)` and `encode(to:)`; the
// round-trip test (ProtocolTests) sets every leaf to a value other than its default and fails on one that
// does not come back.

extension Duration {
    /// Whole milliseconds (rounded down).
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// `{"request": {...}, "options": {...}, "hook": "...", "urlCommand": "...", "urlCommandTimeoutMs": N}`: the
/// request as `DownloadRequest` encodes it (its credentials already folded into an `Authorization` header, see
/// ``init(_:options:hook:)``), the options that differ from the defaults, the hook, the `--url-command` (its
/// timeout only when not the default). Specs written before `urlCommand` existed read as having none. Specs written before this shape (`url`, `path` or `dir`, ... at
/// the top) are still read by ``init(json:path:)``.
extension TaskSpec: Codable {
    enum CodingKeys: String, CodingKey {
        case request, options, hook, urlCommand, urlCommandTimeoutMs
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let request = try container.decode(DownloadRequest.self, forKey: .request)
        guard request.mirrors.count <= 64 else {
            throw DecodingError.dataCorruptedError(forKey: .request, in: container, debugDescription: "more than 64 mirrors")
        }
        guard request.headers.count <= 256 else {
            throw DecodingError.dataCorruptedError(forKey: .request, in: container, debugDescription: "more than 256 headers")
        }
        self.init(request, options: try container.decodeIfPresent(TaskOptions.self, forKey: .options) ?? TaskOptions(),
                  hook: try container.decodeIfPresent(String.self, forKey: .hook))
        if let command = try container.decodeIfPresent(String.self, forKey: .urlCommand) {
            guard command.utf8.count <= 8192 else {
                throw DecodingError.dataCorruptedError(forKey: .urlCommand, in: container, debugDescription: "longer than 8192 bytes")
            }
            urlCommand = URLCommand(command)
            if let milliseconds = try container.decodeIfPresent(Int64.self, forKey: .urlCommandTimeoutMs) {
                guard (1...86_400_000).contains(milliseconds) else {
                    throw DecodingError.dataCorruptedError(forKey: .urlCommandTimeoutMs, in: container, debugDescription: "\(milliseconds) is outside 1...86400000")
                }
                urlCommand?.timeout = .milliseconds(milliseconds)
            }
        } else if container.contains(.urlCommandTimeoutMs) {
            throw DecodingError.dataCorruptedError(forKey: .urlCommandTimeoutMs, in: container, debugDescription: "a timeout needs urlCommand")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(request(firstStart: true), forKey: .request)
        // Only options that differ from the defaults (see TaskOptions' encoding): none, no object.
        if options != TaskOptions() { try container.encode(options, forKey: .options) }
        try container.encodeIfPresent(hook, forKey: .hook)
        if let urlCommand {
            try container.encode(urlCommand.command, forKey: .urlCommand)
            if urlCommand.timeout != URLCommand.defaultTimeout {
                try container.encode(urlCommand.timeout.milliseconds, forKey: .urlCommandTimeoutMs)
            }
        }
    }

    /// The spec as the session log and the protocol carry it (`docs/sessions.md`, "Task spec").
    public var json: JSONValue {
        do {
            return try JSONValueEncoder.encode(self)
        } catch {
            // Only a stream destination cannot be encoded, and problem() refuses it before any spec is sent or
            // written; should one get here, it reads back as a spec without a destination, which is refused.
            return .object(JSONObject(["request": .object(JSONObject(["url": .string(url)]))]))
        }
    }

    /// Reads a spec strictly (every field known, every value in range), in today's shape or the one written
    /// before it.
    public init(json value: JSONValue, path: String = "spec") throws(SchemaError) {
        if case .object(let object) = value, object["request"] == nil, object["url"] != nil {
            var reader = try FieldReader(value, path: path)
            try self.init(firstShape: &reader)
            try reader.finish()
            return
        }
        self = try JSONValueDecoder.decode(TaskSpec.self, from: value, path: path)
    }

    /// The first shape of a spec, as queues written before the request was encoded whole hold it: `url`,
    /// `mirrors`, `path` or `dir`, `createDirectories`, `replaceExisting`, `checksum`, `onChange`, `restart`,
    /// `headers` as `[name, value]` pairs, `options`, `hook`.
    init(firstShape reader: inout FieldReader) throws(SchemaError) {
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
        // The options kept their shape: the same keys then and now.
        if reader.has("options") {
            options = try JSONValueDecoder.decode(TaskOptions.self, from: try reader.value("options"), path: reader.name("options"))
        }
        reader.ignore("options")
        hook = try reader.optionalString("hook", maximumBytes: 8192)
    }
}

/// Only the fields that differ from the defaults, so that records stay small and a default changed in a later
/// version applies to tasks that never chose. Durations are whole milliseconds (`...Ms`); a stall timeout of 0
/// is none. The keys are those of the first specs (`connections`, `minSegment`, `userAgent`,
/// `connectTimeoutMs`, `stallTimeoutMs`, `maxTimeMs`, `caFile`, `caPath`, `insecure`, `rateLimit`,
/// `triesPerRange`, `retries`, `speedLimit`/`speedTime`, `sync`, `checkpointBytes`, `checkpointIntervalMs`)
/// and, for the rest of `timeouts`, `tls` and `retry`: `tlsHandshakeTimeoutMs` (default: the connect
/// timeout), `headTimeoutMs`, `tlsMinimumVersion` (`"1.2"`, `"1.3"`), `alpn`, `tlsSessionResumption`,
/// `retryBaseDelayMs`, `retryMaxDelayMs`, `maxRetryAfterMs`.
extension TaskOptions: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case connections, minSegment, userAgent
        case connectTimeoutMs, tlsHandshakeTimeoutMs, stallTimeoutMs, headTimeoutMs, maxTimeMs
        case caFile, caPath, insecure, tlsMinimumVersion, alpn, tlsSessionResumption
        case rateLimit
        case triesPerRange, retries, retryBaseDelayMs, retryMaxDelayMs, maxRetryAfterMs
        case speedLimit, speedTime
        case sync, checkpointBytes, checkpointIntervalMs
        case resolve, connectTo, ipVersion, interface, clientCert, clientKey
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        let defaults = TaskOptions()
        func put<Value: Encodable & Equatable>(_ value: Value, _ fallback: Value, _ key: CodingKeys) throws {
            if value != fallback { try container.encode(value, forKey: key) }
        }
        try put(connections, defaults.connections, .connections)
        try put(minimumSegment, defaults.minimumSegment, .minSegment)
        try put(userAgent, defaults.userAgent, .userAgent)
        try put(timeouts.connect.milliseconds, defaults.timeouts.connect.milliseconds, .connectTimeoutMs)
        try put(timeouts.tlsHandshake.milliseconds, timeouts.connect.milliseconds, .tlsHandshakeTimeoutMs)
        try put(timeouts.idle?.milliseconds ?? 0, defaults.timeouts.idle?.milliseconds ?? 0, .stallTimeoutMs)
        try container.encodeIfPresent(timeouts.head?.milliseconds, forKey: .headTimeoutMs)
        try container.encodeIfPresent(totalTimeout?.milliseconds, forKey: .maxTimeMs)
        try container.encodeIfPresent(tls.caFile, forKey: .caFile)
        try container.encodeIfPresent(tls.caDirectory, forKey: .caPath)
        try put(tls.insecure, defaults.tls.insecure, .insecure)
        try put(tls.minimumVersion == .tls13 ? "1.3" : "1.2", defaults.tls.minimumVersion == .tls13 ? "1.3" : "1.2", .tlsMinimumVersion)
        try put(tls.applicationProtocols, defaults.tls.applicationProtocols, .alpn)
        try put(tls.resumesSessions, defaults.tls.resumesSessions, .tlsSessionResumption)
        try container.encodeIfPresent(rateLimit, forKey: .rateLimit)
        try put(retry.triesPerRange, defaults.retry.triesPerRange, .triesPerRange)
        try put(retry.totalRetries, defaults.retry.totalRetries, .retries)
        try put(retry.baseDelay.milliseconds, defaults.retry.baseDelay.milliseconds, .retryBaseDelayMs)
        try put(retry.maxDelay.milliseconds, defaults.retry.maxDelay.milliseconds, .retryMaxDelayMs)
        try put(retry.maxRetryAfter.milliseconds, defaults.retry.maxRetryAfter.milliseconds, .maxRetryAfterMs)
        if lowSpeedLimit != defaults.lowSpeedLimit {
            // Turned off: `speedLimit` 0, alone.
            try container.encode(lowSpeedLimit?.bytesPerSecond ?? 0, forKey: .speedLimit)
            try container.encodeIfPresent(lowSpeedLimit?.seconds, forKey: .speedTime)
        }
        try put(synchronizesToDisk, defaults.synchronizesToDisk, .sync)
        try put(checkpointBytes, defaults.checkpointBytes, .checkpointBytes)
        try put(checkpointInterval.milliseconds, defaults.checkpointInterval.milliseconds, .checkpointIntervalMs)
        // In curl's syntax, as the command line gave them (and read back with the same parsers).
        try put(network.resolve.map(\.text), [], .resolve)
        try put(network.connectTo.map(\.text), [], .connectTo)
        try container.encodeIfPresent(network.addressFamily.map { $0 == .ipv4 ? 4 : 6 }, forKey: .ipVersion)
        try container.encodeIfPresent(network.interface?.text, forKey: .interface)
        try container.encodeIfPresent(tls.clientCertificate?.certificateFile, forKey: .clientCert)
        try container.encodeIfPresent(tls.clientCertificate?.keyFile, forKey: .clientKey)
    }

    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func integer(_ key: CodingKeys, in range: ClosedRange<Int64>) throws -> Int64? {
            guard let value = try container.decodeIfPresent(Int64.self, forKey: key) else { return nil }
            guard range.contains(value) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container,
                                                       debugDescription: "\(value) is outside \(range.lowerBound)...\(range.upperBound)")
            }
            return value
        }
        func milliseconds(_ key: CodingKeys, in range: ClosedRange<Int64>) throws -> Duration? {
            try integer(key, in: range).map { .milliseconds($0) }
        }
        let day: ClosedRange<Int64> = 1...86_400_000
        if let value = try integer(.connections, in: 1...64) { connections = Int(value) }
        if let value = try integer(.minSegment, in: 1...(1 << 40)) { minimumSegment = value }
        if let value = try container.decodeIfPresent(String.self, forKey: .userAgent) {
            guard value.utf8.count <= 1024 else {
                throw DecodingError.dataCorruptedError(forKey: .userAgent, in: container, debugDescription: "longer than 1024 bytes")
            }
            userAgent = value
        }
        if let value = try milliseconds(.connectTimeoutMs, in: day) { (timeouts.connect, timeouts.tlsHandshake) = (value, value) }
        if let value = try milliseconds(.tlsHandshakeTimeoutMs, in: day) { timeouts.tlsHandshake = value }
        if let value = try integer(.stallTimeoutMs, in: 0...86_400_000) { timeouts.idle = value == 0 ? nil : .milliseconds(value) }
        timeouts.head = try milliseconds(.headTimeoutMs, in: day)
        totalTimeout = try milliseconds(.maxTimeMs, in: 1...(Int64(365) * 86_400_000))
        tls.caFile = try container.decodeIfPresent(String.self, forKey: .caFile)
        tls.caDirectory = try container.decodeIfPresent(String.self, forKey: .caPath)
        tls.insecure = try container.decodeIfPresent(Bool.self, forKey: .insecure) ?? false
        switch try container.decodeIfPresent(String.self, forKey: .tlsMinimumVersion) {
        case nil, "1.2": tls.minimumVersion = .tls12
        case "1.3": tls.minimumVersion = .tls13
        case let other?:
            throw DecodingError.dataCorruptedError(forKey: .tlsMinimumVersion, in: container, debugDescription: "expected 1.2 or 1.3, found \"\(other)\"")
        }
        if let protocols = try container.decodeIfPresent([String].self, forKey: .alpn) {
            guard protocols.count <= 16, protocols.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 255 }) else {
                throw DecodingError.dataCorruptedError(forKey: .alpn, in: container, debugDescription: "at most 16 protocol names of 1 to 255 bytes")
            }
            tls.applicationProtocols = protocols
        }
        tls.resumesSessions = try container.decodeIfPresent(Bool.self, forKey: .tlsSessionResumption) ?? true
        rateLimit = try integer(.rateLimit, in: 1...(Int64(1) << 50))
        if let value = try integer(.triesPerRange, in: 1...Int64(Self.mostTriesPerRange)) { retry.triesPerRange = Int(value) }
        if let value = try integer(.retries, in: 0...1_000_000) { retry.totalRetries = Int(value) }
        if let value = try milliseconds(.retryBaseDelayMs, in: day) { retry.baseDelay = value }
        if let value = try milliseconds(.retryMaxDelayMs, in: day) { retry.maxDelay = value }
        if let value = try milliseconds(.maxRetryAfterMs, in: day) { retry.maxRetryAfter = value }
        let speed = try integer(.speedLimit, in: 0...(Int64(1) << 50))
        let time = try integer(.speedTime, in: 1...86_400)
        switch (speed, time) {
        case (nil, nil): break
        case (0, nil): lowSpeedLimit = nil
        case (let speed?, let time?) where speed > 0: lowSpeedLimit = LowSpeedLimit(bytesPerSecond: speed, seconds: Int(time))
        default:
            throw DecodingError.dataCorruptedError(forKey: .speedLimit, in: container,
                                                   debugDescription: "speedLimit and speedTime go together (speedLimit 0 alone: no limit)")
        }
        synchronizesToDisk = try container.decodeIfPresent(Bool.self, forKey: .sync) ?? true
        if let value = try integer(.checkpointBytes, in: 1...(Int64(1) << 40)) { checkpointBytes = value }
        if let value = try milliseconds(.checkpointIntervalMs, in: day) { checkpointInterval = value }
        func texts(_ key: CodingKeys) throws -> [String] {
            let texts = try container.decodeIfPresent([String].self, forKey: key) ?? []
            guard texts.count <= 256, texts.allSatisfy({ $0.utf8.count <= 4096 }) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "at most 256 rules of at most 4096 bytes")
            }
            return texts
        }
        func parsed<Rule>(_ key: CodingKeys, _ parse: (String) throws -> Rule) throws -> [Rule] {
            try texts(key).map { text in
                do { return try parse(text) } catch {
                    throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(error)")
                }
            }
        }
        network.resolve = try parsed(.resolve) { try ResolveRule(parsing: $0) }
        network.connectTo = try parsed(.connectTo) { try ConnectToRule(parsing: $0) }
        switch try integer(.ipVersion, in: 4...6) {
        case nil: break
        case 4: network.addressFamily = .ipv4
        case 6: network.addressFamily = .ipv6
        default: throw DecodingError.dataCorruptedError(forKey: .ipVersion, in: container, debugDescription: "expected 4 or 6")
        }
        if let text = try container.decodeIfPresent(String.self, forKey: .interface) {
            do { network.interface = try NetworkInterface(parsing: text) } catch {
                throw DecodingError.dataCorruptedError(forKey: .interface, in: container, debugDescription: "\(error)")
            }
        }
        let key = try container.decodeIfPresent(String.self, forKey: .clientKey)
        if let certificate = try container.decodeIfPresent(String.self, forKey: .clientCert) {
            tls.clientCertificate = TLSSettings.ClientCertificate(certificateFile: certificate, keyFile: key)
        } else if key != nil {
            throw DecodingError.dataCorruptedError(forKey: .clientKey, in: container, debugDescription: "a key needs clientCert")
        }
    }
}
