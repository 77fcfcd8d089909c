import Testing
import HaulCommandLine

/// ``DirectorySnapshot``: a name the destination directory did not hold when the run started is not looked
/// for; anything else still is.
@Suite struct DirectorySnapshotTests {
    @Test func onlyANameDirectlyInTheDirectoryThatWasNotThereIsSkipped() {
        let snapshot = DirectorySnapshot(directory: "out", names: ["a.bin", "b.bin.part", "caf\u{E9}.txt"])
        #expect(snapshot.mayHold("out/a.bin"))
        #expect(!snapshot.mayHold("out/b.bin"), "only its .part was there")
        #expect(snapshot.mayHold("out/b.bin.part"))
        #expect(!snapshot.mayHold("out/c.bin"))
        #expect(snapshot.mayHold("out/caf\u{E9}.txt"))
        // Not a name directly in the directory: looked for as before.
        #expect(snapshot.mayHold("out/sub/c.bin"))
        #expect(snapshot.mayHold("other/c.bin"))
        #expect(snapshot.mayHold("outside/c.bin"), "a longer directory name with the same start")
        #expect(snapshot.mayHold("c.bin"))
        #expect(snapshot.mayHold("/abs/out/c.bin"))
        #expect(snapshot.mayHold("out/"))
    }

    @Test func aDirectoryGivenWithATrailingSlashOrAsDotMatchesTheSamePaths() {
        let slash = DirectorySnapshot(directory: "/data/out/", names: ["x"])
        #expect(slash.mayHold("/data/out/x"))
        #expect(!slash.mayHold("/data/out/y"))
        let dot = DirectorySnapshot(directory: ".", names: [])
        #expect(!dot.mayHold("./y"), "a directory that did not exist, or was empty, holds nothing")
        #expect(dot.mayHold("y"), "not the form a download into `.` is named in")
    }

    /// Names are compared as text: one the directory holds in another normalization form is still looked for
    /// (never skipped for a file that may be there).
    @Test func aNameInAnotherNormalizationFormIsLookedFor() {
        let decomposed = DirectorySnapshot(directory: "d", names: ["cafe\u{301}"])
        #expect(decomposed.mayHold("d/caf\u{E9}"))
    }
}
