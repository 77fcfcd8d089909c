import Glibc
import HaulHTTP
import Testing
@testable import HaulIO

@Suite("Network settings: parsing curl's --resolve, --connect-to and --interface")
struct NetworkSettingsParsingTests {
    @Test func resolveRulesInCurlsSyntax() throws {
        let rule = try ResolveRule(parsing: "Example.TEST:443:127.0.0.1")
        #expect(rule.host == "example.test" && rule.port == 443 && rule.addresses == ["127.0.0.1"])
        let several = try ResolveRule(parsing: "+example.test:8080:[::1],127.0.0.2, 0:0::2")
        #expect(several.addresses == ["::1", "127.0.0.2", "::2"])
        let wildcard = try ResolveRule(parsing: "*:80:192.0.2.7")
        #expect(wildcard.host == "*")
        let ipv6Host = try ResolveRule(parsing: "[2001:db8::0001]:443:::1")
        #expect(ipv6Host.host == "2001:db8::1" && ipv6Host.addresses == ["::1"])
    }

    @Test(arguments: [
        ("", "the host is empty"),
        ("example.test", "no port after the host"),
        ("example.test:443", "no address after the port"),
        ("example.test:0:127.0.0.1", "the port is not a number from 1 to 65535"),
        ("example.test:65536:127.0.0.1", "the port is not a number from 1 to 65535"),
        ("example.test:https:127.0.0.1", "the port is not a number from 1 to 65535"),
        ("example.test:443:", "an address is empty"),
        ("example.test:443:127.0.0.1,", "an address is empty"),
        ("example.test:443:localhost", "\"localhost\" is not an IPv4 or IPv6 address"),
        ("example.test:443:127.1", "\"127.1\" is not an IPv4 or IPv6 address"),
        ("-example.test:443", "removing an entry (-HOST:PORT) has no meaning here"),
        ("[::1:443:127.0.0.1", "an IPv6 address has no closing ']'"),
        ("exa/mple:443:127.0.0.1", "\"exa/mple\" is not a host name or IP address"),
        ("user@host:443:127.0.0.1", "\"user@host\" is not a host name or IP address"),
    ])
    func badResolveRulesSayWhatIsWrong(text: String, reason: String) {
        #expect(throws: NetworkSettingError(text: text, form: ResolveRule.form, reason: reason)) { try ResolveRule(parsing: text) }
    }

    @Test func connectToRulesWithEmptyFields() throws {
        let full = try ConnectToRule(parsing: "example.test:443:backend.test:8443")
        #expect(full == ConnectToRule(fromHost: "example.test", fromPort: 443, toHost: "backend.test", toPort: 8443))
        let anyHost = try ConnectToRule(parsing: ":443:[::1]:")
        #expect(anyHost == ConnectToRule(fromHost: nil, fromPort: 443, toHost: "::1", toPort: nil))
        let allEmpty = try ConnectToRule(parsing: ":::")
        #expect(allEmpty == ConnectToRule(fromHost: nil, fromPort: nil, toHost: nil, toPort: nil))
        #expect(full.matches(host: "EXAMPLE.test", port: 443) && !full.matches(host: "example.test", port: 80))
        #expect(anyHost.matches(host: "other.test", port: 443))
    }

    @Test(arguments: [
        ("example.test:443:backend.test", "it has fewer than four fields"),
        ("example.test", "it has fewer than four fields"),
        ("example.test:443:backend.test:8443:1", "it has more than four fields (write an IPv6 address in brackets)"),
        ("::1:443:backend.test:80", "it has more than four fields (write an IPv6 address in brackets)"),
        ("example.test:x:backend.test:80", "PORT1 is not empty or a number from 1 to 65535"),
        ("example.test:443:backend.test:99999", "PORT2 is not empty or a number from 1 to 65535"),
        ("exa mple:443::", "\"exa mple\" is not a host name or IP address"),
    ])
    func badConnectToRulesSayWhatIsWrong(text: String, reason: String) {
        #expect(throws: NetworkSettingError(text: text, form: ConnectToRule.form, reason: reason)) { try ConnectToRule(parsing: text) }
    }

