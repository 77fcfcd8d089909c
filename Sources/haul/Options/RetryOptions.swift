import ArgumentParser
import Haul
import HaulCommandLine

/// How often a failed request is tried again and how long each wait may last; "Retries and timeouts" in
/// `--help`, the same for `haul` and `haul queue add`.
struct RetryOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(RetryPolicy.commandLineHelp + " " + WaitOptionHelp.retryAfter))
    var retries: Int?

    @Option(name: .long, help: "Seconds allowed to connect (and for the TLS handshake).")
    var connectTimeout: Double = 10

    @Option(name: .long, help: "Seconds without receiving a byte before a connection is given up.")
    var stallTimeout: Double = 30

    @Option(name: [.customShort("Y", allowingJoined: true), .long], help: ArgumentHelp(WaitOptionHelp.speedLimit))
    var speedLimit: RateLimitSetting?

    @Option(name: [.customShort("y", allowingJoined: true), .long], help: ArgumentHelp(WaitOptionHelp.speedTime))
    var speedTime: Int?

    @Option(name: .long, help: "Seconds one download may take in all (a queued one: each time the daemon runs it).")
    var maxTime: Double?

    @Option(name: .long, help: ArgumentHelp(
        "When a URL answers 401, 403, 404 or 410 after the download has begun (a signed link that expired), run this shell command (/bin/sh -c, with HAUL_URL, HAUL_STATUS and HAUL_ERROR set) and continue at the URL on the first line of its output, only if the server shows the same file there (strong ETag or Last-Modified, and length; otherwise --on-change decides). At most 5 per download. A command that fails, prints nothing or times out gives up: the download fails with the original error.",
        valueName: "command"))
    var urlCommand: String?

    @Option(name: .long, help: "Seconds --url-command may run before it is killed with what it started (default 30).")
    var urlCommandTimeout: Double?
}
