import Foundation
import Testing

/// Runs the built `haul-parse` binary the way an outside conformance suite does.
@Suite struct HaulParseToolTests {
    static var binary: URL {
        // The test bundle sits in the same build directory as the package's executables.
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("haul-parse")
    }

    func run(_ input: String, _ arguments: [String] = []) throws -> [String: Any] {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let text = String(decoding: output, as: UTF8.self)
        #expect(text.split(separator: "\n").count == 1, "exactly one JSON line")
        return try #require(JSONSerialization.jsonObject(with: output) as? [String: Any])
    }

    @Test(arguments: [nil, "1", "42", "987654321"])
    func reportsAChunkedResponse(seed: String?) throws {
        let input = "HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\nnext"
        let json = try run(input, seed.map { ["--split-seed", $0] } ?? [])
        #expect(json["ok"] as? Bool == true)
        #expect(json["status"] as? Int == 200)
        #expect(json["version"] as? String == "1.1")
        #expect(json["reason"] as? String == "OK")
        #expect(json["headers"] as? [[String]] == [["Transfer-Encoding", "chunked"]])
        #expect(json["body_base64"] as? String == "YWJj")
        #expect(json["framing"] as? String == "chunked")
        #expect(json["keep_alive"] as? Bool == true)
        #expect(json["trailers"] as? [[String]] == [["T", "v"]])
        let interim = try #require(json["interim"] as? [[String: Any]])
        #expect(interim.count == 1)
        #expect(interim.first?["status"] as? Int == 100)
        #expect(interim.first?["headers"] as? [[String]] == [["X-I", "1"]])
        #expect(json["consumed"] as? Int == input.utf8.count - 4)
    }

    @Test func reportsErrorsWithOffset() throws {
        let json = try run("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
        #expect(json["ok"] as? Bool == false)
        #expect(json["error"] as? String == "conflicting Content-Length values \"5\" and \"6\"")
        #expect(json["offset"] as? Int == 52)
    }

    @Test(arguments: [nil, "7"])
    func reportsAFoldedValueWithSpacesOnly(seed: String?) throws {
        let json = try run("HTTP/1.1 200 OK\r\nX-F: a \t\r\n\t b\r\nContent-Length: 0\r\n\r\n", seed.map { ["--split-seed", $0] } ?? [])
        #expect(json["ok"] as? Bool == true)
        #expect(json["headers"] as? [[String]] == [["X-F", "a      b"], ["Content-Length", "0"]])
    }

    @Test func headFlagMeansNoBody() throws {
        let json = try run("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", ["--head"])
        #expect(json["ok"] as? Bool == true)
        #expect(json["framing"] as? String == "none")
        #expect(json["body_base64"] as? String == "")
    }
}
