import Glibc
import Testing
@testable import HaulIO

/// A file without a name (`O_TMPFILE`): written like any file, named once with `linkat`, never replacing.
@Suite struct UnnamedOutputFileTests {
    /// The names in `directory`, sorted (`.` and `..` left out).
    static func entries(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    func write(_ text: String, into file: OutputFile, at offset: Int64 = 0) throws {
        try Array(text.utf8).withUnsafeBytes { try file.write($0, at: offset) }
    }

    @Test func itHasNoNameUntilLinkedAndThenHasItsContent() throws {
        let scratch = OutputFileScratch()
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")), "this filesystem has O_TMPFILE")
        #expect(file.isUnnamed)
        #expect(file.path == scratch.file("x.part"))
        try write("world", into: file, at: 6)
        try write("hello ", into: file)
        #expect(Self.entries(scratch.path).isEmpty, "nothing is visible while it has no name")
        try file.link(to: scratch.file("x"))
        #expect(!file.isUnnamed)
        #expect(Self.entries(scratch.path) == ["x"])
        #expect(scratch.read("x") == "hello world")
        // The new name is a regular file with the usual mode (0644 less the umask), not a link.
        let status = try #require(PathStatus.of(scratch.file("x")))
        #expect(status.size == 11)
    }

    @Test func linkingNeverReplacesAndTheFileKeepsNoName() throws {
        let scratch = OutputFileScratch()
        scratch.write("x", "someone else's")
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")))
        try write("mine", into: file)
        let error = #expect(throws: SystemError.self) { try file.link(to: scratch.file("x")) }
        #expect(error?.call == "linkat")
        #expect(error?.errno == EEXIST)
        #expect(file.isUnnamed)
        #expect(scratch.read("x") == "someone else's")
        #expect(Self.entries(scratch.path) == ["x"])
    }

    @Test func materializingGivesItItsPartNameLocked() throws {
        let scratch = OutputFileScratch()
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")))
        try write("kept", into: file)
        try file.materialize()
        #expect(!file.isUnnamed)
        #expect(Self.entries(scratch.path) == ["x.part"])
        #expect(scratch.read("x.part") == "kept")
        // Locked as a download's `.part` is: a second download of it is refused.
        #expect(OutputFile.isLockedForDownload(scratch.file("x.part")))
        #expect(throws: SystemError(call: "flock", errno: EWOULDBLOCK)) { try OutputFile.openForDownload(scratch.file("x.part")) }
        try file.materialize()   // a named file: nothing to do
        #expect(Self.entries(scratch.path) == ["x.part"])
    }

    @Test func materializingOverAnotherPartFailsAndLeavesItAlone() throws {
        let scratch = OutputFileScratch()
        scratch.write("x.part", "another download's")
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")))
        #expect(throws: SystemError(call: "linkat", errno: EEXIST)) { try file.materialize() }
        #expect(scratch.read("x.part") == "another download's")
    }

    @Test func aFileNeverNamedLeavesNothing() throws {
        let scratch = OutputFileScratch()
        var file = try OutputFile.openUnnamed(becoming: scratch.file("x.part"))
        try write("gone", into: try #require(file))
        file = nil
        #expect(Self.entries(scratch.path).isEmpty)
    }

    @Test func aMissingDirectoryIsThrownNotTakenForUnsupported() throws {
        let scratch = OutputFileScratch()
        let error = #expect(throws: SystemError.self) { try OutputFile.openUnnamed(becoming: scratch.file("no/x.part")) }
        #expect(error?.errno == ENOENT)
        #expect(OutputFile.mayOpenUnnamed(in: scratch.file("no")), "a missing directory is not a filesystem that refuses")
    }

    @Test func aRefusingDirectoryIsRememberedAndProcMatters() {
        let support = UnnamedFileSupport(procAvailable: true)
        #expect(support.mayTry(in: "/d"))
        support.refused(in: "/d")
        #expect(!support.mayTry(in: "/d"))
        #expect(support.mayTry(in: "/e"))
        #expect(!UnnamedFileSupport(procAvailable: false).mayTry(in: "/e"))
        for errno in [EOPNOTSUPP, EISDIR, EINVAL] {
            #expect(UnnamedFileSupport.meansUnsupported(SystemError(call: "open", errno: errno)))
        }
        for errno in [ENOENT, EACCES, ENOSPC, EROFS] {
            #expect(!UnnamedFileSupport.meansUnsupported(SystemError(call: "open", errno: errno)))
        }
    }

    @Test func renameWithoutReplacingKeepsAnExistingDestination() throws {
        let scratch = OutputFileScratch()
        scratch.write("x.part", "new")
        scratch.write("x", "there first")
        let error = #expect(throws: SystemError.self) { try OutputFile.renameWithoutReplacing(scratch.file("x.part"), to: scratch.file("x")) }
        #expect(error?.errno == EEXIST)
        #expect(scratch.read("x") == "there first")
        #expect(scratch.read("x.part") == "new")
        try OutputFile.remove(scratch.file("x"))
        try OutputFile.renameWithoutReplacing(scratch.file("x.part"), to: scratch.file("x"))
        #expect(Self.entries(scratch.path) == ["x"])
        #expect(scratch.read("x") == "new")
    }

    @Test func hasEntrySeesADanglingSymbolicLink() {
        let scratch = OutputFileScratch()
        scratch.symlink("x.part", to: scratch.file("nowhere"))
        #expect(OutputFile.hasEntry(scratch.file("x.part")))
        #expect(!OutputFile.exists(scratch.file("x.part")))
        #expect(!OutputFile.hasEntry(scratch.file("y.part")))
    }

    @Test func aDigestThroughTheDescriptorMatchesOneThroughThePath() throws {
        let scratch = OutputFileScratch()
        let file = try #require(try OutputFile.openUnnamed(becoming: scratch.file("x.part")))
        let bytes = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try bytes.withUnsafeBytes { try file.write($0, at: 0) }
        let byDescriptor = try FileDigest.hexes(of: file.fileDescriptor, algorithms: [.sha256, .md5])
        try file.link(to: scratch.file("x"))
        #expect(byDescriptor == (try FileDigest.hexes(of: scratch.file("x"), algorithms: [.sha256, .md5])))
        #expect(byDescriptor[.sha256] == (try FileDigest.hex(of: bytes, algorithm: .sha256)))
    }
}
