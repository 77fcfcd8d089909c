import ArgumentParser
import Haul
import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

/// A Metalink v4 document (RFC 5854) as the run's list of downloads: `-M` (aria2's flag); "Lists" in `--help`.
struct MetalinkOptions: ParsableArguments {
    @Option(name: [.customShort("M", allowingJoined: true), .customLong("metalink")], help: ArgumentHelp("Download every file of a Metalink v4 document (.meta4, RFC 5854) into --dir under its Metalink name, from its mirrors in priority order, verifying its strongest hash; FILE may be an http(s) URL.", valueName: "FILE"))
    var metalink: String?

    /// aria2's `--follow-metalink=true`, its default and haul's: a URL whose answer is a Metalink v4 document
    /// downloads the files it lists instead of saving it.
    @Flag(name: .customLong("follow-metalink"), inversion: .prefixedNo, help: "A URL answered with a Metalink v4 document (Content-Type application/metalink4+xml) downloads the files it lists, into --dir, as -M would (default); --no-follow-metalink saves the document itself.")
    var followMetalink = true
}

extension HaulCommand {
    /// The request maker of a run of URLs or a list (``DownloadArguments/requests()``), following Metalink
    /// answers unless `--no-follow-metalink`.
    func followingRequestMaker() throws(UsageError) -> RequestMaker {
        var maker = try download.requests()
        maker.followsMetalink = metalinkList.followMetalink
        return maker
    }
}

/// What a run needs to download the files of a Metalink document a URL answered with
/// (``DownloadRequest/followsMetalink``, ``DownloadResult/metalink``).
struct FollowedMetalinks {
    /// The run's choices and credentials, for each listed file's request.
    var maker: RequestMaker
    /// `--dir`, where the files go (the current directory when nil), as with `-M`.
    var dir: String?
}

extension HaulCommand {
    /// `-M` with URLs, `-i` or `-Z` is refused before the document is read or fetched.
    func checkMetalinkAlone() throws(UsageError) {
        guard metalinkList.metalink != nil else { return }
        guard urls.isEmpty, list.inputFile == nil, !list.parallel else {
            throw UsageError("--metalink lists the downloads; give no URLs, --input-file or -Z with it")
        }
    }
}

/// Reads a Metalink document named by `-M`: a file, or an http(s) URL fetched into memory.
enum MetalinkDocument {
    /// The largest document read or fetched (``MetalinkLimits/maximumBytes``).
    static let maximumBytes = MetalinkLimits().maximumBytes

    /// Whether `-M`'s argument is a URL rather than a path.
    static func isURL(_ source: String) -> Bool {
        let lowered = source.lowercased()
        return lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
    }

    /// The parsed document. Read or parse failures are ``UsageError``s naming the source; a failed fetch is
    /// the engine's ``HaulError`` (its exit status is the download's).
    static func load(_ source: String, options: DownloadOptions) async throws -> Metalink {
        let bytes: [UInt8]
        if isURL(source) {
            try DownloadArguments.checkURL(source, where: "--metalink URL")
            let client = try HaulClient(options: options)
            do {
                bytes = try await client.bytes(from: source, limit: maximumBytes)
                await client.shutdown()
            } catch {
                await client.shutdown()
                throw error
            }
        } else {
            bytes = try read(source)
        }
        do {
            return try Metalink(parsing: bytes)
        } catch {
            throw UsageError("\(TerminalText.sanitized(source)): \(error)")
        }
    }

    /// The file's bytes, at most ``maximumBytes`` of them.
    static func read(_ path: String) throws(UsageError) -> [UInt8] {
        guard let file = fopen(path, "rb") else {
            throw UsageError("cannot read --metalink \(TerminalText.sanitized(path)): \(TextFile.ReadError(errno: errno))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            bytes.append(contentsOf: buffer[..<count])
            guard bytes.count <= maximumBytes else {
                throw UsageError("--metalink \(TerminalText.sanitized(path)) is larger than \(maximumBytes) bytes")
            }
            if count < buffer.count {
                if ferror(file) != 0 { throw UsageError("cannot read --metalink \(TerminalText.sanitized(path)): \(TextFile.ReadError(errno: errno))") }
                return bytes
            }
        }
    }
}

extension RequestMaker {
    /// The download of one file of a Metalink into `dir` (`.` when nil): its mirrors in priority order and
    /// its strongest hash (``DownloadRequest/init(metalink:directory:replacesExisting:ifChangedOnServer:discardsPartialDownload:)``),
    /// with this run's choices and credentials. For a document a server answered `followedFrom` with, the
    /// run's credentials go only where ``FollowedMetalinkCredentials`` says (`credentialHeaders`: the run's
    /// `-H` holds one).
    func download(metalinkFile file: MetalinkFile, dir: String?, followedFrom document: HTTPURL? = nil,
                  credentialHeaders: Bool = false) throws(UsageError) -> CommandPlan.Download {
        var request: DownloadRequest
        do {
            request = try DownloadRequest(metalink: file, directory: dir ?? ".", replacesExisting: replacesExisting,
                                          ifChangedOnServer: ifChangedOnServer, discardsPartialDownload: discardsPartialDownload)
        } catch {
            throw UsageError("--metalink: \(error)")
        }
        var user = user
        if let document {
            guard let first = try? HTTPURL(request.url) else { throw UsageError("\(request.url) is not an http(s) URL") }
            switch FollowedMetalinkCredentials.decide(document: document, file: first, credentialHeaders: credentialHeaders) {
            case .withUser: break
            case .withoutUser: user = nil
            case .refused(let reason): throw UsageError("\(first): \(reason)")
            }
        }
        if !authorizes, let authorization = Self.authorization(for: request.url, user: user, netrc: netrc) {
            request.headers.append(("Authorization", authorization))
        }
        guard case .file(let path) = request.destination else { preconditionFailure("a Metalink file is always saved to a file") }
        return CommandPlan.Download(request: request, source: .commandLine, expectedPath: path)
    }
}
