import Haul
import Testing

@Suite("Working file names")
struct WorkingFileNamesTests {
    @Test func namesAreBuiltFromTheDestination() {
        #expect(WorkingFileNames.partial(of: "d/f.iso") == "d/f.iso.part")
        #expect(WorkingFileNames.journal(of: "d/f.iso") == "d/f.iso.part.haul")
        #expect(WorkingFileNames.all(of: "f") == ["f.part.haul.tmp", "f.part.haul", "f.part"])
    }

    @Test func aPartialFileNameLeadsBackToItsDestination() {
        #expect(WorkingFileNames.destination(ofPartial: "d/f.iso.part") == "d/f.iso")
        #expect(WorkingFileNames.destination(ofPartial: WorkingFileNames.partial(of: "é.tar.gz")) == "é.tar.gz")
        #expect(WorkingFileNames.destination(ofPartial: "d/f.iso") == nil)
        #expect(WorkingFileNames.destination(ofPartial: "f.part.haul") == nil)
        #expect(WorkingFileNames.destination(ofPartial: ".part") == "")
    }

    @Test func aWorkingNameLeadsBackToTheDestinationItBelongsTo() {
        let owner = { (path: String) in WorkingFileNames.owner(ofWorkingName: path).map { [$0.destination, $0.suffix] } }
        #expect(owner("d/x.part") == ["d/x", ".part"])
        #expect(owner("d/x.part.haul") == ["d/x", ".part.haul"])
        #expect(owner("x.part.haul.tmp") == ["x", ".part.haul.tmp"])
        #expect(WorkingFileNames.owner(ofWorkingName: "x.PART") == nil)   // exact: what the file system compares
        #expect(WorkingFileNames.owner(ofWorkingName: ".part") == nil)
        #expect(WorkingFileNames.owner(ofWorkingName: "x.haul") == nil)
    }

    /// The owner is found by the suffixes' characters (`hasSuffix`) only for a name ending in one of their last
    /// bytes; over names that end in marks, non-ASCII letters and near-suffixes it answers as comparing every
    /// suffix did.
    @Test func aWorkingNameIsFoundAsComparingEverySuffix() {
        let stems = ["", "x", "é", "e\u{301}", "\u{301}", "x.", "d/", "\u{0600}"]
        let tails = ["", ".part", ".part.haul", ".part.haul.tmp", ".par", "t", "l", "p", ".part\u{301}", ".parT", "\u{301}t",
                     ".part.haul\u{200D}", "\u{0600}.part", ".t\u{0301}", ".tmp", ".haul", "\u{212A}"]
        for stem in stems {
            for tail in tails {
                let path = stem + tail
                let expected = WorkingFileNames.suffixes.first { path.hasSuffix($0) && path.utf8.count > $0.utf8.count }
                    .map { [String(path.dropLast($0.utf8.count)), $0] }
                #expect(WorkingFileNames.owner(ofWorkingName: path).map { [$0.destination, $0.suffix] } == expected, "\(Array(path.unicodeScalars))")
            }
        }
    }

    @Test(arguments: [("x.part", true), ("x.PaRt", true), ("x.part.HAUL", true), ("x.part.haul.TMP", true),
                      ("x.parts", false), ("x.haul", false), ("x.tmp", false), ("part", false), ("x.pärt", false)])
    func workingSuffixesAreFoundInAnyCase(name: String, working: Bool) {
        #expect(WorkingFileNames.endsInWorkingSuffix(ignoringCase: name) == working)
    }
}
