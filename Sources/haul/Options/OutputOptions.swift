import ArgumentParser
import HaulCommandLine

/// Where the file goes and how it is kept: `-o`, `-d`, the digest it must have, an existing or changed file,
/// durability. The same for `haul` and `haul queue add` (``DownloadArguments``); "Output" in `--help`.
struct OutputOptions: ParsableArguments {
    @Option(name: [.customShort("o", allowingJoined: true), .long], help: "Write the file here; a directory (an existing one, or any path ending in /) saves into it under the server's or the URL's name; - streams it in order to standard output over all connections (not with queue add) (default: the server's suggested name in --dir).")
    var output: String?

    @Option(name: [.customShort("d", allowingJoined: true), .long], help: "Directory for downloaded files; created when missing (default: current).")
    var dir: String?

    @Option(name: .long, help: "Expected digest of the file, ALGO=HEX (sha256, sha512, sha1, md5; aria2's sha-256=HEX too).")
    var checksum: String?

    @Option(name: .long, help: "When the file changed on the server since the download began: fail or restart.")
    var onChange: ChangePolicyArgument = .fail

    @Flag(name: .long, help: "Discard a previous partial download of the same output instead of resuming it.")
    var restart = false

    @Flag(name: .long, help: "Replace an existing file at the destination.")
    var allowOverwrite = false

    @Flag(name: [.customShort("N"), .long], help: "Fetch only if the server's file changed: an existing file is asked about with its stored ETag and Last-Modified (If-None-Match, If-Modified-Since) and kept on a 304, replaced otherwise; the file is named from the URL (like wget -N).")
    var timestamping = false

    // Unconditional: curl's `-z -DATE` must reach the check that refuses it, not be read as an option.
    @Option(name: [.customShort("z"), .customLong("time-cond")], parsing: .unconditional, help: ArgumentHelp("curl's -z: fetch only if modified after DATE (an HTTP date: 'Wed, 01 Sep 2021 12:00:00 GMT', RFC 850 or asctime) or after FILE's time; the output file itself (-o) works as -N. A 304 is 'up to date' (exit 0). A leading - (if unmodified since) is refused.", valueName: "date|file"))
    var timeCondition: String?

    @Flag(name: [.customShort("R"), .customLong("remote-time")], help: "Give the file the server's Last-Modified time.")
    var remoteTime = false

    @Flag(name: .long, help: "Skip fdatasync (faster; survives a crash of haul or its daemon, not of the machine).")
    var noSync = false

    @Option(name: .long, help: "Checkpoint the resume journal after this many bytes (e.g. 32M).")
    var checkpointBytes: ByteSize?

    @Option(name: .long, help: "Checkpoint the resume journal at least this often, in seconds.")
    var checkpointInterval: Double?
}

/// The output options only `haul` itself has: a queued download has no "already complete" to report, and
/// wget's `-P` is one more spelling of `-d`.
struct LocalOutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Skip a download whose file already exists, reporting it as complete (like wget -nc).")
    var skipExisting = false

    /// wget's `-P DIR`: haul's `-d DIR`.
    @Option(name: [.customShort("P", allowingJoined: true), .customLong("directory-prefix")], help: .hidden)
    var wgetDirectoryPrefix: String?
}
