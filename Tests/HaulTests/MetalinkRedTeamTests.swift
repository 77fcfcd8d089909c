import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulIO

/// A lying Metalink document and lying mirrors: hostile documents parse or fail within bounded time, and a
/// file whose mirrors lie (a redirect to another file under the same strong ETag and length, which no
/// validator can show) is never kept as good: only the hash decides.
@Suite(.serialized) struct MetalinkRedTeamTests {
    static let size = 2 << 20
    static let piece = 256 << 10
    static let good = MisbehavingServer.Resource.pattern(size: size, seed: 37)
    /// The same strong ETag, date and length; one byte of every piece different.
    static let liar: MisbehavingServer.Resource = {
        var wrong = good
        for start in stride(from: 0, to: size, by: piece) { wrong.bytes[start + 17] ^= 0x40 }
        return wrong
    }()

    /// Documents of the largest size a document may have (4 MiB), built to be slow to parse: each parses or
    /// throws a MetalinkError, within seconds (a debug build; a quadratic parser takes minutes).
    @Test(arguments: ["one text node", "entity references", "one attribute value", "comment", "many hashes", "deep and wide"])
    func hostileDocumentsEndQuickly(kind: String) throws {
        let limit = (4 << 20) - 200
        let head = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\"><file name=\"a\"><url>http://a.test/x</url>"
        let tail = "</file></metalink>"
        func filled(_ open: String, _ unit: String, _ close: String) -> String {
            let count = (limit - head.utf8.count - tail.utf8.count - open.utf8.count - close.utf8.count) / unit.utf8.count
            return head + open + String(repeating: unit, count: count) + close + tail
        }
        let text: String = switch kind {
        case "one text node": filled("<description>", "x", "</description>")
        case "entity references": filled("<description>", "&amp;&lt;&#x41;", "</description>")
        case "one attribute value": filled("<description a=\"", "y", "\">z</description>")
        case "comment": filled("<!--", "x-", " -->")
        case "many hashes": filled("<pieces length=\"1024\" type=\"sha-256\">", "<hash>\(String(repeating: "ab", count: 32))</hash>", "</pieces>")
        default: filled("", "<a><b><c><d><e></e></d></c></b></a>", "")
        }
        #expect(text.utf8.count <= 4 << 20)
        let clock = ContinuousClock(), start = clock.now
        let outcome: String
        do {
            let metalink = try Metalink(parsing: Array(text.utf8))
            outcome = "parsed, \(metalink.files.count) file(s)"
        } catch {
            outcome = "refused: \(error)".prefix(160).description
        }
        let elapsed = clock.now - start
        print("MetalinkRedTeamTests[\(kind)]: \(text.utf8.count) bytes \(outcome) in \(elapsed)")
        #expect(elapsed < .seconds(20), "\(kind): \(elapsed) to parse 4 MiB")
    }

    func document(urls: [String], pieces: Bool) throws -> Metalink {
        let sha = try FileDigest.hex(of: Self.good.bytes, algorithm: .sha256)
        var piecesText = ""
        if pieces {
            let hashes = try stride(from: 0, to: Self.size, by: Self.piece).map {
                "<hash>\(try FileDigest.hex(of: Array(Self.good.bytes[$0..<min($0 + Self.piece, Self.size)]), algorithm: .sha256))</hash>"
            }
            piecesText = "<pieces length=\"\(Self.piece)\" type=\"sha-256\">\(hashes.joined())</pieces>"
        }
        let text = """
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="f.bin"><size>\(Self.size)</size>
            <hash type="sha-256">\(sha)</hash>\(piecesText)
            \(urls.enumerated().map { "<url priority=\"\($0.offset + 1)\">\($0.element)</url>" }.joined())</file></metalink>
            """
        return try Metalink(parsing: Array(text.utf8))
    }

    /// The first mirror redirects to a copy that lies (same ETag, date and length, other bytes); the second is
    /// honest. With piece hashes the liar's pieces are fetched again from the honest one (the right file);
    /// with the whole-file hash only, the right file or a hash error — never the lie under the final name.
    @Test(arguments: [false, true], [false, true])
    func aMirrorThatRedirectsToALieIsNeverKept(pieces: Bool, liarOnly: Bool) async throws {
        let liarServer = try MisbehavingServer(resource: Self.liar, script: .redirects(["/f": "/lie"]))
        defer { liarServer.stop() }
        let honest = try MisbehavingServer(resource: Self.good)
        defer { honest.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let urls = liarOnly ? [liarServer.url("/f")] : [liarServer.url("/f"), honest.url("/f")]
        let request = try DownloadRequest(metalink: try document(urls: urls, pieces: pieces).files[0], directory: directory)
        var options = DownloadOptions(synchronizesToDisk: false, connections: 4, minimumSegment: Int64(Self.piece))
        options.retry = RetryPolicy(triesPerRange: 2, totalRetries: 10, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        let (result, _) = try await runToEnd(request, options: options, within: .seconds(30))
        let path = directory + "/f.bin"
        switch result {
        case .success:
            #expect(!liarOnly, "exit 0 from a liar alone")
            #expect(sameBytes(try Data(contentsOf: URL(fileURLWithPath: path)), Self.good.bytes), "exit 0 with a WRONG file")
        case .failure(let error):
            #expect(liarOnly || !pieces, "piece hashes with an honest mirror left give the file: \(error)")
            #expect(!FileManager.default.fileExists(atPath: path), "failed (\(error)) but left a file under the final name")
            #expect(error.description.contains("127.0.0.1") || error.description.contains("sha"), "\(error)")
            print("[pieces \(pieces), liar only \(liarOnly)] \(error)")
        }
    }
}
