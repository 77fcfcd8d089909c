import Foundation
import Glibc

/// A fresh directory under ``root`` (`$TMPDIR`, else `/tmp`), removed with everything in it by `remove()` or when
/// the last reference goes.
///
/// Each fixture owns one, so that concurrently running tests never share paths.
public final class TemporaryDirectory: Sendable {
    /// The absolute path of the directory.
    public let path: String

    /// Where the tests make their temporary files: `$TMPDIR` when set (Scripts/test.sh gives each run a directory
    /// of its own there, and fails the run if anything named `haul-*` is left in it), else `/tmp`.
    public static var root: String {
        guard let value = getenv("TMPDIR").map({ String(cString: $0) }), !value.isEmpty else { return "/tmp" }
        return value.hasSuffix("/") && value.count > 1 ? String(value.dropLast()) : value
    }

    /// Creates a new, empty, uniquely named directory whose name starts with `prefix`.
    public init(prefix: String = "haul-test") throws {
        var template = Array("\(Self.root)/\(prefix)-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw TestSupportError("mkdtemp failed: \(TestSupportError.describe(errno: errno))")
        }
        path = String(cString: created)
    }

    deinit {
        remove()
    }

    /// The absolute path of `name` inside the directory.
    public func file(_ name: String) -> String {
        path + "/" + name
    }

    /// Creates a subdirectory (and its parents) and returns its path.
    @discardableResult
    public func makeSubdirectory(_ name: String) throws -> String {
        let subdirectory = file(name)
        try FileManager.default.createDirectory(atPath: subdirectory, withIntermediateDirectories: true)
        return subdirectory
    }

    /// Deletes the directory and its contents; calling it again does nothing.
    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}
