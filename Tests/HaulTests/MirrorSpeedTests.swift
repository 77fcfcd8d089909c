import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// Mirrors by measured speed against a real server: one nginx serving the same file at three speeds
/// (`limit_rate` per request: none, 2 MiB/s, 64 KiB/s), the slowest given first. The speeds differ by 30×
/// and more, and what is asserted does not depend on how fast the machine is: the fastest mirror serves more
/// than the slowest, and no request of the slowest runs to its end (a 4 MiB request takes it 64 s; it is
/// withdrawn from the tail within seconds of being measured).
@Suite(.serialized) struct MirrorSpeedTests {
    @Test func theFastMirrorServesMostAndTheSlowOneNoneOfTheTail() async throws {
        var configuration = NginxConfiguration()
        configuration.enableTLS = false
        configuration.rateLimitedLocation = nil
        // `break` serves the rewritten path from the server's root, inside the location and its rate.
        configuration.extraServerDirectives = """
            location /mid/ { limit_rate 2m; rewrite ^/mid/(.*)$ /$1 break; }
                    location /slow/ { limit_rate 64k; rewrite ^/slow/(.*)$ /$1 break; }
            """
        let nginx = try NginxServer(configuration: configuration)
        defer { nginx.stop() }
        let size = 24 << 20
        try TestFiles.create(at: nginx.dataDirectory + "/f.bin", size: size, seed: 25)
        let expected = try TestFiles.sha256(ofFile: nginx.dataDirectory + "/f.bin")
        let directory = try TemporaryDirectory()
        let request = DownloadRequest(url: nginx.url("/slow/f.bin"), mirrors: [nginx.url("/mid/f.bin"), nginx.url("/f.bin")],
                                      destination: .file(directory.file("f.bin")))
        let result = try await HaulClient(options: DownloadOptions(synchronizesToDisk: false, connections: 6)).download(request)
        #expect(try TestFiles.sha256(ofFile: directory.file("f.bin")) == expected)
        #expect(result.retries == 0, "a withdrawn request is no failure")

        // nginx logs a request when it ends: wait until every byte of the file is accounted for.
        func served(_ prefix: String?, in log: [AccessLogEntry]) -> Int {
            log.filter { entry in
                guard let prefix else { return !entry.target.hasPrefix("/slow/") && !entry.target.hasPrefix("/mid/") }
                return entry.target.hasPrefix(prefix)
            }.map(\.bodyBytesSent).reduce(0, +)
        }
        let log = poll(reading: { nginx.accessLog() }, until: { $0.map(\.bodyBytesSent).reduce(0, +) >= size })
        let (fast, mid, slow) = (served(nil, in: log), served("/mid/", in: log), served("/slow/", in: log))
        print("served: fast \(fast), mid \(mid), slow \(slow) bytes")
        #expect(fast > slow, "the fastest mirror served more than the slowest")
        #expect(slow < 4 << 20, "no request of the slowest mirror ran to its end")
        #expect(fast + mid + slow >= size)
    }
}
