import Haul
import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// Everything the command line asked for, checked: client options, the downloads, and how to report.
struct CommandPlan {
    enum ProgressStyle {
        /// A live bar, redrawn in place (stderr is a terminal).
        case bar
        /// An occasional plain line (stderr is a file or pipe).
        case plain
        case json
        case none
    }

    var options: DownloadOptions
    var requests: [DownloadRequest]
    var jobs: Int
    var progress: ProgressStyle
}

extension HaulCommand {
    func plan() throws -> CommandPlan {
        var options = DownloadOptions()
        options.userAgent = userAgent
        options.headers = try header.map(Self.parseHeader)
        options.timeouts = ConnectionTimeouts(connect: .seconds(connectTimeout), tlsHandshake: .seconds(connectTimeout),
                                              idle: .seconds(stallTimeout))
        options.totalTimeout = maxTime.map { .seconds($0) }
        if speedLimit != nil || speedTime != nil {
            options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: speedLimit?.bytes ?? 1, seconds: speedTime ?? 30)
        }
        options.tls.caFile = cacert
        options.tls.caDirectory = capath
        options.tls.insecure = insecure
        options.synchronizesToDisk = !noSync
        guard connections >= 1, connections <= 64 else { throw UsageError("--connections must be between 1 and 64, not \(connections)") }
        guard jobs >= 1, jobs <= 256 else { throw UsageError("--jobs must be between 1 and 256, not \(jobs)") }
        guard retries >= 0 else { throw UsageError("--retries must not be negative") }
        options.connections = connections
        options.maximumConnections = max(64, connections * min(jobs, 8))
        if let minSegment { options.minimumSegment = minSegment.bytes }
        options.rateLimit = limitRate?.bytesPerSecond
        options.retry = retries == 0 ? .none : RetryPolicy(triesPerRange: min(5, retries + 1), totalRetries: retries)
        if let checkpointBytes { options.checkpointBytes = checkpointBytes.bytes }
        if let checkpointInterval { options.checkpointInterval = .seconds(checkpointInterval) }

        let expected: Checksum?
        if let checksum {
            guard let parsed = Checksum(checksum) else {
                throw UsageError("--checksum \"\(checksum)\" is not ALGO=HEX with ALGO sha256, sha1 or md5 and a digest of the right length")
            }
            expected = parsed
        } else {
            expected = nil
        }

        var requests: [DownloadRequest] = []
        func request(_ url: String, mirrors: [String], destination: DownloadRequest.Destination) -> DownloadRequest {
            DownloadRequest(url: url, mirrors: mirrors, destination: destination, createsDirectories: true,
                            replacesExisting: allowOverwrite, checksum: expected, onChange: onChange.policy,
                            discardsPartialDownload: restart)
        }
        if let inputFile {
            guard urls.isEmpty else { throw UsageError("give URLs either on the command line or with --input-file, not both") }
            guard output == nil else { throw UsageError("--output names one file; with --input-file use out=NAME lines and --dir") }
            guard checksum == nil else { throw UsageError("--checksum applies to one file; it cannot be used with --input-file") }
            let text: String
            do { text = try TextFile.read(inputFile) } catch { throw UsageError("cannot read --input-file \(inputFile): \(error)") }
            let entries: [InputEntry]
            do { entries = try InputFile.parse(text) } catch { throw UsageError("\(inputFile): \(error)") }
            guard !entries.isEmpty else { throw UsageError("\(inputFile) lists no URLs") }
            for entry in entries {
                try Self.checkURL(entry.url, where: "\(inputFile) line \(entry.line)")
                let destination: DownloadRequest.Destination
                if let name = entry.outputName {
                    destination = .file(Self.join(dir, name))
                } else {
                    destination = .directory(dir ?? ".")
                }
                requests.append(request(entry.url, mirrors: entry.mirrors, destination: destination))
            }
        } else {
            guard let url = urls.first else { throw UsageError("no URL given (see haul --help)") }
            for (index, text) in urls.enumerated() {
                try Self.checkURL(text, where: index == 0 ? "URL" : "mirror URL")
            }
            let destination: DownloadRequest.Destination = output.map { .file(Self.join(dir, $0)) } ?? .directory(dir ?? ".")
            requests.append(request(url, mirrors: Array(urls.dropFirst()), destination: destination))
        }

        let style: CommandPlan.ProgressStyle
        switch (quiet, progress) {
        case (true, _), (_, .some(.none)): style = .none
        case (_, .some(.json)): style = .json
        case (_, .some(.bar)), (_, nil): style = isatty(2) == 1 ? .bar : .plain
        }
        return CommandPlan(options: options, requests: requests, jobs: jobs, progress: style)
    }

    static func checkURL(_ text: String, where place: String) throws {
        do { _ = try HTTPURL(text) } catch { throw UsageError("\(place) \"\(text)\" is not a usable http(s) URL: \(error)") }
    }

    static func parseHeader(_ text: String) throws -> (name: String, value: String) {
        guard let colon = text.firstIndex(of: ":") else {
            throw UsageError("header \"\(text)\" is not 'Name: value'")
        }
        let name = String(text[..<colon])
        let value = String(text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
        let probe = RequestHead(method: .get, url: try! HTTPURL("http://localhost/"), userAgent: "haul", headers: HTTPFields([(name, value)]))
        do { _ = try probe.serialized() } catch { throw UsageError("header \"\(text)\" cannot be sent: \(error)") }
        return (name, value)
    }

    /// `name` inside `directory` (an absolute `name` stays as it is).
    static func join(_ directory: String?, _ name: String) -> String {
        guard let directory, !name.hasPrefix("/") else { return name }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

/// Reads a small text file (an input list) without Foundation.
enum TextFile {
    struct ReadError: Error, CustomStringConvertible {
        var errno: Int32
        var description: String { String(cString: strerror(errno)) }
    }

    static func read(_ path: String) throws -> String {
        guard let file = fopen(path, "rb") else { throw ReadError(errno: errno) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count > 0 { bytes.append(contentsOf: buffer[..<count]) }
            if count < buffer.count {
                if ferror(file) != 0 { throw ReadError(errno: errno) }
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
