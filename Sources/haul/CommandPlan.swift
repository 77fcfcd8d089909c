import Haul
import HaulCommandLine
import HaulIO
import HaulSessions
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
import HaulHTTP
#endif

/// Everything the command line asked for, checked: client options, the downloads, and how to report.
struct CommandPlan {
    typealias ProgressStyle = HaulCommandLine.ProgressStyle
    typealias MessageFormat = HaulCommandLine.MessageFormat

    /// One download and what the CLI knows about it beyond the engine's request.
    ///
    /// A class: a download is handed along several times on its way (made ahead, taken for a free slot, kept
    /// by its end handler, posted to the run loop with its end), and a request is some dozen fields to copy
    /// and retain at each step; a reference is one.
    final class Download: Sendable {
        let request: DownloadRequest
        /// Where its URLs came from, for the advice that goes with a mirror mismatch.
        let source: ErrorText.Source
        /// The path given when the download was made; nil for a directory download, whose file's name is
        /// predicted only when asked (``expectedPath``).
        private let givenPath: String?

        /// `expectedPath`: nil to predict it from the request's URL when asked, as the engine names a file in
        /// a directory.
        init(request: DownloadRequest, source: ErrorText.Source, expectedPath: String?) {
            self.request = request
            self.source = source
            givenPath = expectedPath
        }

        /// Where the file will be: named on the command line (`-o`, `out=NAME`), or predicted from the URL
        /// for a directory download (the server may still name it otherwise). Checked for an existing file
        /// before the download starts.
        ///
        /// Predicted when asked (a list's run asks once per download, when it starts it), not when made.
        var expectedPath: String {
            if let givenPath { return givenPath }
            switch request.destination {
            case .file(let file): return file
            case .stream: return "-"
            case .memory: return ""   // never made here: the CLI writes files or a stream
            case .directory(let directory):
                let name = (request.parsedURL ?? (try? HTTPURL(request.url))).map(SuggestedFileName.forURL) ?? "index.html"
                return directory.hasSuffix("/") ? directory + name : directory + "/" + name
            }
        }
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
    /// `-w`, `-r`, `-I` (``OutputHabitOptions``).
    var habits = OutputHabitPlan()
    /// How to download the files of a Metalink document a URL answers with; nil with `--no-follow-metalink`.
    var followedMetalinks: FollowedMetalinks?
    /// `--url-command`: asked for a fresh URL when one expires mid-download.
    var urlCommand: URLCommand?
    /// The directory downloads are saved into when no path names their file (`-d DIR`, else `.`).
    var destinationDirectory = "."

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
    /// The client's options these flags ask for, proxy included (also what fetches a `-M` URL).
    func clientOptions() throws(UsageError) -> DownloadOptions {
        var options = try download.downloadOptions(urlsPerDownload: 1, jobs: list.jobs)
        do {
            let settings = try ProxySettings.forCommandLine(proxy: proxy.proxy, noProxy: proxy.noproxy,
                                                            environment: ProxyEnvironment.variables())
            options.proxy = settings.isDirect ? nil : settings
        } catch {
            throw UsageError("\(error)")
        }
        return options
    }

