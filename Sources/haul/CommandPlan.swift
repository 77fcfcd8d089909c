import Haul
import HaulCommandLine

#if canImport(Glibc)
import Glibc
import HaulHTTP
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

    /// How errors and outcomes are written: text lines, or (`--progress json`, even with `-q`) JSON objects.
    enum MessageFormat {
        case text
        case json
    }

    /// One download and what the CLI knows about it beyond the engine's request.
    struct Download {
        var request: DownloadRequest
        /// Where its URLs came from, for the advice that goes with a mirror mismatch.
        var source: ErrorText.Source
        /// Where the file will be: named on the command line (`-o`, `out=NAME`), or predicted from the URL
        /// for a directory download (the server may still name it otherwise). Checked for an existing file
        /// before the download starts.
        var expectedPath: String
    }

    var options: DownloadOptions
    var downloads: DownloadList
    var jobs: Int
    var progress: ProgressStyle
    var messages: MessageFormat
    /// `--verbose`: the engine's debug records go to stderr.
    var verbose = false
    /// `--skip-existing`: an existing destination counts as already complete.
    var skipsExisting: Bool

    /// Whether a download that used one connection can only have done so because the server refused
    /// ranges: more than one connection was asked for, no other download of this run competes for them,
    /// and this run fetched more than two minimum segments (ranges would then have given two connections
    /// at least; a resume that had less left also uses one).
    func usedOneConnectionForLackOfRanges(_ result: DownloadResult) -> Bool {
        guard options.connections > 1, result.connections == 1 else { return false }
        let competing = downloads.count > 1 && min(jobs, downloads.count) * options.connections > options.maximumConnections
        return !competing && min(result.bytesRequested, result.bytes) > 2 * options.minimumSegment
    }
}

