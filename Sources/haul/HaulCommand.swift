import ArgumentParser
import Haul
import HaulCommandLine

#if canImport(Glibc)
import Glibc
#endif

@main
struct HaulCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "haul",
        abstract: "Download a URL over HTTP/1.1 into a file."
    )

    @Argument(help: "The http:// or https:// URL to download.")
    var url: String

    @Option(name: [.short, .long], help: "Where to write the file (default: the URL's last path segment).")
    var output: String?

    @Option(name: [.customShort("H"), .long], help: "Extra request header, 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(name: .long, help: "User-Agent to send.")
    var userAgent = "haul/0.1"

    @Option(name: .long, help: "CA certificate file to trust (PEM).")
    var cacert: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify the server's TLS certificate.")
    var insecure = false

    @Option(name: .long, help: "Seconds allowed to connect.")
    var connectTimeout: Double = 10

    @Option(name: .long, help: "Seconds without receiving a byte before giving up.")
    var stallTimeout: Double = 30

    @Option(name: .long, help: "Seconds the whole download may take.")
    var maxTime: Double?

    @Option(name: [.short, .long], help: "Connections for this download.")
    var connections = 8

    @Option(name: .long, help: "Checkpoint the resume journal after this many bytes (e.g. 32M).")
    var checkpointBytes: ByteSize?

    @Option(name: .long, help: "Checkpoint the resume journal at least this often, in seconds.")
    var checkpointInterval: Double?

    @Flag(name: .long, help: "Discard a previous partial download of the same output instead of resuming it.")
    var restart = false

    @Flag(name: [.short, .long], help: "Print nothing but errors.")
    var quiet = false

    @Flag(name: .long, help: "Skip fdatasync before the final rename.")
    var noSync = false

    func run() async throws {
        var options = DownloadOptions()
        options.userAgent = userAgent
        options.headers = try header.map(Self.parseHeader)
        options.timeouts = ConnectionTimeouts(connect: .seconds(connectTimeout), tlsHandshake: .seconds(connectTimeout),
                                              idle: .seconds(stallTimeout))
        options.totalTimeout = maxTime.map { .seconds($0) }
        options.tls.caFile = cacert
        options.tls.insecure = insecure
        options.synchronizesToDisk = !noSync
        options.connections = connections
        if let checkpointBytes { options.checkpointBytes = checkpointBytes.bytes }
        if let checkpointInterval { options.checkpointInterval = .seconds(checkpointInterval) }
        let destination = output ?? Self.defaultName(for: url)
        do {
            let downloader = try HaulClient(options: options)
            let result = try await downloader.download(url, to: destination, restart: restart)
            let seconds = Double(result.duration.components.seconds) + Double(result.duration.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Double(result.bytes) / seconds / 1e6 : 0
            if !quiet { print("\(result.path): \(result.bytes) bytes in \(Self.fixed(seconds, 2)) s (\(Self.fixed(rate, 1)) MB/s, \(result.bytesRequested) bytes requested)") }
        } catch {
            FileHandleStderr.write("haul: \(error)\n")
            throw ExitCode(1)
        }
    }

    static func parseHeader(_ text: String) throws -> (name: String, value: String) {
        guard let colon = text.firstIndex(of: ":") else {
            throw ValidationError("header \"\(text)\" is not 'Name: value'")
        }
        let name = String(text[..<colon])
        let value = String(text[text.index(after: colon)...].drop { $0 == " " || $0 == "\t" })
        return (name, value)
    }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale), fraction = scaled % Int(scale)
        let fractionText = String(fraction)
        return "\(whole)." + String(repeating: "0", count: digits - fractionText.count) + fractionText
    }

    static func defaultName(for url: String) -> String {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        return last.isEmpty || last.contains(":") ? "index.html" : last
    }
}

enum FileHandleStderr {
    static func write(_ text: String) {
        _ = text.withCString { Glibc.write(2, $0, strlen($0)) }
    }
}
