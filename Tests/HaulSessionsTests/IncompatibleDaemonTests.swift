import Foundation
import Glibc
import Haul
import HaulIO
import HaulTestSupport
import Synchronization
import Testing
@testable import HaulSessions

/// Clients and daemons of different protocol versions (a library and a `haul` of different releases): a
/// client is refused at once with both versions and the daemon's executable, and starts no daemon of its
/// own; a client of protocol 1 is refused in words it reads.
@Suite(.serialized) struct IncompatibleDaemonTests {
    /// Runs `body` while a daemon speaking `protocolVersion` serves a sandbox's session in this process, and
    /// stops it afterwards, whatever `body` found.
    func withDaemon(protocolVersion: Int, _ body: (SessionSandbox) async throws -> Void) async throws {
        let sandbox = try SessionSandbox("mismatch")
        // Not `cleanUp()`, which kills the session's daemon: this daemon is this process, stopped below.
        defer { sandbox.root.remove() }
        let stop = Mutex<(@Sendable (String) -> Void)?>(nil)
        var configuration = DaemonConfiguration(paths: sandbox.paths)
        configuration.protocolVersion = protocolVersion
        configuration.log = { _ in }
        configuration.installStopHandler = { handler in stop.withLock { $0 = handler } }
        let daemon = Task { try await SessionDaemon.run(configuration) }
        // Once it serves, it has installed its stop handler (and listens). Awaited, not polled with a blocking
        // wait: the daemon's task runs on the same shared pool, and with its other thread busy (suites in
        // parallel on two cores) a blocked one left it no thread at all. The wait then ended without a stop
        // handler, nothing stopped the daemon that served a moment later, and the test awaited it forever.
        let serving = await eventually(within: 120) { stop.withLock { $0 } != nil }
        var failure: (any Error)?
        if serving {
            do { try await body(sandbox) } catch { failure = error }
        }
        #expect(serving, "the daemon started serving")
        if let stopDaemon = stop.withLock({ $0 }) {
            stopDaemon("test over")
            #expect(try await daemon.value == 0)
        } else {
            // Never served: not awaited (it would be forever), cancelled.
            daemon.cancel()
        }
        if let failure { throw failure }
    }

    @Test func aDaemonOfAnotherProtocolVersionIsRefusedWithBothVersionsAndItsExecutable() async throws {
        try await withDaemon(protocolVersion: SessionProtocol.version + 1) { sandbox in
            var configuration = sandbox.configuration()
            configuration.startsDaemon = false
            let executable = try #require(SessionConfiguration.currentExecutable())
            let expected = DaemonVersionMismatch(daemonProtocol: SessionProtocol.version + 1,
                                                 daemonHaulVersion: SessionProtocol.haulVersion, executable: executable)
            let error = await #expect(throws: SessionError.self) {
                _ = try await HaulSession.connect(sandbox.identifier, configuration: configuration)
            }
            #expect(error == .incompatibleDaemon(expected), "\(String(describing: error))")
            let text = error?.description ?? ""
            #expect(text.contains("protocol \(SessionProtocol.version + 1)") && text.contains("protocol \(SessionProtocol.version) (Haul")
                    && text.contains(executable), "\(text)")

            // A client allowed to start daemons (from an executable that does not exist) is refused the same
            // way at once: an incompatible daemon is neither retried nor replaced.
            configuration.startsDaemon = true
            configuration.daemonExecutable = sandbox.root.file("no-such-haul")
            let started = ContinuousClock.now
            await #expect(throws: SessionError.incompatibleDaemon(expected)) {
                _ = try await HaulSession.connect(sandbox.identifier, configuration: configuration)
            }
            #expect(ContinuousClock.now - started < configuration.startTimeout, "refused, not waited out")
            #expect(!FileManager.default.fileExists(atPath: sandbox.paths.daemonLog), "no daemon was started")
        }
    }

    /// A client of protocol 1 cannot read hello's new fields: it gets `unsupported-protocol`, the one shape
    /// of failure it reads, with the daemon's versions and executable in the message.
    @Test func aProtocolOneClientIsRefusedInWordsItReads() async throws {
        try await withDaemon(protocolVersion: SessionProtocol.version) { sandbox in
            let socket = try UnixSocket.connect(to: sandbox.paths.socket)
            let hello = Array(#"{"id":1,"op":"hello","protocol":1}"#.utf8) + [0x0A]
            #expect(hello.withUnsafeBytes { write(socket.descriptor.rawValue, $0.baseAddress, $0.count) } == hello.count)
            // The reply is one line; waited for with a deadline, not a blocking read.
            var reply: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            let deadline = ContinuousClock.now + .seconds(30)
            while !reply.contains(0x0A), ContinuousClock.now < deadline {
                var descriptor = pollfd(fd: socket.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&descriptor, 1, 100) == 1 else { continue }
                let count = read(socket.descriptor.rawValue, &buffer, buffer.count)
                if count <= 0 { break }
                reply += buffer[0..<count]
            }
            let line = try #require(reply.split(separator: 0x0A).first, "a reply line")
            guard case .reply(1, .failure(let failure)) = try ProtocolCodec.decodeDaemonMessage(line) else {
                Issue.record("expected a refusal: \(String(decoding: line, as: UTF8.self))"); return
            }
            let executable = try #require(SessionConfiguration.currentExecutable())
            #expect(failure.code == "unsupported-protocol")
            #expect(failure.message == "this daemon speaks protocol \(SessionProtocol.version) (Haul \(SessionProtocol.haulVersion), \(executable)), not 1")
        }
    }
}