    /// `metalink`: the document `-M` named, already read (``MetalinkDocument/load(_:options:)``).
    func plan(metalink: Metalink? = nil) throws(UsageError) -> CommandPlan {
        let output = download.output, list = self.list, parallel = list.parallel
        guard list.jobs >= 1, list.jobs <= 256 else { throw UsageError("--jobs must be between 1 and 256, not \(list.jobs)") }
        guard !(localOutput.skipExisting && output.allowOverwrite) else {
            throw UsageError("--skip-existing and --allow-overwrite contradict each other; give one of them")
        }
        guard output.dir == nil || localOutput.wgetDirectoryPrefix == nil else { throw UsageError("give -d/--dir or wget's -P, not both") }
        let dir = output.dir ?? localOutput.wgetDirectoryPrefix
        // Checked before -u asks for a password or a list is read.
        var options = try clientOptions()
        var downloads: [CommandPlan.Download] = []
        var downloadList: DownloadList?
        /// The most URLs one download has (its mirrors included), for ``RetryPolicy/commandLine(retries:urls:)``.
        var urlsPerDownload = parallel ? 1 : urls.count
        var followMaker: RequestMaker?
        if let metalink {
            guard urls.isEmpty, list.inputFile == nil, !parallel else {
                throw UsageError("--metalink lists the downloads; give no URLs, --input-file or -Z with it")
            }
            guard output.output == nil else { throw UsageError("--output names one file; a Metalink names its files (use --dir)") }
            guard output.checksum == nil else { throw UsageError("--checksum applies to one file; a Metalink gives each file's hash") }
            let maker = try download.requests()
            downloads = try metalink.files.map { file throws(UsageError) in try maker.download(metalinkFile: file, dir: dir) }
            urlsPerDownload = downloads.map { 1 + $0.request.mirrors.count }.max() ?? 1
        } else if let inputFile = list.inputFile {
            guard urls.isEmpty else { throw UsageError("give URLs either on the command line or with --input-file, not both") }
            guard !parallel else {
                throw UsageError("-Z/--parallel is for URLs on the command line; an input file already lists one download per line")
            }
            guard output.output == nil else { throw UsageError("--output names one file; with --input-file use out=NAME lines and --dir") }
            guard output.checksum == nil else { throw UsageError("--checksum applies to one file; it cannot be used with --input-file") }
            // Asked once, before any download: `-u alice` prompts on a terminal, fails without one.
            let maker = try followingRequestMaker()
            followMaker = maker
            // Read entry by entry, never whole, once now to check every line and count the entries (a bad
            // line stops the run before any download starts). The first entries, up to
            // `InputList.heldSizeLimit`, are kept from that reading; the rest of a longer list is read again
            // from where they end as downloads start, so memory does not grow with the list's length.
            let checked: InputList.Checked
            do { checked = try InputList.check(inputFile) } catch { throw error as? UsageError ?? UsageError("\(error)") }
            urlsPerDownload = checked.mostURLs
            guard checked.count > 0 else { throw UsageError("\(inputFile) lists no URLs") }
            downloadList = DownloadList(inputFile: inputFile, checked: checked) { entry in
                maker.download(entry.url, parsed: entry.parsedURL, mirrors: entry.mirrors, output: entry.outputName, dir: dir,
                               source: .inputFile)
            }
        } else {
            let given = try DownloadArguments.checkedURLs(urls, parallel: parallel, command: "haul")
            if parallel && given.count > 1 {
                guard output.output == nil else {
                    throw UsageError("--output names one file; with -Z each URL is its own download, named by the server or the URL in --dir")
                }
                guard output.checksum == nil else { throw UsageError("--checksum applies to one file; it cannot be used with -Z and several URLs") }
                let maker = try followingRequestMaker()
                followMaker = maker
                downloads = given.map { maker.download($0, mirrors: [], output: nil, dir: dir, source: .parallel) }
            } else {
                let maker = try followingRequestMaker()
                followMaker = maker
                downloads = [maker.download(given[0], mirrors: Array(given.dropFirst()), output: output.output, dir: dir,
                                            source: parallel ? .parallel : .commandLine)]
            }
        }

        // The downloads of a run share the client's options, so one with mirrors gives all the per-mirror bound.
        options.retry = RetryPolicy.commandLine(retries: download.retry.retries, urls: urlsPerDownload)

        let style: CommandPlan.ProgressStyle
        let verbose = report.verbose
        switch (report.quiet || curlSilent, report.progress) {
        case (true, _), (_, .some(.none)): style = .none
        case (_, .some(.json)): style = .json
        // Log lines and a bar redrawn in place would overwrite each other: verbose output gets plain lines.
        case (_, .some(.bar)), (_, nil): style = isatty(2) == 1 && !verbose ? .bar : .plain
        }
        var plan = CommandPlan(options: options, downloads: downloadList ?? DownloadList(downloads), jobs: list.jobs, progress: style,
                               messages: report.progress == .json ? .json : .text, verbose: verbose,
                               skipsExisting: localOutput.skipExisting)
        if metalinkList.followMetalink, let followMaker { plan.followedMetalinks = FollowedMetalinks(maker: followMaker, dir: dir) }
        plan.destinationDirectory = dir ?? "."
        plan.urlCommand = try download.urlCommand()
        try planOutputHabits(&plan)
        // A run with downloads at the same time spreads them over one event loop per core (up to 4): a list
        // of small files is bound by one thread's CPU otherwise. A run of one download at a time keeps one.
        plan.options.eventLoops = LaneChoice.laneCount(
            downloadsMayOverlap: list.jobs > 1 && plan.downloads.count > 1 && !plan.habits.isSingleExchange,
            cores: PosixThread.onlineProcessors)
        return plan
    }
}

/// Whether an `-o` path names a directory to save into rather than a file: it ends with `/`, or it is an
/// existing directory (a symbolic link to one included).
enum OutputDirectory {
    static func means(_ path: String) -> Bool {
        if path.hasSuffix("/") { return true }
        return OutputFile.isDirectory(path)
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
/// file: its first entries as checked (each dropped once its download is made), the rest of a long list read
/// again entry by entry, so that memory does not grow with the list's length.
///
/// Thread-safe (its state is behind `lock`): the run loop makes downloads ahead (``prepare(upTo:)``) and
/// whichever thread frees a slot takes the next one.
final class DownloadList: @unchecked Sendable {
    private let lock = Mutex(())
    /// Downloads made ahead, in order: `ready[readyStart...]` come next.
    private var ready: [(Int, CommandPlan.Download)] = []
    private var readyStart = 0
    /// How many taken downloads ``next()`` lets pile up at the front of `ready` before it drops them (each
    /// drop moves the few still waiting).
    static let takenBeforeCompaction = 64
    /// How many downloads the list holds (an input file was counted when it was checked).
    let count: Int
    /// A problem met while reading the input file again (it changed since it was checked, or cannot be
    /// read any more): no further download starts.
    private(set) var error: UsageError?
    private var held: [CommandPlan.Download]
    /// An input file's first entries, kept when it was checked, last first: each is dropped as its download
    /// is made.
    private var heldEntries: [InputEntry]
    /// The rest of the input file, after the held entries (nil when they are all of it).
    private var reader: InputList?
    private let make: (InputEntry) -> CommandPlan.Download
    private var position = 0

    init(_ downloads: [CommandPlan.Download]) {
        count = downloads.count
        held = downloads
        heldEntries = []
        make = { _ in fatalError("a list given on the command line reads no input file") }
    }

    init(inputFile: String, checked: InputList.Checked, make: @escaping (InputEntry) -> CommandPlan.Download) {
        count = checked.count
        held = []
        heldEntries = checked.entries.reversed()
        reader = checked.rest.map { InputList(path: inputFile, resumingAt: $0.offset, afterLine: $0.afterLine) }
        self.make = make
    }

    /// The next download and its index (0-based), or nil when there is none left.
    func next() -> (Int, CommandPlan.Download)? {
        lock.withLock { _ in
            guard readyStart < ready.count else { return made() }
            defer {
                readyStart += 1
                // The taken ones go: the run loop tops the list up between batches, so it may never run empty,
                // and without this every download of the run would stay in memory (about 1 KiB each).
                if readyStart == ready.count {
                    ready.removeAll(keepingCapacity: true)
                    readyStart = 0
                } else if readyStart >= Self.takenBeforeCompaction {
                    ready.removeFirst(readyStart)
                    readyStart = 0
                }
            }
            return ready[readyStart]
        }
    }

    /// How many downloads the list holds made (taken ones not yet dropped, and those waiting): bounded by
    /// ``takenBeforeCompaction`` and what ``prepare(upTo:)`` asks for, whatever the list's length.
    var madeHeld: Int { lock.withLock { _ in ready.count } }

    /// How many of the input file's entries the list still holds as checked (not made into downloads yet):
    /// at most what fits in ``InputList/heldSizeLimit``, fewer as the run goes.
    var entriesHeld: Int { lock.withLock { _ in heldEntries.count } }

    /// Makes the next downloads (their requests, their expected paths) ahead, on the caller's thread, until
    /// `count` are ready: the run loop does this between batches, so that the thread that starts them (the
    /// event loop, which runs every transfer) only takes them. One at a time under the lock, so that a
    /// `next()` meanwhile waits for one at most.
    func prepare(upTo count: Int) {
        while lock.withLock({ _ -> Bool in
            guard ready.count - readyStart < count, let download = made() else { return false }
            ready.append(download)
            return true
        }) {}
    }

    /// The next download made from the list (under `lock`).
    private func made() -> (Int, CommandPlan.Download)? {
        let index = position
        guard index < count, error == nil else { return nil }
        if !held.isEmpty {
            position += 1
            return (index, held[index])
        }
        if let entry = heldEntries.popLast() {
            position += 1
            return (index, make(entry))
        }
        guard let reader else {
            // Not when the list was checked: the held entries are all of it when there is no reader.
            error = UsageError("the input file's \(count) checked entries ended after \(index)")
            return nil
        }
        do {
            guard let entry = try reader.next() else {
                error = UsageError("\(reader.path) changed while it was being downloaded: it ends after \(index) of its \(count) entries")
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
    /// Where reading starts: a byte offset and the number of lines before it (``Checked/rest``).
    private let start: (offset: Int, afterLine: Int)

    /// A reader of the list at `path` from its start, or of its rest from byte `offset`, which starts line
    /// `afterLine + 1` (what ``check(_:holdingAtMost:)`` gives as ``Checked/rest``).
    init(path: String, resumingAt offset: Int = 0, afterLine: Int = 0) {
        self.path = path
        start = (offset, afterLine)
    }

    /// Where the entries after the one ``next()`` returned last start (valid until the list's last entry
    /// is returned): the byte offset of its line and the number of lines before it.
    var nextEntryStart: (offset: Int, afterLine: Int) {
        guard let reader else { return start }
        return (reader.lastLineOffset, reader.lineNumber - 1)
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

    /// What ``check(_:)`` found.
    struct Checked {
        /// How many entries the list has.
        var count: Int
        /// The most URLs one entry lists (mirrors included).
        var mostURLs: Int
        /// The list's first entries, as many as fit in the size given to ``InputList/check(_:holdingAtMost:)``
        /// (all of a short list).
        var entries: [InputEntry]
        /// Where the entries after ``entries`` start (the byte offset of the line of the first, and the
        /// number of lines before it), to read them again from there; nil when ``entries`` holds them all.
        var rest: (offset: Int, afterLine: Int)?
    }

    /// The most memory a checked list's first entries may take to be kept rather than read again: 64 KiB,
    /// some 250 entries of 40-byte URLs, enough for the downloads a run starts before it reads more. Keeping
    /// more would make memory grow with the list's length (about 250 bytes an entry, all held for the whole
    /// run); reading the rest again costs a second parse of each of its lines.
    static let heldSizeLimit = 64 << 10

    /// About what `entry` takes in memory: the struct, and each string's text and heap header (its parsed
    /// URL's parts about as long as the URL again).
    static func heldSize(of entry: InputEntry) -> Int {
        MemoryLayout<InputEntry>.stride + 32 + entry.url.utf8.count + (entry.parsedURL == nil ? 0 : 64 + entry.url.utf8.count)
            + entry.mirrors.reduce(0) { $0 + MemoryLayout<String>.stride + 32 + $1.utf8.count }
            + (entry.outputName.map { 32 + $0.utf8.count } ?? 0)
    }

    /// Reads `path` once through, checking every entry; returns how many there are, the most URLs one of
    /// them lists (mirrors included), the first entries, as many as fit in `holdingAtMost` bytes, and where
    /// the others start.
    static func check(_ path: String, holdingAtMost heldSizeLimit: Int = heldSizeLimit) throws -> Checked {
        let list = InputList(path: path)
        var checked = Checked(count: 0, mostURLs: 1, entries: [])
        var size = 0
        var holding = true
        /// Where the entries after the last held one start.
        var afterHeld = (offset: 0, afterLine: 0)
        // Every entry's URLs were checked by the list's parser (spaces, then parsed as an HTTPURL) on their
        // way here: checking them again parsed each URL of a long list once more.
        while let entry = try list.next() {
            checked.count += 1
            checked.mostURLs = max(checked.mostURLs, 1 + entry.mirrors.count)
            guard holding else { continue }
            size += heldSize(of: entry)
            if size <= heldSizeLimit {
                checked.entries.append(entry)
                afterHeld = list.nextEntryStart
            } else {
                holding = false
                checked.rest = afterHeld
            }
        }
        return checked
    }

    /// The next entry, or nil at the end; the errors are ``UsageError``s naming the file (and the line).
    func next() throws -> InputEntry? {
        if !opened {
            opened = true
            if path == "-" {
                // `-i -`: the list is checked, then a long one is read again as downloads start, and standard
                // input can be read only once: it is held, whole (the price of a list that is piped in).
                let bytes: [UInt8]
                switch Self.standardInput {
                case .success(let read): bytes = read
                case .failure(let error): throw UsageError("cannot read --input-file from standard input: \(error)")
                }
                var offset = min(start.offset, bytes.count)
                reader = InputFileReader(resumingAt: start.offset, afterLine: start.afterLine) { buffer in
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
            if start.offset > 0, fseeko(handle, off_t(start.offset), SEEK_SET) != 0 {
                throw UsageError("cannot read --input-file \(path): \(TextFile.ReadError(errno: errno))")
            }
            reader = InputFileReader(resumingAt: start.offset, afterLine: start.afterLine) { buffer in
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
