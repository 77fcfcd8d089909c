import ArgumentParser
import Haul
import HaulCommandLine

/// Where connections go and from where: curl's `--resolve`, `--connect-to`, `-4`/`-6` and `--interface`.
/// Checked by ``NetworkFlags``; the engine applies them as ``NetworkSettings`` (TLS and `Host` keep the
/// URL's host).
struct NetworkOptions: ParsableArguments {
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

    /// The engine's settings for these options; a usage error names the option at fault.
    func settings() throws(UsageError) -> NetworkSettings {
        try NetworkFlags.settings(resolve: resolve, connectTo: connectTo, ipv4: ipv4, ipv6: ipv6, interface: interface)
    }
}

/// The TLS client certificate: curl's `--cert` and `--key` (PEM, unencrypted key).
struct ClientCertificateOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Client certificate to present to servers that ask for one: a PEM file (with the key too, unless --key is given).", valueName: "file"))
    var cert: String?

    @Option(name: .long, help: ArgumentHelp("Private key of --cert: an unencrypted PEM file.", valueName: "file"))
    var key: String?

    /// The engine's client certificate, or nil without `--cert`.
    func clientCertificate() throws(UsageError) -> TLSSettings.ClientCertificate? {
        try NetworkFlags.clientCertificate(cert: cert, key: key)
    }
}
