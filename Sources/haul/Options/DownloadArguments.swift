import ArgumentParser
import Haul
import HaulCommandLine
import HaulHTTP
import HaulIO
import HaulSessions
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The options of one download, for `haul` and `haul queue add` alike: one declaration each, grouped by
/// topic for `--help`, and one mapping to the engine's ``DownloadOptions`` and ``DownloadRequest``
/// (``downloadOptions(urlsPerDownload:jobs:)``, ``requests()``). The options only `haul` has (the proxy,
/// progress, lists) are its own groups, under the same titles.
struct DownloadArguments: ParsableArguments {
    @OptionGroup(title: "Output") var output: OutputOptions
    @OptionGroup(title: "Connections") var connection: ConnectionOptions
    @OptionGroup(title: "Network") var network: NetworkOptions
    @OptionGroup(title: "TLS") var tls: TLSOptions
    @OptionGroup(title: "Retries and timeouts") var retry: RetryOptions

    /// The engine options these flags ask for. `urlsPerDownload` is the most URLs one download has (its
    /// mirrors included), for ``RetryPolicy/commandLine(retries:urls:)``; `jobs` the downloads run at once,
    /// for the client's connection cap.
    func downloadOptions(urlsPerDownload: Int, jobs: Int = 1) throws(UsageError) -> DownloadOptions {
        var options = DownloadOptions()
        options.userAgent = network.userAgent
        options.headers = try network.header.map(Self.parseHeader)
        let connectTimeout = try SecondsSetting.duration(retry.connectTimeout, option: "--connect-timeout")
        options.timeouts = ConnectionTimeouts(connect: connectTimeout, tlsHandshake: connectTimeout,
                                              idle: try SecondsSetting.duration(retry.stallTimeout, option: "--stall-timeout"))
        if let maxTime = retry.maxTime { options.totalTimeout = try SecondsSetting.duration(maxTime, option: "--max-time") }
        do {
            options.lowSpeedLimit = try LowSpeedLimit.commandLine(speedLimit: retry.speedLimit, speedTime: retry.speedTime)
        } catch {
            throw UsageError("\(error)")
        }
        options.tls.caFile = tls.cacert
        options.tls.caDirectory = tls.capath
        options.tls.insecure = tls.insecure
        options.tls.clientCertificate = try tls.clientCertificate()
        options.network = try network.settings()
        options.synchronizesToDisk = !output.noSync
        let connections = connection.connections
        guard connections >= 1, connections <= 64 else { throw UsageError("--connections must be between 1 and 64, not \(connections)") }
        guard (retry.retries ?? 0) >= 0 else { throw UsageError("--retries must not be negative") }
        options.connections = connections
        options.maximumConnections = max(64, connections * min(jobs, 8))
        if let minSegment = connection.minSegment { options.minimumSegment = minSegment.bytes }
        options.rateLimit = connection.limitRate?.bytesPerSecond  // `--limit-rate 0` is nil: no limit
        if let checkpointBytes = output.checkpointBytes { options.checkpointBytes = checkpointBytes.bytes }
        if let checkpointInterval = output.checkpointInterval {
            options.checkpointInterval = try SecondsSetting.duration(checkpointInterval, option: "--checkpoint-interval")
        }
        options.retry = RetryPolicy.commandLine(retries: retry.retries, urls: urlsPerDownload)
        return options
    }

    /// `--url-command` with its timeout, checked; nil without one.
    func urlCommand() throws(UsageError) -> URLCommand? {
        guard let command = retry.urlCommand else {
            if retry.urlCommandTimeout != nil { throw UsageError("--url-command-timeout needs --url-command") }
            return nil
        }
        guard !command.allSatisfy({ $0 == " " || $0 == "\t" }) else { throw UsageError("--url-command must not be empty") }
        let seconds = retry.urlCommandTimeout ?? Double(URLCommand.defaultTimeout.components.seconds)
        guard seconds >= 0.001, seconds <= 86_400 else {
            throw UsageError("--url-command-timeout must be between 0.001 and 86400 seconds, not \(seconds)")
        }
        return URLCommand(command, timeout: .milliseconds(Int64(seconds * 1000)))
    }

