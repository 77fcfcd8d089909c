import Haul
import Testing
@testable import HaulSessions

/// The client's decision on a daemon's `hello` answer (`SessionProtocol.helloRefusal`): one protocol version
/// talks, any other is refused with both versions and the daemon's executable, whatever the answer's shape.
@Suite struct DaemonVersionCheckTests {
    static let configured = "/opt/haul-0.2.0/bin/haul"

    func hello(protocol version: Int?, haul: String? = nil, executable: String? = nil) -> ReplyBody {
        var body = ReplyBody()
        body.protocolVersion = version
        body.haulVersion = haul
        body.executable = executable
        return body
    }

    @Test func aDaemonOfThisProtocolVersionIsAccepted() {
        let answer = hello(protocol: SessionProtocol.version, haul: "9.9.9", executable: "/usr/bin/haul")
        #expect(SessionProtocol.helloRefusal(.success(answer), executable: Self.configured) == nil,
                "another Haul release of the same protocol talks")
    }

    @Test func aDaemonOfAnotherVersionIsRefusedNamingBothVersionsAndItsExecutable() throws {
        let answer = hello(protocol: SessionProtocol.version + 1, haul: "0.9.0", executable: "/usr/local/bin/haul")
        let refusal = try #require(SessionProtocol.helloRefusal(.success(answer), executable: Self.configured))
        let expected = DaemonVersionMismatch(daemonProtocol: SessionProtocol.version + 1, daemonHaulVersion: "0.9.0",
                                             executable: "/usr/local/bin/haul")
        #expect(refusal == .incompatibleDaemon(expected))
        #expect(expected.clientProtocol == SessionProtocol.version && expected.clientHaulVersion == SessionProtocol.haulVersion)
        let text = refusal.description
        for part in ["protocol \(SessionProtocol.version + 1)", "Haul 0.9.0", "/usr/local/bin/haul",
                     "protocol \(SessionProtocol.version)", "Haul \(SessionProtocol.haulVersion)"] {
            #expect(text.contains(part), "\(part) in: \(text)")
        }
        // The executable the daemon names wins over the configured one, which may not be what started it.
        #expect(!text.contains(Self.configured))
    }

    @Test func aProtocolOneDaemonsRefusalIsAnIncompatibleDaemonNamingTheConfiguredExecutable() throws {
        let refused = SessionError.rejected(code: "unsupported-protocol", message: "this daemon speaks protocol 1, not 2")
        let refusal = try #require(SessionProtocol.helloRefusal(.failure(refused), executable: Self.configured))
        #expect(refusal == .incompatibleDaemon(DaemonVersionMismatch(daemonProtocol: 1, daemonHaulVersion: nil, executable: Self.configured)))
        #expect(refusal.description.contains("protocol 1 (an older Haul)") && refusal.description.contains(Self.configured), "\(refusal)")
    }

    @Test func anAnswerWithoutAVersionIsAProtocolViolationAndOtherFailuresPassThrough() {
        guard case .protocolViolation? = SessionProtocol.helloRefusal(.success(hello(protocol: nil)), executable: nil) else {
            Issue.record("expected a protocol violation"); return
        }
        #expect(SessionProtocol.helloRefusal(.failure(.disconnected), executable: nil) == .disconnected)
        #expect(SessionProtocol.helloRefusal(.failure(.stopping), executable: nil) == .stopping)
    }

    /// A daemon of another version may add fields this version does not know: its `hello` answer is still
    /// read for its versions (to be refused by them), while this version's answers stay strict.
    @Test func anotherVersionsHelloIsReadForItsVersionsOnly() throws {
        let other = #"{"id":1,"ok":true,"protocol":7,"haul":"1.4.0","executable":"/usr/bin/haul","pid":42,"features":["x"]}"#
        guard case .reply(1, .success(let body)) = try ProtocolCodec.decodeDaemonMessage(Array(other.utf8)) else {
            Issue.record("expected a reply"); return
        }
        #expect(body.protocolVersion == 7 && body.haulVersion == "1.4.0" && body.executable == "/usr/bin/haul" && body.pid == 42)
        let same = #"{"id":1,"ok":true,"protocol":\#(SessionProtocol.version),"features":["x"]}"#
        #expect(throws: SessionError.self) { try ProtocolCodec.decodeDaemonMessage(Array(same.utf8)) }
    }

}
