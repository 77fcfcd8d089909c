import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport

/// The nginx and the files the CLI suites download from, started once for the whole test run.
final class CLIFixture: Sendable {
    static let shared: CLIFixture = try! CLIFixture()

    let nginx: NginxServer
    let data: String
    let ca: TestCertificateAuthority
    let bigSize = 16 << 20
    let bigSHA256: String

    init() throws {
        data = NSTemporaryDirectory() + "haul-cli-data-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        Self.removeAtExit(data)
        var configuration = NginxConfiguration()
        configuration.dataDirectory = data
        // /slow/ paces each request at 1 MB/s. That is no bound on a download (nginx paces per request, and
        // lets each new request send a second's worth at once), so a test that must act while a download
        // still runs paces it with haul's own `--limit-rate` (`paced`) instead, whatever its requests.
        configuration.rateLimitedLocation = .init(prefix: "/slow/", rate: "1m")
        // /noranges/ answers every request with the whole file (200), as a server without range support does.
        // alice:s3cret for /private/ (the hash made by openssl, as htpasswd would).
        let hash = try ChildProcess.run("/usr/bin/openssl", ["passwd", "-apr1", "s3cret"], timeout: 30).outputText
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try "alice:\(hash)\n".write(toFile: data + "/.htpasswd", atomically: true, encoding: .utf8)
        configuration.extraServerDirectives = """
            location /named/ { alias \(data)/; add_header Content-Disposition 'attachment; filename="report 2026.bin"'; }
            location /noranges/ { alias \(data)/; max_ranges 0; }
            location /meta4/ { alias \(data)/; types { application/metalink4+xml meta4; } }
            location /since/ { alias \(data)/; if_modified_since before; }
            location /private/ { alias \(data)/; auth_basic "haul tests"; auth_basic_user_file \(data)/.htpasswd; }
            """
        let server = try NginxServer(configuration: configuration)
        nginx = server
        Self.serverToStop.withLock { $0 = server }
        ca = try TestCertificateAuthority.shared()
        try TestFiles.create(at: data + "/big.bin", size: bigSize, seed: 5)
        bigSHA256 = try TestFiles.sha256(ofFile: data + "/big.bin")
        for index in 0..<20 {
            try TestFiles.create(at: data + "/f\(index).bin", size: 50_000 + 997 * index, seed: UInt64(200 + index))
        }
    }

    func sha256(_ name: String) throws -> String { try TestFiles.sha256(ofFile: data + "/" + name) }

    /// The fixture lives for the whole test run, and Swift Testing has no run-wide teardown: when the test
    /// process exits, nginx is stopped (which removes its own directory) and the data directory removed.
    private static func removeAtExit(_ directory: String) {
        dataToRemove.withLock { $0 = directory }
        atexit {
            CLIFixture.serverToStop.withLock { $0 }?.stop()
            guard let directory = CLIFixture.dataToRemove.withLock({ $0 }) else { return }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private static let dataToRemove = Mutex<String?>(nil)
    fileprivate static let serverToStop = Mutex<NginxServer?>(nil)
}
