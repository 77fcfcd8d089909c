import Testing
@testable import HaulIO

/// Reading who holds a `flock` lock from `/proc/locks` text (``ProcLocks``), without a second process.
@Suite struct ProcLocksTests {
    /// glibc's `makedev`, the inverse of ``ProcLocks/majorAndMinor(of:)``.
    static func device(major: UInt64, minor: UInt64) -> UInt64 {
        ((major & 0xFFF) << 8) | ((major & ~0xFFF) << 32) | (minor & 0xFF) | ((minor & ~0xFF) << 12)
    }

    static let table = """
        1: POSIX  ADVISORY  WRITE 999 fd:01:5678 0 EOF
        2: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF
        2: -> FLOCK  ADVISORY  WRITE 4321 fd:01:5678 0 EOF
        3: FLOCK  ADVISORY  WRITE 77 08:02:5678 0 EOF
        4: FLOCK  ADVISORY  WRITE 55 00:2a:9999 0 EOF
        """

    @Test func devicesSplitIntoMajorAndMinorAsGlibcDoes() {
        for (major, minor) in [(UInt64(0), UInt64(0)), (0xFD, 1), (8, 2), (0x1234, 0x56789), (0xFFF, 0xFF), (0x1000, 0x100)] {
            let split = ProcLocks.majorAndMinor(of: Self.device(major: major, minor: minor))
            #expect(split.major == major && split.minor == minor, "\(major):\(minor)")
        }
    }

    @Test func theFlockHolderOnTheSameDeviceAndInodeIsFound() {
        #expect(ProcLocks.holder(in: Self.table, device: Self.device(major: 0xFD, minor: 1), inode: 5678) == 1234)
        #expect(ProcLocks.holder(in: Self.table, device: Self.device(major: 8, minor: 2), inode: 5678) == 77)
        #expect(ProcLocks.holder(in: Self.table, device: Self.device(major: 0xFD, minor: 1), inode: 1) == nil)
    }

    @Test func posixLocksAndWaitersHoldNothing() {
        let table = """
            1: POSIX  ADVISORY  WRITE 999 fd:01:5678 0 EOF
            1: -> FLOCK  ADVISORY  WRITE 4321 fd:01:5678 0 EOF
            """
        #expect(ProcLocks.holder(in: table, device: Self.device(major: 0xFD, minor: 1), inode: 5678) == nil)
    }

    /// btrfs and overlayfs show `stat` another device than `/proc/locks`: the inode alone decides, if only one
    /// `flock` lock has it.
    @Test func anotherDeviceCountsOnlyForTheOnlyLockOnThatInode() {
        let elsewhere = Self.device(major: 0, minor: 0x2B)
        #expect(ProcLocks.holder(in: Self.table, device: elsewhere, inode: 9999) == 55)
        #expect(ProcLocks.holder(in: Self.table, device: elsewhere, inode: 5678) == nil, "two holders of 5678: neither is sure")
    }

    @Test func malformedLinesAreSkipped() {
        let device = Self.device(major: 0xFD, minor: 1)
        for line in ["", "garbage", "1: FLOCK ADVISORY WRITE", "1: FLOCK ADVISORY WRITE x fd:01:5678 0 EOF",
                     "1: FLOCK ADVISORY WRITE -5 fd:01:5678 0 EOF", "1: FLOCK ADVISORY WRITE 0 fd:01:5678 0 EOF",
                     "1: FLOCK ADVISORY WRITE 12 fd:01 0 EOF", "1: FLOCK ADVISORY WRITE 12 zz:01:5678 0 EOF",
                     "1: FLOCK ADVISORY WRITE 12 fd:01:56x8 0 EOF"] {
            #expect(ProcLocks.holder(in: line, device: device, inode: 5678) == nil, "\(line)")
        }
        #expect(ProcLocks.holder(in: "garbage\n2: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF\n", device: device, inode: 5678) == 1234)
    }
}
