import Testing
@testable import Haul

/// The rule of a batch's flush: one `syncfs` per filesystem for the small files sharing it, an `fdatasync`
/// each for the rest.
@Suite struct FlushPlanTests {
    typealias File = FlushPlan.File

    func small(_ fileSystem: UInt64?, _ order: UInt64) -> File { File(fileSystem: fileSystem, bytes: 4096, openOrder: order) }

    @Test func smallFilesOnOneFileSystemShareOneSyncfsLedByTheFirstOpened() {
        let plan = FlushPlan.make([small(7, 30), small(7, 10), small(7, 20)], syncfsReportsErrors: true)
        #expect(plan == FlushPlan(perFile: [], fileSystems: [[1, 0, 2]]))
    }

    @Test func aLoneFileALargeFileAnUnknownFileSystemAndAFailedFileAreSyncedOnTheirOwn() {
        var failed = small(1, 5)
        failed.failedBefore = true
        let files = [
            small(1, 1), small(2, 2), File(fileSystem: 1, bytes: FlushPlan.largeFile + 1, openOrder: 3),
            small(nil, 4), failed, small(1, 6), File(fileSystem: 1, bytes: FlushPlan.largeFile, openOrder: 7),
        ]
        let plan = FlushPlan.make(files, syncfsReportsErrors: true)
        // Filesystem 2 has one file: alone. A file of exactly largeFile bytes still shares.
        #expect(plan == FlushPlan(perFile: [1, 2, 3, 4], fileSystems: [[0, 5, 6]]))
    }

    @Test func eachFileSystemGetsItsOwnSyncfsInTheOrderFirstSeen() {
        let plan = FlushPlan.make([small(9, 1), small(4, 2), small(9, 3), small(4, 4), small(5, 5)], syncfsReportsErrors: true)
        #expect(plan == FlushPlan(perFile: [4], fileSystems: [[0, 2], [1, 3]]))
    }

    @Test func aBatchOfOneOrAKernelWhoseSyncfsHidesErrorsSyncsEachFile() {
        #expect(FlushPlan.make([small(1, 1)], syncfsReportsErrors: true) == FlushPlan(perFile: [0], fileSystems: []))
        #expect(FlushPlan.make([small(1, 1), small(1, 2)], syncfsReportsErrors: false) == FlushPlan(perFile: [0, 1], fileSystems: []))
        #expect(FlushPlan.make([], syncfsReportsErrors: true) == FlushPlan(perFile: [], fileSystems: []))
    }

    @Test func muchDirtyDataOfOthersSendsAFileSystemsFilesToTheirOwnSyncs() {
        let files = [small(1, 1), small(1, 2), small(1, 3), small(2, 4), small(2, 5)]
        let floor = FlushPlan.dirtyAllowanceFloor
        // A few files may wait for up to the floor (8 MiB) of others' data, whatever their number.
        #expect(FlushPlan.make(files, syncfsReportsErrors: true, dirtyElsewhere: floor)
            == FlushPlan(perFile: [], fileSystems: [[0, 1, 2], [3, 4]]))
        #expect(FlushPlan.make(files, syncfsReportsErrors: true, dirtyElsewhere: floor + 1)
            == FlushPlan(perFile: [0, 1, 2, 3, 4], fileSystems: []))
        #expect(FlushPlan.make(files, syncfsReportsErrors: true, dirtyElsewhere: nil).fileSystems.count == 2, "unknown: no limit")
        // Many files may wait for more: 64 KiB each once that is above the floor.
        let perFile = FlushPlan.dirtyAllowancePerFile
        let many = Int(floor / perFile) + 10
        let crowd = (0..<many).map { small(1, UInt64($0)) } + [small(2, 9_000), small(2, 9_001)]
        let crowdAllowance = Int64(many) * perFile
        #expect(FlushPlan.dirtyAllowance(files: many) == crowdAllowance)
        #expect(FlushPlan.dirtyAllowance(files: 2) == floor)
        #expect(FlushPlan.make(crowd, syncfsReportsErrors: true, dirtyElsewhere: crowdAllowance)
            == FlushPlan(perFile: [many, many + 1], fileSystems: [Array(0..<many)]))
        #expect(FlushPlan.make(crowd, syncfsReportsErrors: true, dirtyElsewhere: crowdAllowance + 1)
            == FlushPlan(perFile: Array(0..<many + 2), fileSystems: []))
    }

    @Test func dirtyBytesAreDirtyPlusWritebackOfProcMeminfo() {
        let text = "MemTotal:       24000000 kB\nDirty:             95380 kB\nWriteback:            12 kB\nWritebackTmp:          7 kB\n"
        let expected: Int64 = (95380 + 12) * 1024
        let measured = FlushPlan.dirtyBytes(memoryInformation: text)
        #expect(measured == expected, "\(String(describing: measured))")
        #expect(FlushPlan.dirtyBytes(memoryInformation: "Dirty: 5 kB\n") == nil)
        #expect(FlushPlan.dirtyBytes(memoryInformation: nil) == nil)
    }

    @Test func syncfsReportsWriteBackErrorsFromLinux5Point8() {
        for (release, expected) in [
            ("6.18.44-fc-v657", true), ("5.8.0", true), ("5.10.0-28-amd64", true), ("5.15.0-1048-aws", true),
            ("10.0", true), ("5.7.19", false), ("4.19.0-26-amd64", false), ("3.10.0-1160.el7.x86_64", false),
            ("", false), ("garbage", false), ("6", false),
        ] {
            #expect(FlushPlan.syncfsReportsErrors(kernelRelease: release) == expected, "\(release)")
        }
        #expect(FlushPlan.syncfsReportsErrors(kernelRelease: nil) == false)
    }
}
