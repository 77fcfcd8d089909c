import Foundation
import Glibc

/// The outcome of a command line run to completion by ``ChildProcess/run(_:_:in:timeout:)``.
public struct ProcessResult: Sendable {
    /// The exit status, or 128 + signal number if the process was killed by a signal.
    public let exitStatus: Int32
    /// Everything the process wrote to standard output.
    public let standardOutput: Data
    /// Everything the process wrote to standard error.
    public let standardError: Data

    /// Standard output decoded as UTF-8 (lossy).
    public var outputText: String { String(decoding: standardOutput, as: UTF8.self) }
    /// Standard error decoded as UTF-8 (lossy).
    public var errorText: String { String(decoding: standardError, as: UTF8.self) }
}

/// Runs helper command-line tools (`openssl`, `curl`) from tests and fixtures.
public enum ChildProcess {
    /// Runs `executable` with `arguments` and waits for it, collecting its output.
    ///
    /// Output goes to files rather than pipes so that a chatty process can never block on a full pipe while
    /// we wait for it to exit. A process still running after `timeout` seconds is killed, so that a hung helper
    /// fails one test instead of hanging the whole suite.
    public static func run(
        _ executable: String, _ arguments: [String], in directory: String? = nil, timeout: Double = 60
    ) throws -> ProcessResult {
        let scratch = try TemporaryDirectory(prefix: "haul-process")
        let outputPath = scratch.file("stdout")
        let errorPath = scratch.file("stderr")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        defer {
            try? output.close()
            try? error.close()
        }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = error
        do {
            try process.run()
        } catch {
            throw TestSupportError("could not start \(executable): \(error)")
        }
        poll(every: .milliseconds(2), within: timeout) { !process.isRunning }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout) s")
        }
        process.waitUntilExit()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return ProcessResult(
            exitStatus: status,
            standardOutput: FileManager.default.contents(atPath: outputPath) ?? Data(),
            standardError: FileManager.default.contents(atPath: errorPath) ?? Data())
    }

    /// Like ``run(_:_:in:timeout:)`` but throws, with the tool's standard error, unless it exits with 0.
    @discardableResult
    public static func runChecked(
        _ executable: String, _ arguments: [String], in directory: String? = nil, timeout: Double = 60
    ) throws -> ProcessResult {
        let result = try run(executable, arguments, in: directory, timeout: timeout)
        guard result.exitStatus == 0 else {
            throw TestSupportError(
                "\(executable) \(arguments.joined(separator: " ")) exited with \(result.exitStatus): \(result.errorText)")
        }
        return result
    }
}
