import Testing
@testable import Haul

/// What a download that stops before its first body byte removes: what this run created, never what an
/// earlier run left.
@Suite struct EarlyStopCleanupTests {
    typealias Cleanup = EarlyStopCleanup

    static func facts(part: Bool = true, directories: [String] = [], resumed: Bool = false, bytes: Int64 = 0,
                      partPath: String = "d/a.part", journalPath: String = "d/a.part.haul") -> Cleanup.Facts {
        .init(created: .init(part: part, directories: directories), resumed: resumed, bytesWritten: bytes,
              partPath: partPath, journalPath: journalPath)
    }

    @Test func aFreshDownloadThatFailedBeforeItsFirstByteLeavesNothing() {
        let cleanup = Cleanup.decide(Self.facts(directories: ["d", "d/e"]))
        #expect(cleanup == Cleanup(journal: "d/a.part.haul", part: "d/a.part", directories: ["d", "d/e"]))
    }

    @Test func aPartThatWasThereBeforeStays() {
        let cleanup = Cleanup.decide(Self.facts(part: false))
        // The journal, if any, is this run's (one found stale was removed when preparing): it records nothing.
        #expect(cleanup == Cleanup(journal: "d/a.part.haul", part: nil, directories: []))
    }

    @Test func aResumeNeverRemovesAnything() {
        #expect(Cleanup.decide(Self.facts(part: false, resumed: true)).isEmpty)
        #expect(Cleanup.decide(Self.facts(part: true, directories: ["d"], resumed: true)).isEmpty)
    }

    @Test func oneBodyByteKeepsEverything() {
        #expect(Cleanup.decide(Self.facts(directories: ["d"], bytes: 1)).isEmpty)
    }

    /// A directory download that failed before the server named the file: only the directory it created.
    @Test func anUnnamedDownloadRemovesTheDirectoriesItCreated() {
        let cleanup = Cleanup.decide(Self.facts(part: false, directories: ["out"], partPath: "", journalPath: ""))
        #expect(cleanup == Cleanup(journal: nil, part: nil, directories: ["out"]))
        #expect(Cleanup.decide(Self.facts(part: false, partPath: "", journalPath: "")).isEmpty)
    }

    @Test func createdThingsMergeInOrder() {
        let merged = Cleanup.Created(part: false, directories: ["a"]).merged(with: .init(part: true, directories: ["a/b"]))
        #expect(merged == .init(part: true, directories: ["a", "a/b"]))
    }
}