    @Test func interfacesAreDevicesOrAddresses() throws {
        #expect(try NetworkInterface(parsing: "lo") == .device("lo"))
        #expect(try NetworkInterface(parsing: "if!eth0") == .device("eth0"))
        #expect(try NetworkInterface(parsing: "127.0.0.1") == .address("127.0.0.1"))
        #expect(try NetworkInterface(parsing: "[0::1]") == .address("::1"))
        #expect(NetworkInterface.device("lo").exists)
        #expect(!NetworkInterface.device("nosuch0").exists)
        for bad in ["", "a-name-that-is-too-long0", "eth0/1", "host!example.test", "a b"] {
            #expect(throws: NetworkSettingError.self) { try NetworkInterface(parsing: bad) }
        }
    }

    @Test func connectToPicksTheFirstMatchAndResolvePrefersTheExactHostAndTheLastRule() throws {
        var settings = NetworkSettings()
        settings.connectTo = [try ConnectToRule(parsing: "a.test:80:b.test:8080"), try ConnectToRule(parsing: ":80:c.test:")]
        #expect(settings.connectTarget(host: "a.test", port: 80) == ("b.test", 8080))
        #expect(settings.connectTarget(host: "z.test", port: 80) == ("c.test", 80))
        #expect(settings.connectTarget(host: "a.test", port: 443) == ("a.test", 443))
        settings.resolve = [
            try ResolveRule(parsing: "*:80:192.0.2.1"), try ResolveRule(parsing: "b.test:8080:192.0.2.2"),
            try ResolveRule(parsing: "B.test:8080:192.0.2.3,::3"),
        ]
        #expect(settings.pinnedAddresses(host: "b.test", port: 8080)?.map(\.description) == ["192.0.2.3:8080", "[::3]:8080"])
        #expect(settings.pinnedAddresses(host: "c.test", port: 80)?.map(\.description) == ["192.0.2.1:80"])
        #expect(settings.pinnedAddresses(host: "c.test", port: 81) == nil)
        settings.addressFamily = .ipv6
        #expect(settings.usable(settings.pinnedAddresses(host: "b.test", port: 8080) ?? []).map(\.ipAddress) == ["::3"])
    }

    @Test func aTunnelGoesToTheConnectToTargetAndAForwardedRequestNamesTheOrigin() throws {
        let proxy = try ProxyURL("http://127.0.0.1:3128")
        let origin = try HTTPURL("https://example.test/").origin
        var network = NetworkSettings()
        network.connectTo = [try ConnectToRule(parsing: "example.test:443:[::1]:8443")]
        let tunnel = HTTPClient.route(to: origin, through: proxy, forwards: false, network: network)
        #expect(tunnel.target == "[::1]:8443")
        let forwarded = HTTPClient.route(to: origin, through: proxy, forwards: true, network: network)
        #expect(forwarded.target == "example.test:443")
    }
}

@Suite("Network settings: connections")
struct NetworkSettingsConnectionTests {
    private func options(_ change: (inout NetworkSettings) throws -> Void) rethrows -> ConnectionOptions {
        var options = ConnectionOptions(timeouts: ConnectionTimeouts(connect: .seconds(5)))
        try change(&options.network)
        return options
    }

    @Test func resolveGivesTheAddressOfAName() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let settings = try options { $0.resolve = [try ResolveRule(parsing: "example.test:\(server.port):127.0.0.1")] }
        let connection = try await Connection.connect(to: "example.test", port: server.port, options: settings, on: loop)
        #expect(connection.host == "example.test")
        connection.close()
    }

    @Test func connectToGoesElsewhere() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let settings = try options { $0.connectTo = [try ConnectToRule(parsing: "example.test:80:127.0.0.1:\(server.port)")] }
        let connection = try await Connection.connect(to: "example.test", port: 80, options: settings, on: loop)
        #expect(connection.host == "example.test" && connection.port == 80)
        connection.close()
    }

    @Test func onlyTheFamilyAskedForIsUsed() async throws {
        let server = try LoopbackServer(host: "::1", behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let ipv4 = try options {
            $0.resolve = [try ResolveRule(parsing: "dual.test:\(server.port):127.0.0.1,::1")]
            $0.addressFamily = .ipv4
        }
        // 127.0.0.1 has no listener on that port: only ::1 would have connected.
        await #expect(throws: ConnectionError.self) { try await Connection.connect(to: "dual.test", port: server.port, options: ipv4, on: loop) }
        do {
            _ = try await Connection.connect(to: "::1", port: server.port, options: ipv4, on: loop)
            Issue.record("an IPv6 literal connected under -4")
        } catch {
            #expect(error.description == "connect to [::1]:\(server.port): no IPv4 address (-4/--ipv4); it has ::1")
        }
        var ipv6 = ipv4
        ipv6.network.addressFamily = .ipv6
        let connection = try await Connection.connect(to: "dual.test", port: server.port, options: ipv6, on: loop)
        connection.close()
    }

    @Test func anInterfaceThatExistsIsUsedAndOneThatDoesNotIsNamed() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        for interface in [NetworkInterface.device("lo"), .address("127.0.0.1")] {
            let connection = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options { $0.interface = interface }, on: loop)
            connection.close()
        }
        do {
            _ = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options { $0.interface = .device("nosuch0") }, on: loop)
            Issue.record("a missing interface connected")
        } catch {
            #expect(error.kind == .connectFailed)
            #expect(error.description.hasPrefix("connect to 127.0.0.1:\(server.port): cannot use interface nosuch0: no such network interface"))
        }
        do {
            // TEST-NET-1: an address no interface of a test machine has.
            _ = try await Connection.connect(to: "127.0.0.1", port: server.port, options: options { $0.interface = .address("192.0.2.254") }, on: loop)
            Issue.record("a foreign local address connected")
        } catch {
            #expect(error.description.contains("cannot use local address 192.0.2.254: no interface of this machine has that address"))
        }
    }
}

