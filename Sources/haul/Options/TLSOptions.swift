import ArgumentParser
import Haul
import HaulCommandLine

/// Which certificates a TLS server may present, and the one Haul presents when asked; "TLS" in `--help`, the same for `haul` and `haul queue add`.
struct TLSOptions: ParsableArguments {
    @Option(name: .long, help: "CA certificates to trust, one PEM file.")
    var cacert: String?

    @Option(name: .long, help: "CA certificates to trust, a hashed directory (c_rehash).")
    var capath: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify the server's TLS certificate.")
    var insecure = false

    @Option(name: .long, help: ArgumentHelp(
        "Client certificate to present to servers that ask for one: a PEM file (with the key too, unless --key is given).", valueName: "file"))
    var cert: String?

    @Option(name: .long, help: ArgumentHelp("Private key of --cert: an unencrypted PEM file.", valueName: "file"))
    var key: String?

    /// The engine's client certificate (curl's `--cert` and `--key`), or nil without `--cert`.
    func clientCertificate() throws(UsageError) -> TLSSettings.ClientCertificate? {
        try NetworkFlags.clientCertificate(cert: cert, key: key)
    }
}
