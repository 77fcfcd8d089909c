import Foundation
import Glibc
import Testing
import HaulTestSupport

/// Attacks from the local side — the disk, odd entries at the output's name, other processes, the user's
/// input — against the `haul` binary: each ends in the right file or a clear error with a documented exit
/// code, and leaves nothing it made behind.
@Suite(.serialized) struct LocalAttackCLITests {
    let fixture = CLIFixture.shared

    func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "haul-local-attack-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @discardableResult
    func haul(_ arguments: [String], in directory: String? = nil, timeout: Double = 60) throws -> ProcessResult {
        try ChildProcess.run(HaulCLITests.binary, ["--no-sync"] + arguments, in: directory, timeout: timeout)
    }

    // MARK: The output's name is already taken by something that is no file

    /// A dangling symbolic link at the output's name is a name that exists: the final `linkat`/`renameat2`
    /// never follows it and never replaces it, so the download is refused before anything is fetched (exit 9,
    /// naming the path), not after the whole body with its bytes left in a `.part`. Every way of naming the
    /// output, on the small-file path (a file without a name) and on the `.part` path (a big file).
    @Test(arguments: ["-o small", "-o big", "-d small", "-d big"])
    func aDanglingSymbolicLinkAtTheOutputNameIsRefusedBeforeAnythingIsFetched(form: String) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let big = form.hasSuffix("big")
        let name = form.hasPrefix("-d") ? "report 2026.bin" : "out.bin"
        let link = directory + "/" + name
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory + "/nowhere")
        let source = big ? "big.bin" : "f1.bin"
        let arguments = form.hasPrefix("-d") ? ["-d", directory, fixture.nginx.url("/named/" + source)]
                                             : ["-o", link, fixture.nginx.url("/" + source)]
        let run = try haul(arguments)
        #expect(run.exitStatus == 9, "\(form): \(run.exitStatus) \(run.errorText)")
        #expect(run.errorText.contains("\(name) already exists"), "\(form): \(run.errorText)")
        #expect(entries(directory) == [name], "\(form): nothing but the link: \(entries(directory))")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == directory + "/nowhere")
        // With --allow-overwrite the link itself is replaced (never followed): the file is where it was asked for.
        let replaced = try haul(["--allow-overwrite"] + arguments)
        #expect(replaced.exitStatus == 0, "\(form): \(replaced.errorText)")
        #expect(try TestFiles.sha256(ofFile: link) == fixture.sha256(source))
        #expect(entries(directory) == [name], "\(form): \(entries(directory))")
    }

}
