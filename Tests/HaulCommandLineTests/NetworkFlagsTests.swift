import Haul
import HaulCommandLine
import Testing

@Suite("Network flags on the command line")
struct NetworkFlagsTests {
    @Test func valuesBecomeSettings() throws {
        let settings = try NetworkFlags.settings(resolve: ["a.test:80:127.0.0.1", "*:443:::1"], connectTo: [":80:b.test:"],
                                                 ipv4: false, ipv6: true, interface: "lo")
        #expect(settings.resolve.map(\.host) == ["a.test", "*"])
        #expect(settings.connectTo == [ConnectToRule(fromHost: nil, fromPort: 80, toHost: "b.test", toPort: nil)])
        #expect(settings.addressFamily == .ipv6)
        #expect(settings.interface == .device("lo"))
        #expect(try NetworkFlags.settings(resolve: [], connectTo: [], ipv4: false, ipv6: false, interface: nil).isDefault)
    }

    @Test(arguments: [
        ([], [], true, true, nil, "-4/--ipv4 and -6/--ipv6 contradict each other; give one of them"),
        (["x"], [], false, false, nil, "--resolve \"x\" is not [+]HOST:PORT:ADDRESS[,ADDRESS...]: no port after the host"),
        ([], ["a:1:b"], false, false, nil,
         "--connect-to \"a:1:b\" is not HOST1:PORT1:HOST2:PORT2 (an empty field means any host or port, or the same one): it has fewer than four fields"),
        ([], [], false, false, "nosuch0", "--interface nosuch0: this machine has no network interface of that name (see `ip link`)"),
        ([], [], true, false, "::1", "--interface ::1 is not an IPv4 address, and -4 allows only IPv4"),
    ] as [([String], [String], Bool, Bool, String?, String)])
    func badValuesNameTheOption(resolve: [String], connectTo: [String], ipv4: Bool, ipv6: Bool, interface: String?, message: String) {
        #expect(throws: UsageError(message)) {
            try NetworkFlags.settings(resolve: resolve, connectTo: connectTo, ipv4: ipv4, ipv6: ipv6, interface: interface)
        }
    }

    @Test func clientCertificateFiles() throws {
        #expect(try NetworkFlags.clientCertificate(cert: nil, key: nil) == nil)
        #expect(try NetworkFlags.clientCertificate(cert: "/dev/null", key: nil) == TLSSettings.ClientCertificate(certificateFile: "/dev/null"))
        #expect(throws: UsageError("--key needs --cert: a private key alone is no client certificate")) {
            try NetworkFlags.clientCertificate(cert: nil, key: "/dev/null")
        }
        #expect(throws: UsageError("--key /nonexistent/k.pem: cannot read it: No such file or directory")) {
            try NetworkFlags.clientCertificate(cert: "/dev/null", key: "/nonexistent/k.pem")
        }
    }
}
