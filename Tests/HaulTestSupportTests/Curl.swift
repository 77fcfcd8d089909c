import Foundation
import HaulTestSupport

/// The system `curl`, the independent client these tests check the fixtures with.
enum Curl {
    static let path = "/usr/bin/curl"

    /// Runs curl with `--silent --show-error` and a timeout, so a fixture bug fails a test instead of hanging it.
    static func run(_ arguments: [String], timeout: Double = 20) throws -> ProcessResult {
        try ChildProcess.run(path, ["--silent", "--show-error", "--max-time", "\(Int(timeout))"] + arguments, timeout: timeout + 5)
    }

    /// The response head and body curl received, from `--dump-header` and `--output` files in `directory`.
    static func fetch(
        _ url: String, in directory: TemporaryDirectory, extraArguments: [String] = []
    ) throws -> (result: ProcessResult, head: String, body: Data) {
        let headPath = directory.file("head-\(UUID().uuidString)")
        let bodyPath = directory.file("body-\(UUID().uuidString)")
        let result = try run(["--dump-header", headPath, "--output", bodyPath] + extraArguments + [url])
        let head = (try? String(contentsOfFile: headPath, encoding: .utf8)) ?? ""
        let body = FileManager.default.contents(atPath: bodyPath) ?? Data()
        return (result, head, body)
    }
}

extension String {
    /// The value of the last `name` field in a response head dump (case-insensitive name), if any.
    func headerValue(_ name: String) -> String? {
        var value: String?
        for line in split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name.lowercased() {
                value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return value
    }

    /// The status code of the last status line in a response head dump.
    var statusCode: Int? {
        split(separator: "\r\n").last { $0.hasPrefix("HTTP/") }.flatMap { Int($0.split(separator: " ")[1]) }
    }
}
