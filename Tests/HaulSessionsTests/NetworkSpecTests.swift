import Haul
import Testing
@testable import HaulSessions

/// A queued task keeps its network settings and client certificate across the session log and the protocol,
/// and they are part of the options that decide which client (and pool of connections) runs it.
@Suite struct NetworkSpecTests {
    static func spec() throws -> TaskSpec {
        var spec = TaskSpec(url: "https://example.test/x", destination: .file("/x"))
        spec.options.network = NetworkSettings(
            resolve: [try ResolveRule(parsing: "example.test:443:127.0.0.1,[::1]"), try ResolveRule(parsing: "*:80:192.0.2.1")],
            connectTo: [try ConnectToRule(parsing: ":443:[::1]:8443")], addressFamily: .ipv6, interface: .device("lo"))
        spec.options.tls.clientCertificate = TLSSettings.ClientCertificate(certificateFile: "/c.pem", keyFile: "/c.key")
        return spec
    }

    @Test func theSettingsSurviveTheirJSONAndReachTheEngine() throws {
        let spec = try Self.spec()
        let json = spec.json.serialized
        #expect(json.contains(#""resolve":["example.test:443:127.0.0.1,[::1]","*:80:192.0.2.1"]"#), "\(json)")
        #expect(json.contains(#""connectTo":[":443:[::1]:8443"]"#) && json.contains(#""ipVersion":6"#) && json.contains(#""interface":"lo""#))
        #expect(try TaskSpec(json: JSONParser.parse(json)) == spec)
        let options = spec.options.downloadOptions(maximumConnections: 8)
        #expect(options.network == spec.options.network && options.tls.clientCertificate == spec.options.tls.clientCertificate)
        #expect(spec.options != TaskSpec(url: "https://example.test/x", destination: .file("/x")).options,
                "other network settings are another client, with its own pool")
        #expect(spec.problem() == nil)
    }

    @Test(arguments: [
        (#"{"resolve":["example.test:443"]}"#, "spec.options.resolve"),
        (#"{"connectTo":["a:b"]}"#, "spec.options.connectTo"),
        (#"{"ipVersion":5}"#, "spec.options.ipVersion"),
        (#"{"interface":"a/b"}"#, "spec.options.interface"),
        (#"{"clientKey":"/k.pem"}"#, "spec.options.clientKey"),
    ])
    func badSettingsAreRefusedNamingTheField(options: String, field: String) throws {
        let text = #"{"url":"http://h/x","path":"/x","options":"# + options + "}"
        #expect {
            try TaskSpec(json: JSONParser.parse(text))
        } throws: { error in
            (error as? SchemaError)?.field == field
        }
    }

    @Test func relativeCertificatePathsAreAProblem() throws {
        var spec = try Self.spec()
        spec.options.tls.clientCertificate = TLSSettings.ClientCertificate(certificateFile: "client.pem")
        #expect(spec.problem() == "\"client.pem\" is not an absolute path")
    }
}
