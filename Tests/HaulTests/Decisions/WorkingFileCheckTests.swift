import Testing
import HaulIO
@testable import Haul

/// The `.part` a finished download renames must still be the file it wrote (``WorkingFileCheck``).
@Suite struct WorkingFileCheckTests {
    let written: (device: UInt64, inode: UInt64) = (device: 2049, inode: 77)

    func status(regular: Bool = true, device: UInt64 = 2049, inode: UInt64 = 77) -> PathStatus {
        PathStatus(isRegularFile: regular, device: device, inode: inode, size: 4096)
    }

    @Test func theFileWrittenIsRenamed() {
        #expect(WorkingFileCheck.decide(written: written, atName: status()) == .same)
    }

    @Test func nothingAtTheNameIsARemovedWorkingFile() {
        #expect(WorkingFileCheck.decide(written: written, atName: nil) == .removed)
        #expect(WorkingFileCheck.decide(written: nil, atName: nil) == .removed)
    }

    @Test func anotherFileAtTheNameIsAReplacedWorkingFile() {
        #expect(WorkingFileCheck.decide(written: written, atName: status(inode: 78)) == .replaced)
        // The same inode number on another filesystem is another file.
        #expect(WorkingFileCheck.decide(written: written, atName: status(device: 2050)) == .replaced)
        // A symbolic link (lstat describes the link itself) is never the file written, whatever it points to.
        #expect(WorkingFileCheck.decide(written: written, atName: status(regular: false)) == .replaced)
    }

    @Test func anUnknownIdentityLeavesItToTheRename() {
        #expect(WorkingFileCheck.decide(written: nil, atName: status(inode: 5)) == .same)
    }
}
