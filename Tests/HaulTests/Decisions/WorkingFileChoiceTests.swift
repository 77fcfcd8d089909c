import Testing
@testable import Haul

/// When a download writes into a file without a name, and when into its named `.part`.
@Suite struct WorkingFileChoiceTests {
    typealias Facts = WorkingFileChoice.Facts

    @Test func aFreshDownloadOfAnOrdinaryNameLooksOnceThenGoesUnnamed() {
        var facts = Facts()
        #expect(WorkingFileChoice.decide(facts) == .lookForPartial)
        facts.partialExists = false
        #expect(WorkingFileChoice.decide(facts) == .unnamed)
    }

    /// A `.part` there keeps every rule it has today: resumed, restarted or refused, never bypassed.
    @Test func aPartThereKeepsTheNamedPath() {
        #expect(WorkingFileChoice.decide(Facts(partialExists: true)) == .named)
    }

    @Test(arguments: [
        Facts(allowed: false),
        Facts(onDisk: false),
        Facts(destinationIsWorkingName: true),
        Facts(replacesExisting: true),
        Facts(asksFirst: true),
        Facts(mayOpenUnnamed: false),
    ])
    func anythingElseIsNamedWithoutLooking(facts: Facts) {
        #expect(WorkingFileChoice.decide(facts) == .named)
        var looked = facts
        looked.partialExists = false
        #expect(WorkingFileChoice.decide(looked) == .named, "no .part there changes nothing for \(facts)")
    }
}

/// What a stop before the first byte removes when the file has no name: nothing of its own, and never a
/// `.part` or journal that is someone else's.
@Suite struct UnnamedEarlyStopCleanupTests {
    @Test func anUnnamedFileRemovesOnlyTheDirectoriesItCreated() {
        let facts = EarlyStopCleanup.Facts(created: .init(directories: ["d"], unnamed: true), resumed: false, bytesWritten: 0,
                                           partPath: "d/a.part", journalPath: "d/a.part.haul")
        #expect(EarlyStopCleanup.decide(facts) == EarlyStopCleanup(journal: nil, part: nil, directories: ["d"]))
    }

    @Test func mergingKeepsUnnamed() {
        let merged = EarlyStopCleanup.Created(directories: ["d"]).merged(with: .init(unnamed: true))
        #expect(merged.unnamed)
        #expect(!merged.part)
        #expect(merged.directories == ["d"])
    }
}