    /// What every download of the run shares beyond the engine options, checked: the checksum, what to do
    /// with an existing or changed file, and the credentials (`-u` asks for a missing password here, once;
    /// the netrc file is read here). Reads files: call it off the cooperative pool.
    func requests() throws(UsageError) -> RequestMaker {
        var checksum: Checksum?
        if let text = output.checksum {
            do { checksum = try Checksum(text) } catch { throw UsageError("--\(error)") }
        }
        let headers = try network.header.map(Self.parseHeader)
        var condition: TimeCondition?
        if let text = output.timeCondition {
            let outputPaths = output.output.map { [$0, RequestMaker.join(output.dir, $0)] } ?? []
            do {
                condition = try TimeCondition.parse(text, outputPaths: outputPaths) { FileDescriptor.modificationTime(ofPath: $0) }
            } catch {
                throw UsageError(error.description)
            }
        }
        var modifiedSince: HTTPDate?
        if case .modifiedSince(let date) = condition { modifiedSince = date }
        return RequestMaker(
            onlyIfChanged: output.timestamping || condition == .outputFile, modifiedSince: modifiedSince,
            setsRemoteTime: output.remoteTime,
            checksum: checksum, replacesExisting: output.allowOverwrite, ifChangedOnServer: output.onChange.policy,
            discardsPartialDownload: output.restart,
            authorizes: headers.contains { $0.name.lowercased() == "authorization" },
            user: try PasswordPrompt.completed(network.user),
            netrc: try Self.loadNetrc(netrc: network.netrc, netrcFile: network.netrcFile))
    }

    /// The URLs as given, with `http://` added where they have no scheme; each checked. `parallel`: each is its
    /// own download (`-Z`), not a mirror of the first.
    static func checkedURLs(_ urls: [String], parallel: Bool, command: String) throws(UsageError) -> [String] {
        guard !urls.isEmpty else { throw UsageError("no URL given (see \(command) --help)") }
        let given = urls.map(URLText.withDefaultScheme)
        for (index, text) in given.enumerated() {
            try checkURL(text, typed: urls[index], where: index == 0 || parallel ? "URL" : "mirror URL")
        }
        return given
    }

    /// Checks that `text` (as typed, or with `http://` added: then `typed` is what the user wrote) is a URL
    /// the engine can fetch.
    static func checkURL(_ text: String, typed: String? = nil, where place: String) throws(UsageError) {
        if let column = URLText.interiorSpaceColumn(in: Substring(typed ?? text)) {
            throw UsageError("\(place) \"\(TerminalText.sanitized(typed ?? text))\" has a space at column \(column): write it as %20 (or give the URLs as separate arguments)")
        }
        do { _ = try HTTPURL(text) } catch {
            throw UsageError("\(place) \"\(TerminalText.sanitized(typed ?? text))\" is not a usable http(s) URL: \(error)")
        }
    }

    static func parseHeader(_ text: String) throws(UsageError) -> (name: String, value: String) {
        guard let colon = text.firstIndex(of: ":") else {
            throw UsageError("header \"\(text)\" is not 'Name: value'")
        }
        let name = String(text[..<colon])
        if name.lowercased() == "host" { throw UsageError(NetworkFlags.hostHeaderAnswer) }
        let value = String(text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
        let probe = RequestHead(method: .get, url: try! HTTPURL("http://localhost/"), userAgent: "haul", headers: HTTPFields([(name, value)]))
        do { _ = try probe.serialized() } catch { throw UsageError("header \"\(text)\" cannot be sent: \(error)") }
        return (name, value)
    }

    /// The netrc file `netrcFile` (`--netrc-file`), else `~/.netrc` when `netrc` (`--netrc`), parsed; nil
    /// when neither is given. Warns when others can read it.
    static func loadNetrc(netrc: Bool, netrcFile: String?) throws(UsageError) -> Netrc? {
        let path: String
        if let netrcFile {
            path = netrcFile
        } else if netrc {
            guard let home = getenv("HOME").map({ String(cString: $0) }) else { throw UsageError("--netrc: HOME is not set") }
            path = home + "/.netrc"
        } else {
            return nil
        }
        let text: String
        do { text = try TextFile.read(path) } catch { throw UsageError("cannot read netrc file \(path): \(error)") }
        if let permissions = FilePath(path).existingStatus()?.permissions, permissions.rawValue & 0o077 != 0 {
            StandardError.write(ErrorText.line("warning: \(path) can be read by other users; the passwords in it are not private") + "\n")
        }
        do { return try Netrc(parsing: text) } catch { throw UsageError("\(path): \(error)") }
    }
}

/// Makes the request of each download of a run from what its options share (``DownloadArguments/requests()``).
struct RequestMaker {
    /// `-N` (or `-z OUTPUT`): ``DownloadRequest/onlyIfChanged``; a server-named file is named from the URL.
    var onlyIfChanged = false
    /// `-z DATE` (or `-z FILE` of another file: its time): ``DownloadRequest/modifiedSince``.
    var modifiedSince: HTTPDate?
    /// `-R`.
    var setsRemoteTime = false
    /// `--follow-metalink` (the default; `haul` only): ``DownloadRequest/followsMetalink`` for every download
    /// but one to standard output.
    var followsMetalink = false
    var checksum: Checksum?
    var replacesExisting: Bool
    var ifChangedOnServer: ChangePolicy
    var discardsPartialDownload: Bool
    /// Whether a `-H 'Authorization: …'` was given: then neither `-u` nor the netrc file adds another.
    var authorizes: Bool
    /// `-u`, its password completed.
    var user: String?
    var netrc: Netrc?

