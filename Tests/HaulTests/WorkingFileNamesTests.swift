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
}
