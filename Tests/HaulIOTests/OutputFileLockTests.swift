import Foundation
import Glibc
import Testing
@testable import HaulIO
import SystemPackage

/// `/usr/bin/flock` (util-linux) with `--no-fork`, so that the pid Foundation reports is the lock holder.
private let flockTool: String? = {
    for candidate in ["/usr/bin/flock", "/bin/flock"] where access(candidate, X_OK) == 0 { return candidate }
    return nil
}()

@Suite struct OutputFileLockTests {
    @Test func aSecondOpenInTheSameProcessIsRefusedUntilTheFirstIsReleased() throws {
        let scratch = OutputFileScratch()
        let path = scratch.file("f.part")
        var first: OutputFile? = try {
            let (file, created) = try OutputFile.openForDownload(path)
            #expect(created)
            return file
        }()
        try Array("abc".utf8).withUnsafeBytes { try first!.write($0, at: 0) }
        let error = #expect(throws: SystemError.self) { try OutputFile.openForDownload(path) }
        #expect(error == SystemError(call: "flock", errno: EWOULDBLOCK))
        print("second open: \(error!)")
        #expect(OutputFile.lockHolder(of: path) == getpid())
        // The refused open did not create the file, so it left it (and its content) alone.
        #expect(scratch.read("f.part") == "abc")

        first = nil  // closes the descriptor, which releases the lock
        #expect(OutputFile.lockHolder(of: path) == nil)
        let (again, created) = try OutputFile.openForDownload(path)
        #expect(!created)
        #expect(try again.size() == 3)  // never truncated
        #expect(OutputFile.lockHolder(of: path) == getpid())
    }

    @Test func openForDownloadCreatesOnlyWhenAbsentAndReadsAndWrites() throws {
        let scratch = OutputFileScratch()
        scratch.write("old.part", "0123456789")
        let (old, createdOld) = try OutputFile.openForDownload(scratch.file("old.part"))
        #expect(try !createdOld && old.size() == 10)
        let (new, createdNew) = try OutputFile.openForDownload(scratch.file("new.part"))
        #expect(try createdNew && new.size() == 0)
        try new.preallocate(length: 8192)
        #expect(try new.size() == 8192)
        try new.truncate(to: 5)
        #expect(try new.size() == 5)
        // Opened read-write: the descriptor can be read back (for a final digest, say).
        var byte: [UInt8] = [1]
        let read = try byte.withUnsafeMutableBytes { try old.fileDescriptor.read(fromAbsoluteOffset: 3, into: $0) }
        #expect(read == 1 && byte == [UInt8(ascii: "3")])
    }

    @Test func lockHolderIsNilForUnlockedOrMissingFiles() {
        let scratch = OutputFileScratch()
        scratch.write("f", "x")
        #expect(OutputFile.lockHolder(of: scratch.file("f")) == nil)
        #expect(OutputFile.lockHolder(of: scratch.file("missing")) == nil)
        // A plain open takes no lock.
        let plain = try? OutputFile.open(scratch.file("f"), truncate: false)
        #expect(plain != nil && OutputFile.lockHolder(of: scratch.file("f")) == nil)
    }

    @Test(.enabled(if: flockTool != nil, "needs flock(1) from util-linux"))
    func aLockHeldByAnotherProcessIsRefusedAndNamesItsPid() throws {
        let scratch = OutputFileScratch()
        let path = scratch.file("f.part")
        scratch.write("f.part", "partial")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: flockTool!)
        // `sleep 30` is what flock(1) runs while it holds the lock, not a wait of the test: it is killed below.
        child.arguments = ["--no-fork", "--exclusive", path, "sleep", "30"]
        try child.run()
        defer {
            if child.isRunning {
                kill(child.processIdentifier, SIGKILL)
                child.waitUntilExit()
            }
        }
        let pid = child.processIdentifier
        #expect(poll { OutputFile.lockHolder(of: path) == pid }, "flock(1), pid \(pid), never showed in /proc/locks")

        let error = #expect(throws: SystemError.self) { try OutputFile.openForDownload(path) }
        #expect(error == SystemError(call: "flock", errno: EWOULDBLOCK))
        #expect(OutputFile.lockHolder(of: path) == pid)
        #expect(scratch.read("f.part") == "partial")

        // SIGKILL: the test runner may leave SIGTERM ignored or blocked in children it spawns.
        kill(pid, SIGKILL)
        child.waitUntilExit()
        #expect(poll { OutputFile.lockHolder(of: path) == nil })
        let (file, created) = try OutputFile.openForDownload(path)
        #expect(try !created && file.size() == 7)
        #expect(OutputFile.lockHolder(of: path) == getpid())
    }
}
