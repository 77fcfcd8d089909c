import Glibc
import Testing
@testable import HaulIO
import SystemPackage

@Suite("Syscall wrapper")
struct SyscallTests {
    @Test func closingAnInvalidDescriptorThrowsEBADFNamingTheCall() {
        #expect(throws: SystemError(call: "close", errno: EBADF)) {
            try OwnedFileDescriptor(FileDescriptor(rawValue: -1)).close()
        }
    }

    @Test func errorDescriptionNamesCallReasonAndErrno() {
        let error = SystemError(call: "connect", errno: ECONNREFUSED)
        #expect(error.description == "connect: Connection refused (errno 111)")
    }

    @Test func readingAnEmptyNonBlockingPipeReportsWouldBlock() throws {
        let fds = try makeNonBlockingPipe()
        defer {
            try? fds.readEnd.close()
            try? fds.writeEnd.close()
        }
        var byte: UInt8 = 0
        let result = try syscall("read", .nonBlocking) { read(fds.readEnd.rawValue, &byte, 1) }
        #expect(result == .wouldBlock)

        _ = try blockingSyscall("write") { write(fds.writeEnd.rawValue, "x", 1) }
        #expect(try syscall("read", .nonBlocking) { read(fds.readEnd.rawValue, &byte, 1) } == .processed(1))
        #expect(byte == UInt8(ascii: "x"))
    }

    @Test func wouldBlockIsAnErrorForCallsNotRunAsNonBlocking() throws {
        let fds = try makeNonBlockingPipe()
        defer {
            try? fds.readEnd.close()
            try? fds.writeEnd.close()
        }
        var byte: UInt8 = 0
        #expect(throws: SystemError(call: "read", errno: EAGAIN)) {
            _ = try syscall("read") { read(fds.readEnd.rawValue, &byte, 1) }
        }
    }
}

/// A pipe whose read end is non-blocking; the caller closes both ends.
func makeNonBlockingPipe() throws -> (readEnd: FileDescriptor, writeEnd: FileDescriptor) {
    let fds = try systemCall("pipe") { try FileDescriptor.pipe() }
    _ = try blockingSyscall("fcntl") { fcntl(fds.readEnd.rawValue, F_SETFL, O_NONBLOCK) }
    return fds
}
