import ArgumentParser
import HaulCommandLine

/// How many connections one download opens, how finely it is split, how fast it may go; "Connections" in
/// `--help`, the same for `haul` and `haul queue add`.
struct ConnectionOptions: ParsableArguments {
    @Option(name: [.customShort("c", allowingJoined: true), .long], help: "Connections per download (1 to 64).")
    var connections = 8

    @Option(name: .long, help: "Smallest piece one connection is given or steals (e.g. 1M).")
    var minSegment: ByteSize?

    @Option(name: .long, help: "Most bytes per second for each download (e.g. 500K, 10M; 0 for no limit).")
    var limitRate: RateLimitSetting?
}
