import Glibc
import SystemPackage
import Testing
@testable import HaulIO

/// The file side of the syscall layer: who closes a descriptor, and how swift-system's errors are named.
@Suite struct FileCallsTests {
    @Test func aReleasedDescriptorStaysOpenForItsNewOwner() throws {
        let scratch = OutputFileScratch()
        scratch.write("f", "abc")
        let owner = try FileDescriptor.opening(FilePath(scratch.file("f")), .readOnly)
        let released = owner.release()
        // Still open (nothing else can hold this number while it is): its owner is now this test.
        #expect(try released.status().size == 3)
        try released.close()
    }

    @Test func closingReportsTheFailureNamingClose() {
        // -1 is never an open descriptor, so this cannot close another test's file.
        let owner = OwnedFileDescriptor(FileDescriptor(rawValue: -1))
        var failure: SystemError?
        do { try owner.close() } catch { failure = error }
        #expect(failure == SystemError(call: "close", errno: EBADF))
    }

    @Test func swiftSystemErrorsNameTheCallAndKeepTheErrno() {
        let scratch = OutputFileScratch()
        let error = #expect(throws: SystemError.self) {
            _ = try FileDescriptor.opening(FilePath(scratch.file("missing")), .readOnly)
        }
        #expect(error?.call == "open")
        #expect(error?.code == .noSuchFileOrDirectory && error?.errno == ENOENT)
        #expect(error?.description == "open: No such file or directory (errno 2)")
    }

    @Test func theLockIsExclusiveAcrossOpenFilesAndGoesWithUnlock() throws {
        let scratch = OutputFileScratch()
        scratch.write("f", "")
        let first = try FileDescriptor.opening(FilePath(scratch.file("f")), .readWrite)
        let second = try FileDescriptor.opening(FilePath(scratch.file("f")), .readWrite)
        #expect(try first.descriptor.lockExclusively())
        #expect(try !second.descriptor.lockExclusively())
        first.descriptor.unlock()
        #expect(try second.descriptor.lockExclusively())
    }
}
