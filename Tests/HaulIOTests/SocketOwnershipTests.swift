import Glibc
import Testing
@testable import HaulIO
import SystemPackage

/// A socket's descriptor has exactly one owner, which closes it. Checked by the socket's inode, not its
/// number: tests run in parallel, so the number may be handed to another test's file as soon as it is free.
@Suite("Socket ownership")
struct SocketOwnershipTests {
    @Test func closeReleasesTheSocketAndLaterCallsFailWithEBADF() throws {
        let socket = try TCPSocket(family: .ipv4, options: SocketOptions())
        let link = try #require(Self.link(of: socket.fileDescriptor))
        #expect(link.hasPrefix("socket:["), "descriptor \(socket.fileDescriptor.rawValue) is \(link)")
        #expect(Self.openDescriptorLinks().contains(link))

        socket.close()
        #expect(!Self.openDescriptorLinks().contains(link), "\(link) is still open after close()")
        #expect(socket.fileDescriptor == .invalid)
        #expect(throws: SystemError(call: "getsockopt(SO_ERROR)", errno: EBADF)) { _ = try socket.takePendingError() }
        socket.close()  // closing twice is harmless
    }

    @Test func aSocketThatGoesAwayClosesItsDescriptor() throws {
        var socket: TCPSocket? = try TCPSocket(family: .ipv6, options: SocketOptions(receiveBufferSize: 65_536))
        let link = try #require(Self.link(of: socket!.fileDescriptor))
        #expect(Self.openDescriptorLinks().contains(link))
        socket = nil
        #expect(!Self.openDescriptorLinks().contains(link), "\(link) is still open after its socket went away")
    }

    /// What `/proc/self/fd/N` points to (`socket:[inode]` for a socket), or nil if it is not open.
    static func link(of descriptor: FileDescriptor) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink("/proc/self/fd/\(descriptor.rawValue)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The targets of every descriptor this process has open.
    static func openDescriptorLinks() -> Set<String> {
        guard let directory = opendir("/proc/self/fd") else { return [] }
        defer { closedir(directory) }
        var links: Set<String> = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let number = CInt(name), let link = link(of: FileDescriptor(rawValue: number)) { links.insert(link) }
        }
        return links
    }
}