    /// The download of `url` (with `mirrors`) into `output` (`-o`, `out=NAME`; nil: named by the server) in
    /// `dir`: `-` is standard output, a directory (an existing one, or a path ending in `/`) is saved into.
    /// `parsed` is `url` parsed already (an input file's entry), so that it is not parsed again here nor by
    /// the engine.
    func download(_ url: String, parsed: HTTPURL? = nil, mirrors: [String], output: String?, dir: String?,
                  source: ErrorText.Source) -> CommandPlan.Download {
        // Parsed at most once here, and only when something needs it (an input file's entry comes parsed).
        var parsedOnce = parsed, parseTried = parsed != nil
        func parsedURL() -> HTTPURL? {
            if !parseTried {
                parseTried = true
                parsedOnce = try? HTTPURL(url)
            }
            return parsedOnce
        }
        func nameFromURL() -> String { parsedURL().map(SuggestedFileName.forURL) ?? "index.html" }
        let destination: DownloadRequest.Destination
        switch output {
        case "-": destination = .stream(.standardOutput)  // curl's and wget's `-o -`: in order to stdout
        case let output?:
            let path = Self.join(dir, output)
            // `-o DIR` or `-o DIR/` means "into DIR", as curl's --output-dir and wget's -P: a file cannot be
            // renamed over a directory, and `DIR/` would otherwise name a hidden `DIR/.part`.
            destination = OutputDirectory.means(path) ? .directory(path) : .file(path)
        case nil where onlyIfChanged:
            // The file asked about must be known before the probe: named from the URL, as wget -N names it.
            destination = .file(Self.join(dir, nameFromURL()))
        case nil: destination = .directory(dir ?? ".")
        }
        var request = DownloadRequest(url: url, mirrors: mirrors, destination: destination, createsDirectories: true,
                                      replacesExisting: replacesExisting, checksum: checksum,
                                      ifChangedOnServer: ifChangedOnServer, discardsPartialDownload: discardsPartialDownload)
        request.onlyIfChanged = onlyIfChanged
        request.modifiedSince = modifiedSince
        request.setsRemoteTime = setsRemoteTime
        if case .stream = destination {} else { request.followsMetalink = followsMetalink }
        if let parsed { request.parsedURL = parsed }
        if !authorizes, let authorization = Self.authorization(for: url, parsed: parsedURL, user: user, netrc: netrc) {
            request.headers.append(("Authorization", authorization))
        }
        // The file's path in a directory is predicted from the URL only when asked (``CommandPlan/Download/expectedPath``).
        return CommandPlan.Download(request: request, source: source, expectedPath: nil)
    }

    /// `-u` wins; else the netrc entry for the URL's host (for the URL's own user, when it names one); a
    /// URL with its own password needs neither. The engine sends the result to that URL's origin only.
    /// `parsed` gives `url` parsed, asked only when a netrc file is read.
    static func authorization(for url: String, parsed: () -> HTTPURL? = { nil }, user: String?, netrc: Netrc?) -> String? {
        if let user {
            let parts = user.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return BasicAuthorization.fieldValue(user: String(parts[0]), password: parts.count > 1 ? String(parts[1]) : "")
        }
        guard let netrc, let parsed = parsed() ?? (try? HTTPURL(url)), parsed.userInfo?.password == nil,
              let found = netrc.credentials(forHost: parsed.host.name, user: parsed.userInfo?.user) else { return nil }
        return BasicAuthorization.fieldValue(user: found.login, password: found.password)
    }

    /// `name` inside `directory` (an absolute `name` stays as it is).
    static func join(_ directory: String?, _ name: String) -> String {
        guard let directory, !name.hasPrefix("/") else { return name }
        return directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
