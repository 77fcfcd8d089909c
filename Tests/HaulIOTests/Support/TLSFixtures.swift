import Foundation
import Glibc
import Synchronization
@testable import HaulIO

/// Certificates generated with the `openssl` CLI into a temporary directory, once per test run.
struct TLSFixtures: Sendable {
    let directory: String
    var caFile: String { directory + "/ca.pem" }

    /// CA-signed, SANs DNS:localhost and IP:127.0.0.1.
    var server: (cert: String, key: String) { (directory + "/server.pem", directory + "/server.key") }
    /// Self-signed, same SANs.
    var selfSigned: (cert: String, key: String) { (directory + "/self.pem", directory + "/self.key") }
    /// CA-signed, but only for DNS:other.test.
    var otherName: (cert: String, key: String) { (directory + "/other.pem", directory + "/other.key") }

    /// A 3 MiB file served by ``OpenSSLServer`` in file mode as `/big.bin`: byte i is `i * 7 mod 251`.
    static let bigFileSize = 3 << 20
    static func bigFileByte(at index: Int) -> UInt8 { UInt8(index &* 7 % 251) }

    static let shared: Result<TLSFixtures, any Error> = Result { try TLSFixtures() }

    private init() throws {
        var template = Array("\(temporaryRoot())/haul-tls-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError(call: "mkdtemp", errno: errno) }
        directory = String(cString: made)
        TLSFixtures.removeAtExit(directory)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Haul Test CA",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try issue(name: "server", subject: "/CN=localhost", sans: "DNS:localhost,IP:127.0.0.1")
        try issue(name: "other", subject: "/CN=other.test", sans: "DNS:other.test")
        try run(["req", "-x509"] + ec + ["-keyout", "self.key", "-out", "self.pem", "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        let big = Data((0..<TLSFixtures.bigFileSize).map(TLSFixtures.bigFileByte(at:)))
        try big.write(to: URL(fileURLWithPath: directory + "/big.bin"))
    }

    /// The fixture directory lives for the whole test run, and Swift Testing has no run-wide teardown: it is
    /// removed when the test process exits.
    private static func removeAtExit(_ directory: String) {
        directoryToRemove.withLock { $0 = directory }
        atexit {
            guard let directory = TLSFixtures.directoryToRemove.withLock({ $0 }) else { return }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private static let directoryToRemove = Mutex<String?>(nil)

    private func issue(name: String, subject: String, sans: String) throws {
        try run(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
        try "subjectAltName=\(sans)\nextendedKeyUsage=serverAuth\n".write(
            toFile: "\(directory)/\(name).ext", atomically: true, encoding: .utf8)
        try run(["x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext"])
    }

    private func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw FixtureError(message: "openssl \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
        }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// `openssl s_server -www` on a free 127.0.0.1 port, terminated by `stop()`.
///
/// The server chooses the port itself (`-accept 127.0.0.1:0`) and names it on its standard output
/// (`ACCEPT 127.0.0.1:PORT`): a port chosen here and handed over could be taken by a test running in parallel
/// before s_server bound it, and that one's server would then answer on it.
final class OpenSSLServer: @unchecked Sendable {
    // @unchecked Sendable: `process` is only started in init and terminated in stop; `scratch` only read.
    let port: UInt16
    private let process: Process
    /// Holds s_server's standard output.
    private let scratch: OutputFileScratch

    /// `servingFilesFrom` switches to `-WWW` mode: `GET /name` returns that file from the directory.
    init(cert: String, key: String, servingFilesFrom directory: String? = nil) throws {
        let scratch = OutputFileScratch()
        scratch.write("s_server.out", "")
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch.file("s_server.out")))
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        // Not -quiet: it would silence the ACCEPT line.
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", cert, "-key", key,
                             directory == nil ? "-www" : "-WWW", "-alpn", "http/1.1"]
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var port: UInt16?
        // Generous: it only bounds a server that never starts (a loaded machine can take seconds).
        poll(within: 60) {
            port = Self.acceptedPort(in: scratch.read("s_server.out") ?? "")
            return port != nil || !process.isRunning
        }
        guard let port else {
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            throw FixtureError(message: "openssl s_server did not start listening: \(scratch.read("s_server.out") ?? "")")
        }
        self.process = process
        self.scratch = scratch
        self.port = port
    }

    /// The port of s_server's `ACCEPT 127.0.0.1:PORT` line, once it has written it.
    static func acceptedPort(in output: String) -> UInt16? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("ACCEPT ") }),
              let colon = line.lastIndex(of: ":") else { return nil }
        return UInt16(line[line.index(after: colon)...])
    }

    func stop() {
        // SIGKILL rather than terminate(): s_server does not always die of SIGTERM here, and waiting would hang.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