@Suite("Connection pool keyed by network settings and client certificate")
struct ConnectionPoolIdentityTests {
    @Test func keysDifferWithEverySetting() throws {
        let origin = try HTTPURL("https://example.test/").origin
        let plain = ConnectionIdentity()
        var identities = [plain]
        identities.append(ConnectionIdentity(network: NetworkSettings(resolve: [try ResolveRule(parsing: "example.test:443:127.0.0.1")])))
        identities.append(ConnectionIdentity(network: NetworkSettings(resolve: [try ResolveRule(parsing: "example.test:443:127.0.0.2")])))
        identities.append(ConnectionIdentity(network: NetworkSettings(connectTo: [try ConnectToRule(parsing: "::127.0.0.1:")])))
        identities.append(ConnectionIdentity(network: NetworkSettings(addressFamily: .ipv4)))
        identities.append(ConnectionIdentity(network: NetworkSettings(interface: .device("lo"))))
        identities.append(ConnectionIdentity(clientCertificate: TLSSettings.ClientCertificate(certificateFile: "a.pem")))
        identities.append(ConnectionIdentity(clientCertificate: TLSSettings.ClientCertificate(certificateFile: "a.pem", keyFile: "b.key")))
        let keys = identities.map { ConnectionPool.Key(origin: origin, proxy: nil, identity: $0) }
        #expect(Set(keys).count == identities.count)
        #expect(ConnectionPool.Key(origin: origin, proxy: nil, identity: ConnectionIdentity()) == keys[0])
    }

    @Test func anIdleConnectionIsHandedOutOnlyForTheSettingsItWasMadeWith() async throws {
        let server = try LoopbackServer(behaviour: .silent)
        defer { server.stop() }
        let loop = try EventLoop()
        defer { loop.shutdown() }
        let pinned = ConnectionIdentity(network: NetworkSettings(resolve: [try ResolveRule(parsing: "example.test:\(server.port):127.0.0.1")]))
        var options = ConnectionOptions()
        options.network = pinned.network
        let transport = try await Connection.connect(to: "example.test", port: server.port, options: options, on: loop)
        let origin = try HTTPURL("http://example.test:\(server.port)/").origin
        let pool = ConnectionPool(loop: loop)
        let (otherSettings, noCertificate, same, afterwards) = try await loop.submit {
            pool.returnOnLoop(HTTPConnection(transport: transport, origin: origin, identity: pinned))
            let other = pool.takeIdleOnLoop(origin, identity: ConnectionIdentity())
            let withCertificate = pool.takeIdleOnLoop(origin, identity: ConnectionIdentity(
                network: pinned.network, clientCertificate: TLSSettings.ClientCertificate(certificateFile: "client.pem")))
            let same = pool.takeIdleOnLoop(origin, identity: pinned)
            let afterwards = pool.takeIdleOnLoop(origin, identity: pinned)
            same?.transport.closeOnLoop()
            return (other == nil, withCertificate == nil, same?.transport === transport, afterwards == nil)
        }
        #expect(otherSettings && noCertificate && same && afterwards)
    }
}
