import Haul
import HaulTestSupport
import Logging
import Testing
@testable import HaulSessions

/// A session given a `Logger` logs its client side: the connection to the daemon, requests, events.
@Suite(.serialized) struct SessionLoggingTests {
    let server = SessionServer.shared

    @Test func aSessionLogsItsConnectionRequestsAndEvents() async throws {
        let sandbox = try SessionSandbox("logging")
        defer { sandbox.cleanUp() }
        let store = CapturingLogHandler.Store()
        let session = try await HaulSession.connect(sandbox.identifier, configuration: sandbox.configuration(),
                                                    logger: CapturingLogHandler.logger(store))
        let added = try await session.add(DownloadRequest(url: server.nginx.url("/small.bin"), destination: .file(sandbox.output + "/s.bin")))
        let events = await collectEvents(session, timeout: 30) { $0.contains { $0.type == "completed" } }
        #expect(events.map(\.type) == ["added", "started", "completed"], "\(events)")
        await session.close()

        let connected = try #require(store.with("connected to the session daemon").first)
        #expect(connected.metadata["haul.daemon.pid"] == session.daemonPID.map { "\($0)" })
        #expect(connected.metadata["haul.session"] == "logging")
        let operations = store.with("sending a request to the session daemon").compactMap { $0.metadata["haul.operation"] }
        #expect(operations.contains("add"), "\(operations)")
        let logged = store.with("session event")
        #expect(logged.compactMap { $0.metadata["haul.event.type"] } == ["added", "started", "completed"])
        #expect(logged.allSatisfy { $0.metadata["haul.task"] == "\(added.id)" })
    }
}
