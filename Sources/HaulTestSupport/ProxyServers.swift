import Foundation
import Glibc

// Real proxies for the proxy tests, each started as a child process on a free loopback port with its
// configuration, logs and state in its own temporary directory, and stopped by `stop()` (or deinit), which
// also removes that directory. A watchdog shell stops the proxy if the test process dies without doing so.
// `Scripts/test.sh` installs the packages (squid, stunnel4, microsocks); a missing one is a clear error, never
// a skipped test.

/// An HTTP proxy: Squid, on 127.0.0.1, caching nothing, optionally demanding Basic credentials.
///
/// Its access log (`access_log` in Squid's native format) is the evidence that traffic went through it:
/// one line per forwarded request (`GET http://127.0.0.1:8080/file`) and per tunnel (`CONNECT localhost:8443`,
/// written when the tunnel closes), with the authenticated user name.
public final class SquidProxy: @unchecked Sendable {
    // @unchecked Sendable: `process` is only touched through its own lock.

    /// Where the tests expect the binary.
    public static let executablePath = "/usr/sbin/squid"
    /// Squid's Basic authentication helper, reading an htpasswd-style file.
    public static let basicAuthHelperPath = "/usr/lib/squid/basic_ncsa_auth"

    /// `http://127.0.0.1:PORT`, or with credentials `http://USER:PASSWORD@127.0.0.1:PORT`.
    public func url(user: String? = nil, password: String? = nil) -> String {
        "http://\(ProxyServerSupport.userInfo(user, password))127.0.0.1:\(port)"
    }
    /// Squid's private directory.
    public var directory: String { server.directory.path }
    /// The access log's path.
    public var accessLogPath: String { directory + "/access.log" }

    private let server: ProxyServerProcess
    /// The port Squid listens on, on 127.0.0.1.
    public var port: UInt16 { server.port }

    /// Starts Squid and returns once it accepts connections. With `credentials`, every request must carry
    /// `Proxy-Authorization: Basic` for that user (checked by `basic_ncsa_auth` against an `openssl passwd
    /// -apr1` hash), and anything else gets `407`.
    public init(credentials: (user: String, password: String)? = nil) throws {
        if credentials != nil { try ProxyServerSupport.requireExecutable(Self.basicAuthHelperPath, package: "squid") }
        server = try ProxyServerProcess(
            name: "squid", directoryPrefix: "haul-squid", executable: Self.executablePath, package: "squid",
            logs: ["cache.log"],
            prepare: { directory in
                if let credentials {
                    let hash = try ChildProcess.runChecked("/usr/bin/openssl", ["passwd", "-apr1", credentials.password])
                        .outputText.trimmingCharacters(in: .whitespacesAndNewlines)
                    try "\(credentials.user):\(hash)\n".write(toFile: directory + "/passwd", atomically: true, encoding: .utf8)
                }
                // Run as root, Squid drops to its `proxy` user, which must be able to write here.
                try ProxyServerSupport.handOverToSquidUser(directory)
            },
            arguments: { port, directory in
                let authentication = credentials == nil ? "" : """
                    auth_param basic program \(Self.basicAuthHelperPath) \(directory)/passwd
                    auth_param basic children 2 startup=1 idle=1
                    auth_param basic realm haul-test
                    acl authenticated proxy_auth REQUIRED
                    http_access deny !authenticated
                    """
                let configuration = try ProxyServerProcess.write("""
                    http_port 127.0.0.1:\(port)
                    pid_filename \(directory)/squid.pid
                    access_log stdio:\(directory)/access.log squid
                    cache_log \(directory)/cache.log
                    cache_store_log none
                    buffered_logs off
                    netdb_filename none
                    coredump_dir \(directory)
                    cache deny all
                    cache_mem 4 MB
                    visible_hostname haul-test-proxy
                    shutdown_lifetime 0 seconds
                    pinger_enable off
                    icp_port 0
                    htcp_port 0
                    acl loopback src 127.0.0.0/8 ::1
                    \(authentication)
                    http_access allow loopback
                    http_access deny all

                    """, to: "squid.conf", in: directory)
                return ["-N", "-f", configuration]
            })
    }

    /// Stops Squid and removes its directory; calling it again does nothing.
    public func stop() { server.stop() }

    /// The parsed access log: one entry per request or tunnel. Connections that closed without sending a
    /// request (the readiness check's) are left out.
    public func accessLog() -> [SquidAccessLogEntry] {
        server.text(of: "access.log").split(separator: "\n").compactMap(SquidAccessLogEntry.init(line:)).filter { $0.method != "-" }
    }

    /// The access log once `condition` holds for it, or as it is after `timeout` seconds. Squid writes a line
    /// when a transaction ends, a tunnel's only when the tunnel closes.
    public func accessLog(waitingUntil condition: ([SquidAccessLogEntry]) -> Bool, timeout: Double = Polling.defaultDeadline) -> [SquidAccessLogEntry] {
        ProxyServerSupport.poll(timeout: timeout, read: accessLog, until: condition)
    }
}