extension HaulCommand {
    func plan() throws -> CommandPlan {
        var options = DownloadOptions()
        options.userAgent = userAgent
        options.headers = try header.map(Self.parseHeader)
        options.timeouts = ConnectionTimeouts(connect: .seconds(connectTimeout), tlsHandshake: .seconds(connectTimeout),
                                              idle: .seconds(stallTimeout))
        options.totalTimeout = maxTime.map { .seconds($0) }
        do {
            options.lowSpeedLimit = try LowSpeedLimit.commandLine(speedLimit: speedLimit, speedTime: speedTime)
        } catch {
            throw UsageError("\(error)")
        }
        do {
            let settings = try ProxySettings.forCommandLine(proxy: proxy, noProxy: noproxy,
                                                            environment: ProxySettings.processEnvironment())
            options.proxy = settings.isDirect ? nil : settings
        } catch {
            throw UsageError("\(error)")
        }
        options.tls.caFile = cacert
        options.tls.caDirectory = capath
        options.tls.insecure = insecure
        options.synchronizesToDisk = !noSync
        guard connections >= 1, connections <= 64 else { throw UsageError("--connections must be between 1 and 64, not \(connections)") }
        guard jobs >= 1, jobs <= 256 else { throw UsageError("--jobs must be between 1 and 256, not \(jobs)") }
        guard (retries ?? 0) >= 0 else { throw UsageError("--retries must not be negative") }
        options.connections = connections
        options.maximumConnections = max(64, connections * min(jobs, 8))
        if let minSegment { options.minimumSegment = minSegment.bytes }
        options.rateLimit = limitRate?.bytesPerSecond  // `--limit-rate 0` is nil: no limit
        if let checkpointBytes { options.checkpointBytes = checkpointBytes.bytes }
        if let checkpointInterval { options.checkpointInterval = .seconds(checkpointInterval) }

        let expected: Checksum?
        if let checksum {
            let parsed: Checksum
            do { parsed = try Checksum(checksum) } catch {
                throw UsageError("--\(error)")
            }
            expected = parsed
        } else {
            expected = nil
        }

        guard !(skipExisting && allowOverwrite) else {
            throw UsageError("--skip-existing and --allow-overwrite contradict each other; give one of them")
        }
        let netrcFile = try loadNetrc()
        let explicitAuthorization = options.headers.contains { $0.name.lowercased() == "authorization" }
        var downloads: [CommandPlan.Download] = []
        guard dir == nil || wgetDirectoryPrefix == nil else { throw UsageError("give -d/--dir or wget's -P, not both") }
        let dir = self.dir ?? wgetDirectoryPrefix
        let allowOverwrite = self.allowOverwrite
        let onChange = self.onChange.policy
        let restart = self.restart
        // Asked once, before any download: `-u alice` prompts on a terminal, fails without one.
        let user = try PasswordPrompt.completed(self.user)
        func make(_ url: String, mirrors: [String], output: String?, source: ErrorText.Source) -> CommandPlan.Download {
            let destination: DownloadRequest.Destination
            switch output {
            case "-": destination = .stream(.standardOutput)  // curl's and wget's `-o -`: in order to stdout
            case let output?:
                let path = Self.join(dir, output)
                // `-o DIR` or `-o DIR/` means "into DIR", as curl's --output-dir and wget's -P: a file cannot be
                // renamed over a directory, and `DIR/` would otherwise name a hidden `DIR/.part`.
                destination = OutputDirectory.means(path) ? .directory(path) : .file(path)
            case nil: destination = .directory(dir ?? ".")
            }
            var request = DownloadRequest(url: url, mirrors: mirrors, destination: destination, createsDirectories: true,
                                          replacesExisting: allowOverwrite, checksum: expected, ifChangedOnServer: onChange,
                                          discardsPartialDownload: restart)
            if !explicitAuthorization, let authorization = Self.authorization(for: url, user: user, netrc: netrcFile) {
                request.headers.append(("Authorization", authorization))
            }
            let path: String
            switch destination {
            case .file(let file): path = file
            case .stream: path = "-"
            case .memory: path = ""   // never made here: the CLI writes files or a stream
            case .directory(let directory):
                let name = URLText.fileName(forURL: url) ?? "index.html"
                path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            }
            return CommandPlan.Download(request: request, source: source, expectedPath: path)
        }
        func add(_ url: String, mirrors: [String], output: String?, source: ErrorText.Source) {
            downloads.append(make(url, mirrors: mirrors, output: output, source: source))
        }
        var list: DownloadList?
        /// The most URLs one download has (its mirrors included), for ``RetryPolicy/commandLine(retries:urls:)``.
        var urlsPerDownload = parallel ? 1 : urls.count
        if let inputFile {
            guard urls.isEmpty else { throw UsageError("give URLs either on the command line or with --input-file, not both") }
            guard !parallel else {
                throw UsageError("-Z/--parallel is for URLs on the command line; an input file already lists one download per line")
            }
            guard output == nil else { throw UsageError("--output names one file; with --input-file use out=NAME lines and --dir") }
            guard checksum == nil else { throw UsageError("--checksum applies to one file; it cannot be used with --input-file") }
            // Read twice, entry by entry, never whole: once now to check every line and count the entries
            // (a bad line stops the run before any download starts), then again as downloads start.
            let (count, mostURLs) = try InputList.check(inputFile)
            urlsPerDownload = mostURLs
            guard count > 0 else { throw UsageError("\(inputFile) lists no URLs") }
            list = DownloadList(inputFile: inputFile, count: count) { entry in
                make(entry.url, mirrors: entry.mirrors, output: entry.outputName, source: .inputFile)
            }
        } else {
            guard !urls.isEmpty else { throw UsageError("no URL given (see haul --help)") }
            let given = urls.map(URLText.withDefaultScheme)
            for (index, text) in given.enumerated() {
                try Self.checkURL(text, typed: urls[index], where: index == 0 || parallel ? "URL" : "mirror URL")
            }
            if parallel && given.count > 1 {
                guard output == nil else {
                    throw UsageError("--output names one file; with -Z each URL is its own download, named by the server or the URL in --dir")
                }
                guard checksum == nil else { throw UsageError("--checksum applies to one file; it cannot be used with -Z and several URLs") }
                for url in given { add(url, mirrors: [], output: nil, source: .parallel) }
            } else {
                add(given[0], mirrors: Array(given.dropFirst()), output: output, source: parallel ? .parallel : .commandLine)
            }
        }

        // The downloads of a run share the client's options, so one with mirrors gives all the per-mirror bound.
        options.retry = RetryPolicy.commandLine(retries: retries, urls: urlsPerDownload)

        let style: CommandPlan.ProgressStyle
        switch (quiet || curlSilent, progress) {
        case (true, _), (_, .some(.none)): style = .none
        case (_, .some(.json)): style = .json
        // Log lines and a bar redrawn in place would overwrite each other: verbose output gets plain lines.
        case (_, .some(.bar)), (_, nil): style = isatty(2) == 1 && !verbose ? .bar : .plain
        }
        return CommandPlan(options: options, downloads: list ?? DownloadList(downloads), jobs: jobs, progress: style,
                           messages: progress == .json ? .json : .text, verbose: verbose, skipsExisting: skipExisting)
    }

