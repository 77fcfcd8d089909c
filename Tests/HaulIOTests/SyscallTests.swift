import Glibc
import Testing
@testable import HaulIO

@Suite("Syscall wrapper")
struct SyscallTests {
    @Test func closingAnInvalidDescriptorThrowsEBADFNamingTheCall() {
        #expect(throws: SystemError(call: "close", errno: EBADF)) {
            try closeDescriptor(-1)
        }
    }

    @Test func errorDescriptionNamesCallReasonAndErrno() {
        let error = SystemError(call: "connect", errno: ECONNREFUSED)
        #expect(error.description == "connect: Connection refused (errno 111)")
    }

    @Test func readingAnEmptyNonBlockingPipeReportsWouldBlock() throws {
        let fds = try makeNonBlockingPipe()
        defer {
            try? closeDescriptor(fds[0])
            try? closeDescriptor(fds[1])
        }
        var byte: UInt8 = 0
        let result = try syscall("read", .nonBlocking) { read(fds[0], &byte, 1) }
        #expect(result == .wouldBlock)

        _ = try blockingSyscall("write") { write(fds[1], "x", 1) }
        #expect(try syscall("read", .nonBlocking) { read(fds[0], &byte, 1) } == .processed(1))
        #expect(byte == UInt8(ascii: "x"))
    }

    @Test func wouldBlockIsAnErrorForCallsNotRunAsNonBlocking() throws {
        let fds = try makeNonBlockingPipe()
        defer {
            try? closeDescriptor(fds[0])
            try? closeDescriptor(fds[1])
        }
        var byte: UInt8 = 0
        #expect(throws: SystemError(call: "read", errno: EAGAIN)) {
            _ = try syscall("read") { read(fds[0], &byte, 1) }
        }
    }
}

/// A pipe whose read end is non-blocking.
func makeNonBlockingPipe() throws -> [Int32] {
    var fds: [Int32] = [0, 0]
    _ = try blockingSyscall("pipe") { pipe(&fds) }
    _ = try blockingSyscall("fcntl") { fcntl(fds[0], F_SETFL, O_NONBLOCK) }
    return fds
}
