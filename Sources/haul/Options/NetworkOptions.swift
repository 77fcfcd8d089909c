import ArgumentParser
import HaulCommandLine

/// What is sent to the server and who the requests say they come from: headers, credentials, the
/// User-Agent; "Network" in `--help`, the same for `haul` and `haul queue add`.
struct NetworkOptions: ParsableArguments {
    @Option(name: [.customShort("H", allowingJoined: true), .long], help: "Extra request header, 'Name: value' (repeatable).")
    var header: [String] = []

    @Option(name: [.customShort("u", allowingJoined: true), .long], help: "USER:PASSWORD for the server of the (first) URL, sent as Basic authorization to that origin only; USER alone asks for the password on a terminal.")
    var user: String?

    @Flag(name: .long, help: "Take the login and password for each URL's host from ~/.netrc.")
    var netrc = false

    @Option(name: .long, help: "Like --netrc, from FILE.")
    var netrcFile: String?

    @Option(name: .long, help: "User-Agent to send.")
    var userAgent = HaulVersion.userAgent
}

/// The proxy, for `haul` only: a queued download is made by the daemon, which connects directly.
struct ProxyOptions: ParsableArguments {
    @Option(name: [.customShort("x", allowingJoined: true), .long], help: "Proxy for every URL: http://, https://, socks5:// or socks5h:// (names resolved by the proxy), with user:password@ for its credentials; \"\" for none. Without it, http_proxy, https_proxy/HTTPS_PROXY and all_proxy/ALL_PROXY are read as curl reads them.")
    var proxy: String?

    @Option(name: .long, help: "Hosts reached directly, not through the proxy: comma-separated domain suffixes, IP addresses, CIDR ranges, or * (default: no_proxy/NO_PROXY).")
    var noproxy: String?
}
