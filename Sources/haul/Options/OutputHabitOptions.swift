import ArgumentParser
import Haul
import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// curl's habits about what a transfer outputs: `-w/--write-out`, `--max-filesize`, `-r/--range`, `-I/--head`,
/// and `--compressed` (accepted: the file arrives as the server stores it anyway). An option group of the
/// `haul` command (`@OptionGroup`), checked into an ``OutputHabitPlan`` by ``HaulCommand/planOutputHabits(_:)``.
struct OutputHabitOptions: ParsableArguments {
    @Option(name: [.customShort("w", allowingJoined: true), .customLong("write-out")],
            help: ArgumentHelp("After each download, print FORMAT on standard output, as curl's -w: %{http_code}, %{size_download}, %{speed_download}, %{time_total}, %{url_effective}, %{url}, %{filename_effective}, %{content_type}, %{num_redirects}, %{exitcode}, %{errormsg}, %{json}; %% is %, \\n a newline; @FILE reads FORMAT from FILE (@- from standard input).", valueName: "format"))
    var writeOut: String?

    @Option(name: .customLong("max-filesize"),
            help: ArgumentHelp("Refuse a file larger than SIZE (e.g. 100M) before writing a byte of it; one that announces no length is stopped once it grows past SIZE. Nothing is kept; exit 63, as curl.", valueName: "size"))
    var maxFilesize: ByteSize?

    // Unconditional: curl's `-r -500` (the last 500 bytes) must not be read as an option named `-500`.
    @Option(name: [.customShort("r", allowingJoined: true), .customLong("range")], parsing: .unconditional,
            help: ArgumentHelp("Fetch only these bytes of the file, as curl's -r: A-B, A- or -N (the last N); the output starts with byte A. One request over one connection, no resume; a server that does not answer with exactly that range (206) fails it.", valueName: "range"))
    var range: String?

    @Flag(name: [.customShort("I"), .customLong("head")],
          help: "Send HEAD and print the response head (status line and fields) on standard output, one per redirect, as curl -I -L; nothing is written.")
    var head = false

    /// curl's `--compressed`: haul sends no `Accept-Encoding`, so the server sends the file as it stores it,
    /// which is what curl's `--compressed` saves after decoding. Accepted, changing nothing
    /// (``CommandLineHabits``).
    @Flag(name: .customLong("compressed"), help: .hidden)
    var curlCompressed = false
}

/// What ``OutputHabitOptions`` asked for, checked.
struct OutputHabitPlan: Sendable {
    /// `-w`: printed on stdout after each download.
    var writeOut: WriteOutFormat?
    /// `-r`: the one range the single download fetches.
    var range: ByteRange?
    /// `-I`: print the response heads, download nothing.
    var head = false

    /// Whether the run is one request of its own (``SingleExchangeRun``) rather than downloads.
    var isSingleExchange: Bool { head || range != nil }
}

extension HaulCommand {
    /// Checks the output-habit options against the rest of the command line and completes `plan` with them.
    func planOutputHabits(_ plan: inout CommandPlan) throws(UsageError) {
        let options = outputHabits
        var habits = OutputHabitPlan()
        if let maxFilesize = options.maxFilesize { plan.options.maximumFileSize = maxFilesize.bytes }
        if let text = options.writeOut {
            let format = try Self.writeOutFormat(text)
            do { habits.writeOut = try WriteOutFormat(format) } catch { throw UsageError(error.description) }
        }
        if let text = options.range {
            do { habits.range = try ByteRange(text) } catch { throw UsageError("-r/--range: \(error)") }
        }
        habits.head = options.head
        if habits.isSingleExchange {
            let option = options.head ? "-I/--head" : "-r/--range"
            guard !(options.head && habits.range != nil) else { throw UsageError("give -I/--head or -r/--range, not both") }
            guard list.inputFile == nil, !list.parallel, urls.count == 1 else {
                throw UsageError("\(option) is for one URL (no mirrors, -Z or --input-file)")
            }
            guard download.output.checksum == nil else { throw UsageError("--checksum is of the whole file; it cannot be used with \(option)") }
            if options.head, download.output.output != nil {
                throw UsageError("-I/--head prints the response head on standard output; -o has no meaning with it")
            }
        }
        plan.habits = habits
    }

    /// The `-w` format: `text` itself, or with `@FILE` the file's text (`@-`: standard input), without the
    /// one newline an editor leaves at its end (curl keeps it; a trailing `\n` in the text says it plainly).
    static func writeOutFormat(_ text: String) throws(UsageError) -> String {
        guard text.hasPrefix("@") else { return text }
        let path = String(text.dropFirst())
        var read: String
        do {
            read = path == "-" ? try TextFile.readStandardInput() : try TextFile.read(path)
        } catch {
            throw UsageError("cannot read the --write-out format from \(path == "-" ? "standard input" : path): \(error)")
        }
        if read.hasSuffix("\n") { read.removeLast() }
        return read
    }
}

extension TextFile {
    /// Standard input, whole.
    static func readStandardInput() throws -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = Glibc.read(STDIN_FILENO, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw ReadError(errno: errno)
            }
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(contentsOf: buffer[..<count])
        }
    }
}

/// What the command prints on standard output besides a streamed file: `-w` lines and `-I` heads.
enum StandardOutput {
    static func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(1, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return   // a reader gone (EPIPE, SIGPIPE ignored): what it did not want is not an error
                }
                offset += written
            }
        }
    }
}

/// The `-w` facts of one download, from its result or its failure, and the URL as it may be printed.
enum OutputHabits {
    /// `url` with any user information shown as `***`.
    static func shownURL(_ url: String) -> String { HTTPURL.displayText(of: url) }

    static func facts(for result: DownloadResult, url: String) -> WriteOutFacts {
        WriteOutFacts(httpCode: result.status, sizeDownload: min(result.bytesRequested, result.bytes),
                      timeTotal: UnitFormatting.seconds(result.duration), urlEffective: result.finalURL.description,
                      url: shownURL(url), filenameEffective: result.path.isEmpty ? nil : result.path,
                      contentType: result.contentType, numRedirects: result.redirects, exitCode: 0, errorMessage: nil)
    }

    static func facts(for error: any Error, url: String, path: String?, progress: DownloadProgress?,
                      source: ErrorText.Source) -> WriteOutFacts {
        let haulError = error as? HaulError
        return WriteOutFacts(httpCode: haulError?.httpStatus, sizeDownload: progress?.bytesDone ?? 0,
                             timeTotal: progress.map { UnitFormatting.seconds($0.elapsed) } ?? 0,
                             urlEffective: haulError?.url ?? shownURL(url), url: shownURL(url),
                             filenameEffective: path, contentType: nil, numRedirects: 0,
                             exitCode: ExitStatus(classifying: error).code,
                             errorMessage: ErrorText.message(for: error, source: source))
    }
}
