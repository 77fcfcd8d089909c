import Glibc
import Testing
@testable import HaulIO

/// A fresh directory under `$TMPDIR` (else /tmp), removed with its entries (files and links, one level) when the test ends.
final class OutputFileScratch {
    let path: String

    init() {
        var template = Array("\(temporaryRoot())/haul-outputfile-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(cString: made!)
    }

    deinit {
        if let directory = opendir(path) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
                }
                if name != "." && name != ".." { unlink(path + "/" + name) }
            }
            closedir(directory)
        }
        rmdir(path)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ name: String, _ text: String) {
        let fd = open(file(name), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0)
        defer { close(fd) }
        precondition(Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress!, $0.count) } == text.utf8.count)
    }

    func read(_ name: String) -> String? {
        let fd = open(file(name), O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
        return count < 0 ? nil : String(decoding: buffer[0..<count], as: UTF8.self)
    }

    func symlink(_ name: String, to target: String) {
        precondition(Glibc.symlink(target, file(name)) == 0)
    }

    func isSymlink(_ name: String) -> Bool {
        var info = stat()
        return lstat(file(name), &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    func exists(_ name: String) -> Bool {
        var info = stat()
        return lstat(file(name), &info) == 0
    }
}

@Suite struct OutputFileSafetyTests {
    @Test(arguments: [false, true])
    func openRefusesASymbolicLinkAndLeavesItsTargetAlone(truncate: Bool) throws {
        let scratch = OutputFileScratch()
        scratch.write("victim", "precious")
        scratch.symlink("f.part", to: scratch.file("victim"))
        let error = #expect(throws: SystemError.self) { try OutputFile.open(scratch.file("f.part"), truncate: truncate) }
        #expect(error == SystemError(call: "open", errno: ELOOP))
        print(error!.description)
        #expect(error!.description.contains("refusing to follow the symbolic link"))
        #expect(error!.description.contains("errno \(ELOOP)"))
        #expect(scratch.read("victim") == "precious")
        #expect(scratch.isSymlink("f.part"))
    }

    @Test func openForDownloadRefusesASymbolicLinkAndLeavesItsTargetAlone() throws {
        let scratch = OutputFileScratch()
        scratch.write("victim", "precious")
        scratch.symlink("f.part", to: scratch.file("victim"))
        #expect(throws: SystemError(call: "open", errno: ELOOP)) { try OutputFile.openForDownload(scratch.file("f.part")) }
        #expect(scratch.read("victim") == "precious")
        #expect(scratch.isSymlink("f.part"))
        // The target is not locked either: a download of the victim itself still works.
        let (file, created) = try OutputFile.openForDownload(scratch.file("victim"))
        #expect(!created && file.path == scratch.file("victim"))
    }

    /// A dangling link must not make the open create its target (which `O_CREAT` alone would do).
    @Test func aDanglingSymbolicLinkDoesNotCreateItsTarget() {
        let scratch = OutputFileScratch()
        scratch.symlink("f.part", to: scratch.file("elsewhere"))
        #expect(throws: SystemError(call: "open", errno: ELOOP)) { try OutputFile.open(scratch.file("f.part"), truncate: false) }
        #expect(throws: SystemError(call: "open", errno: ELOOP)) { try OutputFile.openForDownload(scratch.file("f.part")) }
        #expect(!scratch.exists("elsewhere"))
        #expect(scratch.isSymlink("f.part"))
    }

    @Test func openStillCreatesAndTruncatesRegularFiles() throws {
        let scratch = OutputFileScratch()
        scratch.write("f.part", "old content")
        let kept = try OutputFile.open(scratch.file("f.part"), truncate: false)
        #expect(try kept.size() == 11)
        let truncated = try OutputFile.open(scratch.file("f.part"), truncate: true)
        #expect(try truncated.size() == 0)
        let fresh = try OutputFile.open(scratch.file("new.part"), truncate: false)
        #expect(try fresh.size() == 0 && scratch.exists("new.part"))
    }

    @Test func synchronizeDirectorySyncsTheParentAndNamesTheFailingCall() throws {
        let scratch = OutputFileScratch()
        scratch.write("f", "x")
        try OutputFile.synchronizeDirectory(containing: scratch.file("f"))
        // The file need not exist; only its directory is opened.
        try OutputFile.synchronizeDirectory(containing: scratch.file("not-yet"))
        try OutputFile.synchronizeDirectory(containing: "relative-name")
        #expect(throws: SystemError(call: "open", errno: ENOENT)) {
            try OutputFile.synchronizeDirectory(containing: scratch.file("missing/f"))
        }
        #expect(throws: SystemError(call: "open", errno: ENOTDIR)) {
            try OutputFile.synchronizeDirectory(containing: scratch.file("f/g"))
        }
        #expect(OutputFile.directory(containing: "/a/b/c") == "/a/b")
        #expect(OutputFile.directory(containing: "/c") == "/")
        #expect(OutputFile.directory(containing: "c") == ".")
        #expect(OutputFile.directory(containing: "b/c") == "b")
    }

    @Test func otherErrnosKeepTheirUsualText() {
        #expect(SystemError(call: "open", errno: ENOENT).description == "open: No such file or directory (errno 2)")
        #expect(SystemError(call: "stat", errno: ELOOP).reason == SystemError.describe(errno: ELOOP))
    }
}
