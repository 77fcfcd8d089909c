import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport

/// `haul -i` against a lying server (the attacks of `NetworkRedTeamTests`, through the CLI's list runner, its
/// connection reuse and its group commit): every file is right, or the run fails naming the server.
@Suite(.serialized) struct NetworkRedTeamCLITests {
    static let files = 30

    static func resources() -> [MisbehavingServer.Resource] {
        (0..<files).map { .pattern(size: 2000 + $0 * 53, seed: 3400 + UInt64($0)) }
    }

    /// A correct `206` (or `200` without `Range`) for `resource`, as bytes.
    static func honest(_ request: MisbehavingServer.ReceivedRequest, _ resource: MisbehavingServer.Resource, extraFields: String = "") -> [UInt8] {
        let total = resource.bytes.count
        var head = "Accept-Ranges: bytes\r\nETag: \(resource.etag!)\r\nContent-Type: application/octet-stream\r\n" + extraFields
        var body = resource.bytes[...]
        var status = "200 OK"
        if let range = request.range?.resolved(length: total) {
            status = "206 Partial Content"
            head += "Content-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(total)\r\n"
            body = resource.bytes[range.lowerBound...range.upperBound]
        }
        return Array("HTTP/1.1 \(status)\r\n\(head)Content-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-cli-redteam-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The first answer to each file is a lie a retry gets past (a 204 with a body, two ETags); every later
    /// answer is followed, in the same write, by the response the next file would get. With and
    /// without `--no-sync` (the group commit): exit 0 and every file byte for byte.
    @Test(arguments: [true, false])
    func aListAgainstALyingServerGetsEveryFileRight(noSync: Bool) throws {
        let resources = Self.resources()
        let firsts = NetworkRedTeamCLITests.Seen()
        let script = MisbehavingServer.Script { request in
            guard let index = Int(request.target.dropFirst(2)), resources.indices.contains(index) else { return .status(404) }
            let evil = Self.honest(request, resources[(index + 1) % resources.count])
            switch firsts.next(index) {
            case 0: return .raw(Array("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello".utf8))
            case 1: return .raw(Self.honest(request, resources[index], extraFields: "ETag: \"another\"\r\n"))
            default:
                // In the same write: a copy that arrives later than the next request went out would be read as
                // its answer by any HTTP/1.1 client (nothing but the order ties a response to its request).
                return .raw(Self.honest(request, resources[index]) + evil)
            }
        }
        let server = try MisbehavingServer(resource: resources[0], script: script)
        defer { server.stop() }
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let list = (0..<Self.files).map { server.url("/f\($0)") }.joined(separator: "\n") + "\n"
        try list.write(toFile: directory + "/list", atomically: true, encoding: .utf8)
        let run = try ChildProcess.run(HaulCLITests.binary, (noSync ? ["--no-sync"] : []) + ["-q", "-j", "4",
                                       "-i", directory + "/list", "-d", directory + "/out"], timeout: 120)
        #expect(run.exitStatus == 0, "\(run.errorText)")
        var wrong: [String] = []
        for (index, resource) in resources.enumerated() {
            let saved = FileManager.default.contents(atPath: directory + "/out/f\(index)").map { Array($0) }
            if saved.map({ !sameBytes($0, resource.bytes) }) ?? true { wrong.append("f\(index): \(saved?.count ?? -1) bytes") }
        }
        #expect(wrong.isEmpty, "files that are not the server's: \(wrong)")
    }

    final class Seen: Sendable {
        private let counts = Mutex<[Int: Int]>([:])
        func next(_ key: Int) -> Int {
            counts.withLock { counts in
                defer { counts[key, default: 0] += 1 }
                return counts[key, default: 0]
            }
        }
    }
}
