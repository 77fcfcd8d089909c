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
    // @unchecked Sendable: `process` is created in init and afterwards only touched under `stateLock`.

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
    private let process: Process
    private let stateLock = NSLock()
    private var isStopped = false

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

        var lastFailure = ""
        for _ in 0..<5 {
            let httpPort = try LoopbackPorts.freePort()
            let httpsPort = configuration.enableTLS ? try LoopbackPorts.freePort() : nil
            let text = configuration.render(
                directory: directory, dataDirectory: dataDirectory, httpPort: httpPort, httpsPort: httpsPort,
                certificate: certificate)
            try text.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            let process = try Self.launch(directory: directory)
            switch Self.waitUntilListening(process, ports: [httpPort, httpsPort].compactMap { $0 }, ipv6: configuration.enableIPv6) {
            case .listening:
                self.temporaryDirectory = temporaryDirectory
                self.directory = directory
                self.dataDirectory = dataDirectory
                self.httpPort = httpPort
                self.httpsPort = httpsPort
                self.configuration = configuration
                self.process = process
                Self.stopAtExit(self)
                return
            case .exited, .timedOut:
                Self.terminate(process)
                let log = (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? ""
                let output = (try? String(contentsOfFile: directory + "/nginx.stderr", encoding: .utf8)) ?? ""
                lastFailure = String((log + output).suffix(2000))
                // Only a lost port race is worth another try; anything else is a real configuration problem.
                guard lastFailure.contains("Address already in use") else { break }
                try? FileManager.default.removeItem(atPath: directory + "/error.log")
                continue
            }
            break
        }
        throw TestSupportError("nginx did not start:\n\(lastFailure)")
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
    public func accessLog(waitingForCount count: Int, timeout: Double = 5) -> [AccessLogEntry] {
        poll(every: .milliseconds(10), within: timeout, reading: accessLog, until: { $0.count >= count })
    }

    /// Stops nginx (fast shutdown: SIGTERM to the master, which stops its workers) and waits for it to exit.
    /// Calling it again does nothing.
    public func stop() {
        let shouldStop = stateLock.withLock {
            defer { isStopped = true }
            return !isStopped
        }
        guard shouldStop else { return }
        Self.terminate(process)
        temporaryDirectory.remove()
    }

    /// Runs nginx under a small shell watchdog that stops it when the test process goes away, for whatever
    /// reason: a crashed or killed test run must not leave nginx behind (deinit never runs then).
    /// SIGTERM to the watchdog forwards to the nginx master and waits for it. nginx's `-e`: it opens its error
    /// log before reading the config, and without `-e` that would be /var/log/nginx/error.log.
    private static let watchdogScript = """
        trap 'kill -TERM $nginx 2>/dev/null; wait $nginx; exit 0' TERM
        "$1" -p "$2/" -c "$2/nginx.conf" -e "$2/error.log" &
        nginx=$!
        while kill -0 "$3" 2>/dev/null && kill -0 $nginx 2>/dev/null; do sleep 0.2; done  # polls for the test process's end
        kill -TERM $nginx 2>/dev/null
        wait $nginx
        """

    private static func launch(directory: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", watchdogScript, "haul-nginx-watchdog", executablePath, directory, "\(getpid())"]
        process.standardInput = FileHandle.nullDevice
        _ = FileManager.default.createFile(atPath: directory + "/nginx.stderr", contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/nginx.stderr"))
        defer { try? output.close() }
        process.standardOutput = output
        process.standardError = output
        do {
            try process.run()
        } catch {
            throw TestSupportError("could not start nginx: \(error)")
        }
        return process
    }

    private enum StartOutcome { case listening, exited, timedOut }

    private static func waitUntilListening(_ process: Process, ports: [UInt16], ipv6: Bool) -> StartOutcome {
        let hosts = ipv6 ? ["127.0.0.1", "::1"] : ["127.0.0.1"]
        var outcome = StartOutcome.timedOut
        poll(within: 10) {
            guard process.isRunning else { outcome = .exited; return true }
            let allListening = ports.allSatisfy { port in hosts.allSatisfy { LoopbackPorts.acceptsConnections(host: $0, port: port) } }
            if allListening { outcome = .listening }
            return allListening
        }
        return outcome
    }

    /// SIGTERM to the watchdog (which stops nginx and waits for it), after a grace period SIGKILL, then reap it.
    private static func terminate(_ process: Process) {
        guard process.isRunning else {
            process.waitUntilExit()
            return
        }
        kill(process.processIdentifier, SIGTERM)
        poll(within: 5) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