    /// Checks that `text` (as typed, or with `http://` added: then `typed` is what the user wrote) is a URL
    /// the engine can fetch.
    /// `-u` wins; else the netrc entry for the URL's host (for the URL's own user, when it names one); a
    /// URL with its own password needs neither. The engine sends the result to that URL's origin only.
    static func authorization(for url: String, user: String?, netrc: Netrc?) -> String? {
        if let user {
            let parts = user.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            return basic(String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
        }
        guard let netrc, let parsed = try? HTTPURL(url), parsed.userInfo?.password == nil,
              let found = netrc.credentials(forHost: parsed.host.name, user: parsed.userInfo?.user) else { return nil }
        return basic(found.login, found.password)
    }

    private static func basic(_ user: String, _ password: String) -> String {
        BasicAuthorization.fieldValue(user: user, password: password)
    }

    /// The netrc file `--netrc`/`--netrc-file` name, parsed; a warning when others can read it.
    func loadNetrc() throws -> Netrc? {
        try Self.loadNetrc(netrc: netrc, netrcFile: netrcFile)
    }

    /// The netrc file `netrcFile` (`--netrc-file`), else `~/.netrc` when `netrc` (`--netrc`), parsed; nil
    /// when neither is given. Warns when others can read it. For `haul` and `haul queue add` alike.
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
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & 0o077 != 0 {
            StandardError.write(ErrorText.line("warning: \(path) can be read by other users; the passwords in it are not private") + "\n")
        }
        do { return try Netrc(parsing: text) } catch { throw UsageError("\(path): \(error)") }
    }

