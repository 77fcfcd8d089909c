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

    /// What the engine may be told: none of `NAME`, `NAME.part`, `NAME.part.haul` was there.
    @Test func nothingOfANameIsListedOnlyWhenNoneOfItsWorkingFilesWas() {
        let snapshot = DirectorySnapshot(directory: "out", names: ["a.bin", "b.bin.part", "c.bin.part.haul", "d.bin.part.haul.tmp"])
        #expect(!snapshot.listsNothing(of: "out/a.bin"))
        #expect(!snapshot.listsNothing(of: "out/b.bin"), "an interrupted download's .part")
        #expect(!snapshot.listsNothing(of: "out/c.bin"), "a journal without its .part")
        #expect(snapshot.listsNothing(of: "out/d.bin"), "a journal's temp file is neither looked for nor resumed")
        #expect(snapshot.listsNothing(of: "out/e.bin"))
        #expect(!snapshot.listsNothing(of: "out/sub/e.bin"), "not directly in the directory")
        #expect(!snapshot.listsNothing(of: "-"), "standard output")
        let empty = DirectorySnapshot(directory: "/data/out/", names: [])
        #expect(empty.listsNothing(of: "/data/out/a.bin"))
        #expect(!empty.listsNothing(of: "/data/out/sub/a.bin") && !empty.listsNothing(of: "/data/outside/a.bin"))
        #expect(!empty.listsNothing(of: "/data/out/") && !empty.listsNothing(of: "/data/out") && !empty.listsNothing(of: "a.bin"))
    }

    /// No snapshot (the directory was too large to list, or could not be read): nobody is told anything.
    @Test func withoutASnapshotNoDownloadIsTold() {
        let hints = ListedAbsenceHints(snapshot: nil, count: 10)
        #expect(!hints.tell("out/a.bin"))
    }

    /// The first download expecting a path is told; a second expecting the same one (a URL listed twice) is
    /// not, since the first one's file may be there by then; a listed name never is.
    @Test func onlyTheFirstDownloadOfAPathIsTold() {
        let hints = ListedAbsenceHints(snapshot: DirectorySnapshot(directory: "out", names: ["x.bin"]), count: 3)
        #expect(hints.tell("out/a.bin"))
        #expect(!hints.tell("out/a.bin"))
        #expect(hints.tell("out/b.bin"))
        #expect(!hints.tell("out/x.bin"))
    }

    /// The record of told paths never forgets one (a path seen is always said to be seen) and, at the count
    /// it was sized for, rarely takes a new path for a seen one.
    @Test func seenPathsNeverForgetAndRarelyConfuse() {
        let count = 10_000
        var seen = SeenPaths(expecting: count)
        var taken = 0
        for index in 0..<count {
            let path = "/data/out/f\(index).bin"
            if !seen.insert(path) { taken += 1 }
            let again = seen.insert(path)
            #expect(!again, "\(path) inserted twice")
        }
        #expect(taken < count / 100, "new paths taken for seen ones: \(taken) of \(count)")
        var small = SeenPaths(expecting: 0)
        let (first, second) = (small.insert("a"), small.insert("a"))
        #expect(first && !second)
    }
}
