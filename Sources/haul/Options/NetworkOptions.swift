import ArgumentParser
import Haul
import HaulCommandLine

/// What is sent to the server and who the requests say they come from (headers, credentials, the
/// User-Agent), and where connections go and from where (curl's `--resolve`, `--connect-to`, `-4`/`-6`,
/// `--interface`, checked by ``NetworkFlags``; TLS and `Host` keep the URL's host); "Network" in `--help`, the
/// same for `haul` and `haul queue add`.
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

    @Option(name: .long, help: ArgumentHelp(
        "Connect to ADDRESS for HOST:PORT instead of looking HOST up (HOST * for any; repeatable); TLS and Host still use HOST, as curl's --resolve.",
        valueName: "host:port:address[,address...]"))
    var resolve: [String] = []

    @Option(name: .customLong("connect-to"), help: ArgumentHelp(
        "For requests to HOST1:PORT1 connect to HOST2:PORT2 instead (an empty field: any, or the same; repeatable, the first match is used); TLS and Host still use HOST1, as curl's --connect-to.",
        valueName: "host1:port1:host2:port2"))
    var connectTo: [String] = []

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Resolve and connect over IPv4 only.")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Resolve and connect over IPv6 only.")
    var ipv6 = false

    @Option(name: .long, help: ArgumentHelp(
        "Connect from this network interface (a device name such as eth0) or this local IP address.", valueName: "name|address"))
    var interface: String?

    /// The engine's settings for the routing options; a usage error names the option at fault.
    func settings() throws(UsageError) -> NetworkSettings {
        try NetworkFlags.settings(resolve: resolve, connectTo: connectTo, ipv4: ipv4, ipv6: ipv6, interface: interface)
    }
}

/// The proxy, for `haul` only: a queued download is made by the daemon, which connects directly.
struct ProxyOptions: ParsableArguments {
    @Option(name: [.customShort("x", allowingJoined: true), .long], help: "Proxy for every URL: http://, https://, socks5:// or socks5h:// (names resolved by the proxy), with user:password@ for its credentials; \"\" for none. Without it, http_proxy, https_proxy/HTTPS_PROXY and all_proxy/ALL_PROXY are read as curl reads them.")
    var proxy: String?

    @Option(name: .long, help: "Hosts reached directly, not through the proxy: comma-separated domain suffixes, IP addresses, CIDR ranges, or * (default: no_proxy/NO_PROXY).")
    var noproxy: String?
}