    static func checkURL(_ text: String, typed: String? = nil, where place: String) throws {
        if let column = URLText.interiorSpaceColumn(in: Substring(typed ?? text)) {
            throw UsageError("\(place) \"\(TerminalText.sanitized(typed ?? text))\" has a space at column \(column): write it as %20 (or give the URLs as separate arguments)")
        }
        do { _ = try HTTPURL(text) } catch {
            throw UsageError("\(place) \"\(TerminalText.sanitized(typed ?? text))\" is not a usable http(s) URL: \(error)")
        }
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

/// Whether an `-o` path names a directory to save into rather than a file: it ends with `/`, or it is an
/// existing directory (a symbolic link to one included).
enum OutputDirectory {
    static func means(_ path: String) -> Bool {
        if path.hasSuffix("/") { return true }
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

/// Reads a small text file (an input list) without Foundation.
enum TextFile {
    struct ReadError: Error, CustomStringConvertible {
        var errno: Int32
        var description: String { SystemError.describe(errno: errno) }
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

/// The downloads of a run, handed out one at a time: from the command line (a few, held), or from an input
/// file read entry by entry, so that memory does not grow with the list's length.
///
/// Used by one task at a time (the run loop), hence @unchecked Sendable.
final class DownloadList: @unchecked Sendable {
    /// How many downloads the list holds (an input file was counted when it was checked).
    let count: Int
    /// A problem met while reading the input file again (it changed since it was checked, or cannot be
    /// read any more): no further download starts.
    private(set) var error: UsageError?
    private var held: [CommandPlan.Download]
    private var reader: InputList?
    private let make: (InputEntry) -> CommandPlan.Download
    private var position = 0

    init(_ downloads: [CommandPlan.Download]) {
        count = downloads.count
        held = downloads
        make = { _ in fatalError("a list given on the command line reads no input file") }
    }

    init(inputFile: String, count: Int, make: @escaping (InputEntry) -> CommandPlan.Download) {
        self.count = count
        held = []
        reader = InputList(path: inputFile)
        self.make = make
    }

    /// The next download and its index (0-based), or nil when there is none left.
    func next() -> (Int, CommandPlan.Download)? {
        let index = position
        guard index < count, error == nil else { return nil }
        if reader == nil {
            position += 1
            return (index, held[index])
        }
        do {
            guard let entry = try reader!.next() else {
                error = UsageError("\(reader!.path) changed while it was being downloaded: it ends after \(index) of its \(count) entries")
                return nil
            }
            position += 1
            return (index, make(entry))
        } catch {
            self.error = error as? UsageError ?? UsageError("\(error)")
            return nil
        }
    }

    /// Where its downloads were listed (the same for every download of one run).
    var source: ErrorText.Source { held.first?.source ?? .inputFile }
}

/// An input file read entry by entry (see ``InputFileReader``), with the CLI's messages for its problems.
final class InputList {
    let path: String
    private var file: UnsafeMutablePointer<FILE>?
    private var reader: InputFileReader?
    private var opened = false

    init(path: String) {
        self.path = path
    }

    deinit {
        if let file { fclose(file) }
    }

    /// Standard input, read whole on first use (``next()`` for `-i -`).
    private static let standardInput: Result<[UInt8], TextFile.ReadError> = {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = Glibc.read(STDIN_FILENO, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(TextFile.ReadError(errno: errno))
            }
            if count == 0 { return .success(bytes) }
            bytes.append(contentsOf: buffer[..<count])
        }
    }()

    /// Reads `path` once through, checking every entry; returns how many there are, and the most URLs one
    /// of them lists (mirrors included).
    static func check(_ path: String) throws -> (count: Int, mostURLs: Int) {
        let list = InputList(path: path)
        var count = 0, mostURLs = 1
        // Every entry's URLs were checked by the list's parser (spaces, then parsed as an HTTPURL) on their
        // way here: checking them again parsed each URL of a long list once more.
        while let entry = try list.next() {
            count += 1
            mostURLs = max(mostURLs, 1 + entry.mirrors.count)
        }
        return (count, mostURLs)
    }

    /// The next entry, or nil at the end; the errors are ``UsageError``s naming the file (and the line).
    func next() throws -> InputEntry? {
        if !opened {
            opened = true
            if path == "-" {
                // `-i -`: the list is checked, then read again as downloads start, and standard input can be
                // read only once: it is held, whole (the price of a list that is piped in).
                let bytes: [UInt8]
                switch Self.standardInput {
                case .success(let read): bytes = read
                case .failure(let error): throw UsageError("cannot read --input-file from standard input: \(error)")
                }
                var offset = 0
                reader = InputFileReader { buffer in
                    let count = min(buffer.count, bytes.count - offset)
                    bytes.withUnsafeBytes { source in
                        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count]))
                    }
                    offset += count
                    return count
                }
                return try next()
            }
            guard let handle = fopen(path, "rb") else {
                throw UsageError("cannot read --input-file \(path): \(TextFile.ReadError(errno: errno))")
            }
            file = handle
            reader = InputFileReader { buffer in
                let count = fread(buffer.baseAddress, 1, buffer.count, handle)
                if count < buffer.count, ferror(handle) != 0 { throw TextFile.ReadError(errno: errno) }
                return count
            }
        }
        guard let reader else { return nil }
        do {
            return try reader.next()
        } catch let error as InputFileError {
            throw UsageError("\(path == "-" ? "standard input" : path): \(error)")
        } catch {
            throw UsageError("cannot read --input-file \(path): \(error)")
        }
    }
}
