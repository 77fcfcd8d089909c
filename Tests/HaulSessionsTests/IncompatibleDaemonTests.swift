import Foundation
import Glibc
import Haul
import HaulTestSupport
import Synchronization
import Testing
@testable import HaulSessions

/// A daemon of another protocol version (a `haul` of another release) at the session's socket: a client is
/// refused at once with both versions and the daemon's executable, and starts no daemon of its own.
@Suite(.serialized) struct IncompatibleDaemonTests {
    @Test func aDaemonOfAnotherProtocolVersionIsRefusedWithBothVersionsAndItsExecutable() async throws {
        let sandbox = try SessionSandbox("mismatch")
        // Not `cleanUp()`, which kills the session's daemon: this daemon is this process, stopped below.
        defer { sandbox.root.remove() }
        // The daemon runs in this process, speaking the next protocol version.
        let stop = Mutex<(@Sendable (String) -> Void)?>(nil)
        var daemonConfiguration = DaemonConfiguration(paths: sandbox.paths)
        daemonConfiguration.protocolVersion = SessionProtocol.version + 1
        daemonConfiguration.log = { _ in }
        daemonConfiguration.installStopHandler = { handler in stop.withLock { $0 = handler } }
        let daemon = Task { try await SessionDaemon.run(daemonConfiguration) }
        var failure: (any Error)?
        do { try await expectRefusals(sandbox) } catch { failure = error }
        // Stopped whatever the checks found (once it serves, it has installed its stop handler).
        #expect(poll(within: 60) { stop.withLock { $0 } != nil }, "the daemon started serving")
        stop.withLock { $0 }?("test over")
        #expect(try await daemon.value == 0)
        if let failure { throw failure }
    }

    func expectRefusals(_ sandbox: SessionSandbox) async throws {
        var configuration = sandbox.configuration()
        configuration.startsDaemon = false
        // Until the daemon listens, a client finds nothing; then it finds the daemon and refuses it.
        let deadline = ContinuousClock.now + .seconds(60)
        var outcome: SessionError = .daemonUnavailable("not tried")
        while ContinuousClock.now < deadline {
            do {
                let session = try await HaulSession.connect(sandbox.identifier, configuration: configuration)
                await session.close()
                Issue.record("a daemon of protocol \(SessionProtocol.version + 1) was accepted")
                break
            } catch {
                outcome = error
                guard case .daemonUnavailable = error else { break }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let executable = try #require(SessionConfiguration.currentExecutable())
        let expected = DaemonVersionMismatch(daemonProtocol: SessionProtocol.version + 1,
                                             daemonHaulVersion: SessionProtocol.haulVersion, executable: executable)
        #expect(outcome == .incompatibleDaemon(expected), "\(outcome)")
        #expect(outcome.description.contains("protocol \(SessionProtocol.version + 1)")
                && outcome.description.contains("protocol \(SessionProtocol.version) (Haul")
                && outcome.description.contains(executable), "\(outcome)")

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
