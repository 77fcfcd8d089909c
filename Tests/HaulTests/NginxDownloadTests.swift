import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// One nginx for the suite (HTTP + HTTPS with the test CA), with a 64 MiB file and a few small ones.
final class NginxFixture: Sendable {
    static let shared: NginxFixture = try! NginxFixture()

    let nginx: NginxServer
    let bigFile = "/big.bin"
    let bigSize = 64 << 20
    let bigSHA256: String
    let ca: TestCertificateAuthority

    init() throws {
        var configuration = NginxConfiguration()
        configuration.redirects = [
            .init(from: "/hop-a", to: "/hop-b"),
            .init(from: "/hop-b", to: "/small-0.bin", status: 301),
            .init(from: "/loop-a", to: "/loop-b"),
            .init(from: "/loop-b", to: "/loop-a"),
        ]
        nginx = try NginxServer(configuration: configuration)
        ca = try TestCertificateAuthority.shared()
        try TestFiles.create(at: nginx.dataDirectory + bigFile, size: bigSize, seed: 7)
        bigSHA256 = try TestFiles.sha256(ofFile: nginx.dataDirectory + bigFile)
        for index in 0..<5 {
            try TestFiles.create(at: nginx.dataDirectory + "/small-\(index).bin", size: 100_000 + index, seed: UInt64(index))
        }
    }
}

func scratchDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "haul-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite(.serialized) struct NginxDownloadTests {
    let fixture = NginxFixture.shared

    func options(connections: Int = 8) -> DownloadOptions {
        var options = DownloadOptions(connections: connections)
        options.tls.caFile = fixture.ca.caCertificatePath
        options.synchronizesToDisk = false
        return options
    }

    @Test(arguments: [1, 2, 8, 16], [false, true])
    func downloadIsByteIdentical(connections: Int, tls: Bool) async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downloader = try HaulClient(options: options(connections: connections))
        let result = try await downloader.download(fixture.nginx.url(fixture.bigFile, tls: tls), to: directory + "/big.bin")
        #expect(result.bytes == Int64(fixture.bigSize))
        #expect(try TestFiles.sha256(ofFile: directory + "/big.bin") == fixture.bigSHA256)
        #expect(result.connections == connections)
        #expect(result.bytesRequested == Int64(fixture.bigSize), "no byte requested twice")
        #expect(!FileManager.default.fileExists(atPath: directory + "/big.bin.part"))
        // 64 MiB goes out in 4 MiB requests: far more requests than connections, all on kept-alive
        // connections (plus one to replace the probe's, which stops mid-response).
        let opened = await connectionsOpened(downloader)
        #expect(opened <= connections + 1)
    }

    /// The probe asks for one request's worth when other connections share the file (so that its segment
    /// can be shared out like any other), for everything with one connection; either way, and for a file
    /// smaller than that bound, the file is whole and no byte is asked for twice.
    @Test(arguments: [(8, "/big.bin", "bytes=0-4194303"), (1, "/big.bin", "bytes=0-"), (8, "/small-3.bin", "bytes=0-4194303")])
    func theProbeIsBoundedOnlyWhenConnectionsShareTheFile(connections: Int, path: String, probeRange: String) async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A query of this run's own (nginx ignores it) tells its requests from those of tests running meanwhile
        // against the shared server, and from this test's other arguments.
        let marker = "probe=\(UUID().uuidString)"
        let size = path == fixture.bigFile ? Int64(fixture.bigSize) : 100_003
        let result = try await HaulClient(options: options(connections: connections)).download(fixture.nginx.url(path + "?" + marker), to: directory + "/f")
        #expect(result.bytes == size && result.bytesRequested == size, "no byte requested twice")
        #expect(try TestFiles.sha256(ofFile: directory + "/f") == TestFiles.sha256(ofFile: fixture.nginx.dataDirectory + path))
        // nginx logs a request when it ends, so the probe's entry is waited for, not assumed to be first.
        let probes = poll(reading: { fixture.nginx.accessLog().filter { $0.target.hasSuffix(marker) && $0.range?.hasPrefix("bytes=0-") == true } },
                          until: { !$0.isEmpty })
        #expect(probes.map(\.range) == [probeRange], "\(probes)")
        #expect(probes.first?.status == 206)
    }

    func connectionsOpened(_ downloader: HaulClient) async -> Int {
        await withCheckedContinuation { continuation in
            downloader.lanes[0].httpClient.loop.execute { continuation.resume(returning: downloader.lanes[0].httpClient.pool.connectionsOpened) }
        }
    }

    @Test func keepAliveConnectionIsReusedAcrossDownloads() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downloader = try HaulClient(options: options(connections: 1))
        // This test's own requests, told apart by a query (nginx ignores it) from those of tests running meanwhile.
        let marker = "reuse=\(UUID().uuidString)"
        for index in 0..<5 {
            let result = try await downloader.download(fixture.nginx.url("/small-\(index).bin?" + marker), to: directory + "/s\(index)")
            #expect(result.bytes == Int64(100_000 + index))
        }
        let entries = fixture.nginx.accessLog(waitingUntil: { $0.filter { $0.target.hasSuffix(marker) }.count >= 5 })
            .filter { $0.target.hasSuffix(marker) }
        #expect(entries.count == 5)
        #expect(Set(entries.map(\.connection)).count == 1, "all five requests on one TCP connection")
        #expect(entries.map(\.connectionRequests) == [1, 2, 3, 4, 5])
        #expect(await connectionsOpened(downloader) == 1)
    }

    @Test func followsRedirects() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downloader = try HaulClient(options: options())
        let result = try await downloader.download(fixture.nginx.url("/hop-a"), to: directory + "/r.bin")
        #expect(result.redirects == 2)
        #expect(result.finalURL.path == "/small-0.bin")
        #expect(result.bytes == 100_000)
    }

    @Test func detectsRedirectLoops() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downloader = try HaulClient(options: options())
        await #expect {
            _ = try await downloader.download(fixture.nginx.url("/loop-a"), to: directory + "/l.bin")
        } throws: { error in
            guard case .redirect(let redirect)? = (error as? HaulError)?.reason, case .loop = redirect.reason else { return false }
            return String(describing: error).contains("redirect loop")
        }
    }

    @Test func missingFileIsAnHTTPStatusError() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downloader = try HaulClient(options: options())
        await #expect {
            _ = try await downloader.download(fixture.nginx.url("/nope.bin"), to: directory + "/n.bin")
        } throws: { error in
            guard case .httpStatus(let status, _, _)? = (error as? HaulError)?.reason else { return false }
            return status == 404
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/n.bin"))
    }

    @Test func untrustedCertificateIsRejectedUnlessInsecure() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var untrusting = options()
        untrusting.tls.caFile = nil
        let strict = try HaulClient(options: untrusting)
        await #expect {
            _ = try await strict.download(fixture.nginx.url("/small-1.bin", tls: true), to: directory + "/t.bin")
        } throws: { error in
            guard case .tls? = (error as? HaulError)?.reason else { return false }
            return String(describing: error).contains("certificate verify failed")
        }
        untrusting.tls.insecure = true
        let lax = try HaulClient(options: untrusting)
        let result = try await lax.download(fixture.nginx.url("/small-1.bin", tls: true), to: directory + "/t.bin")
        #expect(result.bytes == 100_001)
    }

    @Test func checksumIsVerifiedBeforeTheRename() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options())
        _ = try await client.download(DownloadRequest(url: fixture.nginx.url(fixture.bigFile), destination: .file(directory + "/ok.bin"),
                                                      checksum: Checksum(algorithm: .sha256, hex: fixture.bigSHA256)))
        #expect(FileManager.default.fileExists(atPath: directory + "/ok.bin"))

        await #expect {
            _ = try await client.download(DownloadRequest(url: fixture.nginx.url(fixture.bigFile), destination: .file(directory + "/bad.bin"),
                                                          checksum: Checksum(algorithm: .sha256, hex: String(repeating: "0", count: 64))))
        } throws: { error in
            guard case .checksumMismatch? = (error as? HaulError)?.reason else { return false }
            return true
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/bad.bin"))
        #expect(FileManager.default.fileExists(atPath: directory + "/bad.bin.part"), "the data stays as .part")
    }
}
