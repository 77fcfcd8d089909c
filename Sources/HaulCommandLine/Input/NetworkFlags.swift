import Glibc
import Haul
import HaulIO

/// The network and client-certificate options of the command line (curl's `--resolve`, `--connect-to`,
/// `-4`/`-6`, `--interface`, `--cert`/`--key`) checked and turned into engine settings, with usage errors
/// that name the option. Pure but for the existence checks of an interface and of the files.
public enum NetworkFlags {
    /// The ``NetworkSettings`` for the given option values, or a usage error naming the option and the value.
    public static func settings(resolve: [String], connectTo: [String], ipv4: Bool, ipv6: Bool,
                                interface: String?) throws(UsageError) -> NetworkSettings {
        var settings = NetworkSettings()
        for text in resolve {
            do { settings.resolve.append(try ResolveRule(parsing: text)) } catch { throw UsageError("--resolve \(error)") }
        }
        for text in connectTo {
            do { settings.connectTo.append(try ConnectToRule(parsing: text)) } catch { throw UsageError("--connect-to \(error)") }
        }
        switch (ipv4, ipv6) {
        case (true, true): throw UsageError("-4/--ipv4 and -6/--ipv6 contradict each other; give one of them")
        case (true, false): settings.addressFamily = .ipv4
        case (false, true): settings.addressFamily = .ipv6
        case (false, false): break
        }
        if let interface {
            let parsed: NetworkInterface
            do { parsed = try NetworkInterface(parsing: interface) } catch { throw UsageError("--interface \(error)") }
            guard parsed.exists else {
                throw UsageError("--interface \(interface): this machine has no network interface of that name (see `ip link`)")
            }
            if case .address(let address) = parsed, let family = settings.addressFamily,
               SocketAddress(ipAddress: address, port: 0)?.family != (family == .ipv4 ? .ipv4 : .ipv6) {
                throw UsageError("--interface \(interface) is not an \(family.name) address, and \(family == .ipv4 ? "-4" : "-6") allows only \(family.name)")
            }
            settings.interface = parsed
        }
        return settings
    }

    /// The client certificate of `--cert FILE` and `--key FILE` (the key in the certificate's file when
    /// `--key` is not given, as curl), or nil without `--cert`; a file that cannot be read is a usage
    /// error naming it. Whether the key matches is checked when the first TLS connection is made.
    public static func clientCertificate(cert: String?, key: String?) throws(UsageError) -> TLSSettings.ClientCertificate? {
        guard let cert else {
            if key != nil { throw UsageError("--key needs --cert: a private key alone is no client certificate") }
            return nil
        }
        for (option, path) in [("--cert", cert), ("--key", key)] {
            guard let path else { continue }
            if access(path, R_OK) != 0 {
                throw UsageError("\(option) \(path): cannot read it: \(SystemError.describe(errno: errno))")
            }
        }
        return TLSSettings.ClientCertificate(certificateFile: cert, keyFile: key)
    }

    /// The answer to `-H 'Host: ...'`: the Host header is the URL's, and what users want from setting it is
    /// to reach a name at another address.
    public static let hostHeaderAnswer =
        "header \"Host\" cannot be set: haul sends the URL's host. To reach a name at another address, put the name in the URL and add --resolve NAME:PORT:ADDRESS (or --connect-to NAME:PORT:HOST:PORT)"
}
