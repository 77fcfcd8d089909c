import Foundation
import Synchronization
import Testing
@testable import Haul
import HaulIO

/// How the group commit names its files (``FinalNaming``), with the real calls on real files: a file without
/// a name is linked, a named `.part` whose destination may not be replaced is renamed without replacing, and a
/// destination that appeared meanwhile fails that file only, its bytes kept as `.part`.
@Suite struct GroupCommitNamingTests {
    final class Outcomes: Sendable {
        let results = Mutex<[String: Result<Void, HaulError>]>([:])
        func completion(_ name: String) -> @Sendable (Result<Void, HaulError>) -> Void {
            { [self] result in results.withLock { $0[name] = result } }
        }
        subscript(name: String) -> Result<Void, HaulError>? { results.withLock { $0[name] } }
    }

    func write(_ text: String, into file: OutputFile) throws {
        try Array(text.utf8).withUnsafeBytes { try file.write($0, at: 0) }
        _ = try file.size()
    }

    func text(_ path: String) -> String? { FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } }

    func entries(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func aTakenNameFailsOnlyItsFileAndKeepsItsBytes() throws {
        let root = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let outcomes = Outcomes()
        var batch: [GroupCommit.Entry] = []
        for (name, unnamed) in [("free-unnamed", true), ("taken-unnamed", true), ("free-named", false), ("taken-named", false)] {
            let path = root + "/" + name
            let file = unnamed ? try #require(try OutputFile.openUnnamed(becoming: path + ".part")) : try OutputFile.open(path + ".part", truncate: true)
            try write("bytes of \(name)", into: file)
            if name.hasPrefix("taken") { FileManager.default.createFile(atPath: path, contents: Data("theirs".utf8)) }
            batch.append(GroupCommit.Entry(file: file, partPath: path + ".part", destination: path, journalPath: nil,
                                           completion: outcomes.completion(name), finalNameIsNew: true))
        }
        GroupCommit().commit(batch)
        for name in ["free-unnamed", "free-named"] {
            #expect(throws: Never.self) { try outcomes[name]?.get() }
            #expect(text(root + "/" + name) == "bytes of \(name)")
        }
        for name in ["taken-unnamed", "taken-named"] {
            guard case .failure(let error)? = outcomes[name], case .destinationExists(let path) = error.reason else {
                Issue.record("\(name): \(String(describing: outcomes[name]))")
                continue
            }
            #expect(path == root + "/" + name)
            #expect(text(root + "/" + name) == "theirs")
            #expect(text(root + "/" + name + ".part") == "bytes of \(name)", "the bytes are kept")
        }
        #expect(entries(root) == ["free-named", "free-unnamed", "taken-named", "taken-named.part", "taken-unnamed", "taken-unnamed.part"])
    }

    /// A directory sync that fails un-proves the name: a linked file goes to its `.part` name, as a renamed
    /// one goes back to it, so nothing claims to be complete.
    @Test func aFailedDirectorySyncGivesALinkedFileItsPartName() throws {
        let root = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        var operations = GroupCommit.Operations.system
        operations.syncDirectory = { _ throws(SystemError) in throw SystemError(call: "fsync", errno: EIO) }
        let outcomes = Outcomes()
        let file = try #require(try OutputFile.openUnnamed(becoming: root + "/x.part"))
        try write("complete", into: file)
        GroupCommit(operations: operations).commit([GroupCommit.Entry(
            file: file, partPath: root + "/x.part", destination: root + "/x", journalPath: nil,
            completion: outcomes.completion("x"), finalNameIsNew: true)])
        guard case .failure(let error)? = outcomes["x"], case .disk = error.reason else {
            Issue.record("expected a disk error, got \(String(describing: outcomes["x"]))")
            return
        }
        #expect(entries(root) == ["x.part"])
        #expect(text(root + "/x.part") == "complete")
    }
}
