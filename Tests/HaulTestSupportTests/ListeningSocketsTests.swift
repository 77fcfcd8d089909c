import Foundation
import Glibc
import Testing
@testable import HaulTestSupport

/// A started server is one whose own processes listen on its ports, not merely ports that accept connections.
@Suite("ListeningSockets")
struct ListeningSocketsTests {
    /// A socket of this process listening on a free port of `host`, and the port.
    static func listener(host: String) throws -> (Int32, UInt16) {
        var address = try #require(SocketAddressStorage(host: host, port: 0))
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        try #require(address.withSockAddr { bind(fd, $0, $1) } == 0 && listen(fd, 4) == 0, "bind/listen: \(TestSupportError.describe(errno: errno))")
        return (fd, try LoopbackPorts.boundPort(of: fd))
    }

    static var hosts: [String] { ["127.0.0.1"] + (LoopbackPorts.isIPv6Available ? ["::1"] : []) }

    @Test func theTestProcessOwnsItsOwnListenerAndNoOtherPort() throws {
        for host in Self.hosts {
            let (fd, port) = try Self.listener(host: host)
            defer { close(fd) }
            let ports = try LoopbackPorts.freePorts(1, host: host)
            #expect(ListeningSockets.processGroup(getpgrp(), listensOn: [port], hosts: [host]), "\(host):\(port)")
            #expect(!ListeningSockets.processGroup(getpgrp(), listensOn: [port, ports[0]], hosts: [host]), "nothing listens on \(ports[0])")
            #expect(!ListeningSockets.processGroup(getpgrp() + 1_000_000, listensOn: [port], hosts: [host]), "no such process group")
        }
    }

    /// The race this guards against: a port handed to a test's server was taken meanwhile by another test's
    /// server. It accepts connections, yet it is not the started process's, which must not count as started
    /// (`sleep` listens on nothing; before, `waitUntilListening` said yes at once).
    @Test func aPortAnotherProcessListensOnIsNotTheStartedServers() throws {
        let directory = try TemporaryDirectory(prefix: "haul-listening")
        let (fd, port) = try Self.listener(host: "127.0.0.1")
        // Accepted and closed at once, as a server does: the readiness check connects again and again, and a
        // full accept queue would leave its connect waiting for SYN retries.
        let acceptorEnded = DispatchSemaphore(value: 0)
        let acceptor = Thread {
            while true {
                let connection = accept(fd, nil, nil)
                if connection >= 0 { close(connection) } else if errno != EINTR { break }
            }
            acceptorEnded.signal()
        }
        acceptor.start()
        defer {
            // Shut down (which ends the accept loop), and closed only once the loop is over: a number closed
            // under it could be another test's socket by its next accept.
            shutdown(fd, Int32(SHUT_RDWR))
            acceptorEnded.wait()
            close(fd)
        }
        let process = try SupervisedProcess(executable: "/bin/sleep", arguments: ["60"], outputPath: directory.file("output"))
        defer { process.stop() }
        #expect(LoopbackPorts.acceptsConnections(host: "127.0.0.1", port: port))
        // A short deadline decides nothing here: a correct check says no however long it looks.
        #expect(!process.waitUntilListening(ports: [port], hosts: ["127.0.0.1"], timeout: 0.5))
        #expect(process.isRunning)
    }
}
