import ArgumentParser

/// Which certificates a TLS server may present; "TLS" in `--help`, the same for `haul` and `haul queue add`.
struct TLSOptions: ParsableArguments {
    @Option(name: .long, help: "CA certificates to trust, one PEM file.")
    var cacert: String?

    @Option(name: .long, help: "CA certificates to trust, a hashed directory (c_rehash).")
    var capath: String?

    @Flag(name: [.customShort("k"), .long], help: "Do not verify the server's TLS certificate.")
    var insecure = false
}
