import Foundation
import Glibc
import Haul
import HaulTestSupport
import Synchronization
import Testing
@testable import HaulSessions

/// The nginx every daemon test downloads from, at full speed: a test that needs a download to last sets
/// `TaskOptions.rateLimit`, which holds whatever requests haul makes (nginx's `limit_rate` paces each request).
final class SessionServer: Sendable {
    static let shared: SessionServer = try! SessionServer()

    let nginx: NginxServer
    let data: String
    let smallSHA256: String
    let bigSHA256: String
    static let bigSize = 16 << 20

    init() throws {
        let data = NSTemporaryDirectory() + "haul-sessions-data-" + UUID().uuidString
        self.data = data
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        Self.dataToRemove.withLock { $0 = data }
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        configuration.enableTLS = false
        let server = try NginxServer(configuration: configuration)
        nginx = server
        Self.serverToStop.withLock { $0 = server }
        atexit {
            SessionServer.serverToStop.withLock { $0 }?.stop()
            if let directory = SessionServer.dataToRemove.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
        }
        try TestFiles.create(at: data + "/small.bin", size: 300_000, seed: 31)
        try TestFiles.create(at: data + "/big.bin", size: Self.bigSize, seed: 32)
        smallSHA256 = try TestFiles.sha256(ofFile: data + "/small.bin")
        bigSHA256 = try TestFiles.sha256(ofFile: data + "/big.bin")
    }

    private static let dataToRemove = Mutex<String?>(nil)
    private static let serverToStop = Mutex<NginxServer?>(nil)
}

/// A state directory and an output directory of one test's own, and the daemons it started: killed and
/// removed by ``cleanUp()``.
final class SessionSandbox: Sendable {
    let root: TemporaryDirectory
    let state: String
    let output: String
    let identifier: String

    static var haulBinary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("haul").path
    }

    init(_ identifier: String = "test") throws {
        root = try TemporaryDirectory(prefix: "haul-sess")
        state = root.file("state")
        output = try root.makeSubdirectory("out")
        self.identifier = identifier
    }

    var paths: SessionPaths { try! SessionPaths(identifier: identifier, stateDirectory: state) }

    func configuration(consumer: String? = "default") -> SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.stateDirectory = state
        configuration.daemonExecutable = Self.haulBinary
        configuration.consumer = consumer
        // A bound on a daemon that never starts, not a timing assertion: on a loaded machine running every
        // suite at once, starting the `haul` binary took over the default 20 s.
        configuration.startTimeout = .seconds(120)
        return configuration
    }

    func connect(consumer: String? = "default") async throws -> HaulSession {
        try await HaulSession.connect(identifier, configuration: configuration(consumer: consumer))
    }

    /// Runs `haul ARGUMENTS` with this sandbox's state directory.
    func haul(_ arguments: [String], timeout: Double = 60) throws -> ProcessResult {
        try ChildProcess.run("/usr/bin/env", ["HAUL_STATE_DIR=" + state, Self.haulBinary] + arguments, timeout: timeout)
    }

    var daemonPID: Int32? { paths.recordedDaemonPID() }

    /// Kills the session's daemon (SIGKILL) and waits until it is gone.
    func killDaemon() {
        if let pid = daemonPID { ProcessLiveness.kill(pid) }
    }

    func cleanUp() {
        killDaemon()
        root.remove()
    }

    /// Polls `condition` every 10 ms until it holds or `timeout` seconds pass; returns whether it held.
    @discardableResult
    static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        poll(every: .milliseconds(10), within: timeout, until: condition)
    }
}

/// Events from a session's stream until `stop` says enough, or `timeout` seconds (then what came so far).
func collectEvents(_ session: HaulSession, timeout: Double, until stop: @escaping @Sendable ([SessionEvent]) -> Bool) async -> [SessionEvent] {
    await withTaskGroup(of: [SessionEvent]?.self) { group in
        group.addTask {
            var events: [SessionEvent] = []
            for await event in session.events {
                events.append(event)
                if stop(events) { break }
            }
            return events
        }
        group.addTask {
            // The deadline of the collection (it races the events), not an ordering sleep.
            try? await Task.sleep(for: .seconds(timeout))
            return nil
        }
        var result: [SessionEvent] = []
        for await value in group {
            if let value { result = value }
            group.cancelAll()
            break
        }
        return result
    }
}

/// Awaits `body` for at most `timeout` seconds.
func within<T: Sendable>(_ timeout: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            // The deadline (it races `body`), not an ordering sleep.
            try await Task.sleep(for: .seconds(timeout))
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw TestTimeout(seconds: timeout)
        }
        group.cancelAll()
        return value
    }
}

struct TestTimeout: Error, CustomStringConvertible {
    var seconds: Double
    var description: String { "did not finish within \(seconds) s" }
}
