import Glibc

/// Free ports and readiness checks on the loopback interface; nothing here ever touches another address.
public enum LoopbackPorts {
    /// Whether this machine has an IPv6 loopback address to bind (containers sometimes have IPv6 disabled).
    public static let isIPv6Available: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = SocketAddressStorage(host: "::1", port: 0)!
        return address.withSockAddr { bind(fd, $0, $1) } == 0
    }()

    /// A port that was free on `host` a moment ago: bound with port 0, read back, released.
    ///
    /// Another process may take it before the caller binds it, so callers that hand it to a child process
    /// (nginx) retry with a new port when the child reports "Address already in use".
    public static func freePort(host: String = "127.0.0.1") throws -> UInt16 {
        try freePorts(1, host: host)[0]
    }

    /// `count` different ports that were free on `host` a moment ago. All of them are held bound until the last
    /// is chosen: released one by one, the kernel may hand the same port out twice (a server given two equal
    /// ports fails with "duplicate listen").
    public static func freePorts(_ count: Int, host: String = "127.0.0.1") throws -> [UInt16] {
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        var ports: [UInt16] = []
        for _ in 0..<count {
            let (fd, port) = try bindAnyPort(host: host)
            sockets.append(fd)
            ports.append(port)
        }
        return ports
    }

    /// A socket bound to port 0 on `host`, and the port the kernel gave it; the caller closes the socket.
    private static func bindAnyPort(host: String) throws -> (Int32, UInt16) {
        guard var address = SocketAddressStorage(host: host, port: 0) else {
            throw TestSupportError("not a loopback IP address: \(host)")
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket failed: \(TestSupportError.describe(errno: errno))") }
        guard address.withSockAddr({ bind(fd, $0, $1) }) == 0 else {
            let failure = TestSupportError("bind \(host):0 failed: \(TestSupportError.describe(errno: errno))")
            close(fd)
            throw failure
        }
        do {
            return (fd, try boundPort(of: fd))
        } catch {
            close(fd)
            throw error
        }
    }

    /// Whether a TCP connection to `host`:`port` is accepted right now.
    public static func acceptsConnections(host: String, port: UInt16) -> Bool {
        guard var address = SocketAddressStorage(host: host, port: port) else { return false }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return address.withSockAddr { connect(fd, $0, $1) } == 0
    }

    /// The local port a socket is bound to.
    static func boundPort(of fd: Int32) throws -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw TestSupportError("getsockname failed: \(TestSupportError.describe(errno: errno))") }
        let isIPv6 = storage.ss_family == sa_family_t(AF_INET6)
        return withUnsafePointer(to: &storage) { pointer in
            if isIPv6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }
}

/// An IPv4 or IPv6 socket address built from a numeric loopback host, for bind and connect.
struct SocketAddressStorage {
    private var storage = sockaddr_storage()
    private let length: socklen_t
    let family: Int32

    /// `nil` unless `host` is a numeric IPv4 or IPv6 loopback address: the test servers must never reach out.
    init?(host: String, port: UInt16) {
        if host.hasPrefix("127.") {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee = address }
            }
            family = AF_INET
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else if host == "::1" {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee = address }
            }
            family = AF_INET6
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            return nil
        }
    }

    mutating func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        let length = self.length
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