/// One line of Squid's native access log:
/// `time elapsed client result/status bytes method URL user hierarchy/peer type`.
public struct SquidAccessLogEntry: Sendable, Hashable, CustomStringConvertible {
    /// E.g. `TCP_MISS`, `TCP_TUNNEL`, `TCP_DENIED`.
    public let result: String
    /// The HTTP status Squid sent the client (200 for an open tunnel, 407 for missing credentials).
    public let status: Int
    /// E.g. `GET`, `CONNECT`.
    public let method: String
    /// `http://host:port/path` for forwarded requests, `host:port` for tunnels.
    public let url: String
    /// The authenticated user, `nil` when there was none.
    public let user: String?
    /// The whole line.
    public let line: String

    init?(line: Substring) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 9 else { return nil }
        let resultAndStatus = fields[3].split(separator: "/")
        guard resultAndStatus.count == 2, let status = Int(resultAndStatus[1]) else { return nil }
        self.result = String(resultAndStatus[0])
        self.status = status
        self.method = String(fields[5])
        self.url = String(fields[6])
        self.user = fields[7] == "-" ? nil : String(fields[7])
        self.line = String(line)
    }

    public var description: String { line }
}

/// A TLS front for a plain TCP service: stunnel, on 127.0.0.1, with a certificate from the test CA. In front
/// of a ``SquidProxy`` it makes an `https://` proxy.
///
/// It logs every connection it accepts (`Service [tls] accepted connection from 127.0.0.1:PORT`).
public final class StunnelServer: @unchecked Sendable {
    /// Where the tests expect the binary (Debian's `stunnel4` package).
    public static let executablePath = "/usr/bin/stunnel4"

    /// The TLS port, on 127.0.0.1.
    public var port: UInt16 { server.port }
    /// The log's path.
    public var logPath: String { server.directory.file("stunnel.log") }

    private let server: ProxyServerProcess

    /// Starts stunnel, accepting TLS on a free port and forwarding the plaintext to 127.0.0.1:`targetPort`;
    /// `certificate` defaults to the test CA's server certificate (localhost, 127.0.0.1, ::1).
    public init(forwardingTo targetPort: UInt16, certificate: TestCertificateAuthority.CertificateFiles? = nil) throws {
        try ProxyServerSupport.requireExecutable(Self.executablePath, package: "stunnel4")
        let certificate = try certificate ?? TestCertificateAuthority.shared().server
        server = try ProxyServerProcess(
            name: "stunnel", directoryPrefix: "haul-stunnel", executable: Self.executablePath, package: "stunnel4",
            logs: ["stunnel.log"],
            arguments: { port, directory in
                let configuration = try ProxyServerProcess.write("""
                    foreground = yes
                    pid =
                    output = \(directory)/stunnel.log
                    debug = notice
                    [tls]
                    accept = 127.0.0.1:\(port)
                    connect = 127.0.0.1:\(targetPort)
                    cert = \(certificate.certificatePath)
                    key = \(certificate.keyPath)

                    """, to: "stunnel.conf", in: directory)
                return [configuration]
            })
    }

    /// Stops stunnel and removes its directory; calling it again does nothing.
    public func stop() { server.stop() }

    /// The log's lines.
    public func log() -> [String] {
        server.text(of: "stunnel.log").split(separator: "\n").map(String.init)
    }

    /// How many connections stunnel has accepted so far.
    public func acceptedConnections() -> Int { log().filter { $0.contains("accepted connection from") }.count }
}

/// A SOCKS5 proxy: microsocks, on 127.0.0.1, optionally requiring a user name and password (RFC 1929).
///
/// Its standard error is the evidence: one line per CONNECT it carried out,
/// `client[N] 127.0.0.1: connected to HOST:PORT`, with the host as the client named it (a name for
/// `socks5h://`, an address for `socks5://`). Refused logins and failed connects are not logged.
public final class MicrosocksProxy: @unchecked Sendable {
    /// Where the tests expect the binary.
    public static let executablePath = "/usr/bin/microsocks"

    /// The port, on 127.0.0.1.
    public var port: UInt16 { server.port }
    /// The log's path (microsocks' standard error).
    public var logPath: String { server.directory.file(ProxyServerProcess.outputName) }

    private let server: ProxyServerProcess

    /// Starts microsocks; with `credentials` it accepts only username/password authentication with them.
    public init(credentials: (user: String, password: String)? = nil) throws {
        // microsocks reports a port taken as a failed bind, not "Address already in use".
        server = try ProxyServerProcess(
            name: "microsocks", directoryPrefix: "haul-socks", executable: Self.executablePath, package: "microsocks",
            alsoRetryOn: "bind",
            arguments: { port, _ in
                var arguments = ["-i", "127.0.0.1", "-p", String(port)]
                if let credentials { arguments += ["-u", credentials.user, "-P", credentials.password] }
                return arguments
            })
    }

