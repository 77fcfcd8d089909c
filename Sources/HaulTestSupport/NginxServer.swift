import Foundation
import Glibc
import Synchronization

/// The system nginx, started as a child process on free loopback ports with a generated configuration.
///
/// Everything it writes (config, pid file, temp files, logs, and by default the data directory) lives in its
/// own temporary directory, so any number of instances can run at once. ``stop()`` ends it; so does
/// deinitialization, so a failing test cannot leave it running.
///
/// ```swift
/// let nginx = try NginxServer()
/// try TestFiles.create(at: nginx.dataDirectory + "/file", size: 4 << 20)
/// let url = nginx.url("/file", tls: true)          // https://localhost:PORT/file
/// // ... fetch it, then:
/// let entries = nginx.accessLog()
/// ```
public final class NginxServer: @unchecked Sendable {
    // @unchecked Sendable: every stored property is immutable; `process` guards its own state with a lock.

    /// Where the tests expect the binary; `Scripts/test.sh` installs it.
    public static let executablePath = "/usr/sbin/nginx"

    /// The server's private directory (config, logs, temp files).
    public let directory: String
    /// The directory served at `/`: the configured one, or an empty `data` directory inside ``directory``.
    public let dataDirectory: String
    /// The plain-HTTP port, on 127.0.0.1 (and [::1] if ``NginxConfiguration/enableIPv6``).
    public let httpPort: UInt16
    /// The HTTPS port, `nil` when TLS is disabled.
    public let httpsPort: UInt16?
    /// The configuration the server was started with.
    public let configuration: NginxConfiguration
    /// The path of the access log (one ``AccessLogEntry`` per line).
    public var accessLogPath: String { directory + "/access.log" }
    /// The path of the error log (level `info`).
    public var errorLogPath: String { directory + "/error.log" }

    private let temporaryDirectory: TemporaryDirectory
    private let process: SupervisedProcess

    /// Starts nginx and returns once every port accepts connections.
    ///
    /// Free ports are chosen by binding port 0 and releasing it; if another process takes one before nginx
    /// binds it, nginx is restarted on new ports (a few times) rather than failing the test.
    public init(configuration: NginxConfiguration = NginxConfiguration()) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executablePath) else {
            throw TestSupportError("nginx not found at \(Self.executablePath): run Scripts/test.sh, which installs it")
        }
        let temporaryDirectory = try TemporaryDirectory(prefix: "haul-nginx")
        let directory = temporaryDirectory.path
        try temporaryDirectory.makeSubdirectory("temp")
        let dataDirectory = try configuration.dataDirectory ?? temporaryDirectory.makeSubdirectory("data")
        let certificate = configuration.enableTLS ? try configuration.certificate ?? TestCertificateAuthority.shared().server : nil

        // nginx's `-e`: it opens its error log before reading the configuration, and without `-e` that would
        // be /var/log/nginx/error.log.
        let (ports, process) = try SupervisedProcess.startOnFreePorts(
            configuration.enableTLS ? 2 : 1, hosts: (configuration.enableIPv4 ? ["127.0.0.1"] : []) + (configuration.enableIPv6 ? ["::1"] : []),
            name: "nginx", logs: [directory + "/error.log", directory + "/nginx.stderr"]) { ports in
            // A lost port race's message from the try before must not decide about this one.
            try? FileManager.default.removeItem(atPath: directory + "/error.log")
            let text = configuration.render(
                directory: directory, dataDirectory: dataDirectory, httpPort: ports[0], httpsPort: ports.count > 1 ? ports[1] : nil,
                certificate: certificate)
            try text.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            return try SupervisedProcess(
                executable: Self.executablePath,
                arguments: ["-p", directory + "/", "-c", directory + "/nginx.conf", "-e", directory + "/error.log"],
                outputPath: directory + "/nginx.stderr")
        }
        self.temporaryDirectory = temporaryDirectory
        self.directory = directory
        self.dataDirectory = dataDirectory
        self.httpPort = ports[0]
        self.httpsPort = ports.count > 1 ? ports[1] : nil
        self.configuration = configuration
        self.process = process
        Self.stopAtExit(self)
    }

    deinit {
        stop()
    }

    /// A server still running when the test process exits is stopped then, which removes its directory (and
    /// the data a fixture keeps in it): shared fixtures live for the whole run, and Swift Testing has no
    /// run-wide teardown. (The watchdog only stops nginx; it leaves the directory.)
    private static func stopAtExit(_ server: NginxServer) {
        running.withLock { running in
            running.removeAll { $0.server == nil }
            running.append(WeakServer(server))
        }
        let isFirst = atExitRegistered.withLock { registered in
            defer { registered = true }
            return !registered
        }
        guard isFirst else { return }
        atexit {
            for entry in NginxServer.running.withLock({ $0 }) { entry.server?.stop() }
        }
    }

    private final class WeakServer: @unchecked Sendable {
        // @unchecked Sendable: `server` is written once in init; `weak` loads are atomic.
        weak var server: NginxServer?
        init(_ server: NginxServer) { self.server = server }
    }

    private static let running = Mutex<[WeakServer]>([])
    private static let atExitRegistered = Mutex(false)

    /// A URL on this server: `http://127.0.0.1:PORT/path`, or with `tls` `https://localhost:PORT/path` (the
    /// name the test certificate is issued for), or with `ipv6` the `[::1]` equivalent.
    public func url(_ path: String, tls: Bool = false, ipv6: Bool = false) -> String {
        let port = tls ? (httpsPort ?? httpPort) : httpPort
        let host = ipv6 ? "[::1]" : (tls ? "localhost" : "127.0.0.1")
        return "\(tls ? "https" : "http")://\(host):\(port)\(path.hasPrefix("/") ? path : "/" + path)"
    }

    /// The parsed access log: one entry per completed request, in completion order.
    public func accessLog() -> [AccessLogEntry] {
        guard let text = try? String(contentsOfFile: accessLogPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap(AccessLogEntry.init(line:))
    }

    /// The access log once it has at least `count` entries, or whatever it has after `timeout` seconds.
    ///
    /// nginx logs a request when it finalizes it, which can be a moment after the client has read the last
    /// byte; tests that read the log right after a client exits use this instead of ``accessLog()``.
    public func accessLog(waitingForCount count: Int, timeout: Double = Polling.defaultDeadline) -> [AccessLogEntry] {
        accessLog(waitingUntil: { $0.count >= count }, timeout: timeout)
    }

    /// The access log once `condition` holds for it, or as it is after `timeout` seconds: for a test that
    /// knows which requests it waits for rather than how many lines come before them.
    public func accessLog(waitingUntil condition: ([AccessLogEntry]) -> Bool, timeout: Double = Polling.defaultDeadline) -> [AccessLogEntry] {
        poll(every: .milliseconds(10), within: timeout, reading: accessLog, until: condition)
    }

    /// Stops nginx (fast shutdown: SIGTERM to the master, which stops its workers), waits for it to exit and
    /// removes its directory. Calling it again does nothing.
    public func stop() {
        guard process.stop() else { return }
        temporaryDirectory.remove()
    }
}