    /// `SCHEME://[USER:PASSWORD@]127.0.0.1:PORT` for `socks5` or `socks5h`.
    public func url(scheme: String = "socks5h", user: String? = nil, password: String? = nil) -> String {
        "\(scheme)://\(ProxyServerSupport.userInfo(user, password))127.0.0.1:\(port)"
    }

    /// Stops microsocks and removes its directory; calling it again does nothing.
    public func stop() { server.stop() }

    /// The targets of the connections made so far, as logged: `localhost:8443`, `127.0.0.1:8080`.
    public func connectedTargets() -> [String] {
        server.text(of: ProxyServerProcess.outputName).split(separator: "\n").compactMap { line in
            guard let range = line.range(of: ": connected to ") else { return nil }
            return String(line[range.upperBound...])
        }
    }

    /// ``connectedTargets()`` once `condition` holds for them, or as they are after `timeout` seconds.
    public func connectedTargets(waitingUntil condition: ([String]) -> Bool, timeout: Double = Polling.defaultDeadline) -> [String] {
        ProxyServerSupport.poll(timeout: timeout, read: connectedTargets, until: condition)
    }
}

// MARK: - Shared machinery (the process itself: SupervisedProcess.swift)

/// One proxy process and the private directory it runs in. Every proxy above starts the same way (its
/// package checked, a directory made and prepared, its configuration written for a free port, the process
/// started under a watchdog and waited for until it listens) and stops the same way (the process, then the
/// directory), here.
final class ProxyServerProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is only touched through its own lock; the rest is immutable.

    /// The file in the directory that takes the process's standard output and error.
    static let outputName = "output.log"

    /// The port the server listens on, on 127.0.0.1.
    let port: UInt16
    /// Its directory: configuration, logs, state.
    let directory: TemporaryDirectory
    private let process: SupervisedProcess

    /// Checks that `executable` (from Debian's `package`) is there, makes a directory `directoryPrefix-XXXXXX`,
    /// lets `prepare` fill it, and starts `executable` with the `arguments` for a free port (which may write
    /// configuration files into the directory, see ``write(_:to:in:)``). A failed start is reported with the
    /// tail of the output and of `logs` (names in the directory), and removes the directory.
    init(name: String, directoryPrefix: String, executable: String, package: String, logs: [String] = [],
         alsoRetryOn: String? = nil, prepare: (_ directory: String) throws -> Void = { _ in },
         arguments: (_ port: UInt16, _ directory: String) throws -> [String]) throws {
        try ProxyServerSupport.requireExecutable(executable, package: package)
        let directory = try TemporaryDirectory(prefix: directoryPrefix)
        do {
            try prepare(directory.path)
            let (ports, process) = try SupervisedProcess.startOnFreePorts(
                name: name, logs: (logs + [Self.outputName]).map(directory.file), alsoRetryOn: alsoRetryOn) { ports in
                try SupervisedProcess(executable: executable, arguments: try arguments(ports[0], directory.path),
                                      outputPath: directory.file(Self.outputName))
            }
            (port, self.process) = (ports[0], process)
        } catch {
            directory.remove()
            throw error
        }
        self.directory = directory
    }

    deinit { stop() }

    /// Stops the server and removes its directory; calling it again does nothing.
    func stop() {
        guard process.stop() else { return }
        directory.remove()
    }

    /// The text of the file `name` in the directory; empty when there is none (yet).
    func text(of name: String) -> String {
        (try? String(contentsOfFile: directory.file(name), encoding: .utf8)) ?? ""
    }

    /// Writes `configuration` to the file `name` in `directory` and returns its path.
    static func write(_ configuration: String, to name: String, in directory: String) throws -> String {
        let path = directory + "/" + name
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

enum ProxyServerSupport {
    static func requireExecutable(_ path: String, package: String) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSupportError("\(path) not found: the proxy tests need the Debian package \(package); "
                + "run Scripts/test.sh, which installs it (or apt-get install \(package))")
        }
    }

    static func userInfo(_ user: String?, _ password: String?) -> String {
        guard let user else { return "" }
        return user + (password.map { ":" + $0 } ?? "") + "@"
    }

    /// Squid run as root switches to its `proxy` user, which must own the directory holding its logs, PID file
    /// and password file. Nothing to do when not root (Squid then stays the invoking user).
    static func handOverToSquidUser(_ directory: String) throws {
        guard geteuid() == 0 else { return }
        guard let entry = getpwnam("proxy") else {
            throw TestSupportError("squid runs as the user \"proxy\" when started as root, and there is no such user")
        }
        let owner = entry.pointee.pw_uid
        let group = entry.pointee.pw_gid
        for path in [directory] + ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).map({ directory + "/" + $0 }) {
            guard chown(path, owner, group) == 0 else {
                throw TestSupportError("chown \(path) to proxy failed: \(TestSupportError.describe(errno: errno))")
            }
        }
    }

    static func poll<Value>(timeout: Double, read: () -> Value, until condition: (Value) -> Bool) -> Value {
        HaulTestSupport.poll(every: .milliseconds(10), within: timeout, reading: read, until: condition)
    }
}
