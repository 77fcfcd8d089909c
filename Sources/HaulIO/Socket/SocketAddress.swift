import Glibc

/// An IPv4 or IPv6 address with a TCP port, ready to hand to `connect`.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        /// `AF_INET`.
        case ipv4
        /// `AF_INET6`.
        case ipv6

        var rawValue: Int32 { self == .ipv4 ? AF_INET : AF_INET6 }
    }

    /// The address family.
    public let family: Family
    /// The address in presentation form, e.g. `127.0.0.1` or `::1`.
    public let ipAddress: String
    /// The port in host byte order.
    public let port: UInt16
    /// The raw `sockaddr_in` / `sockaddr_in6` bytes.
    private let storage: [UInt8]

    /// Parses an IP literal (no brackets, no zone handling beyond what `inet_pton` accepts);
    /// `nil` if `ipAddress` is not one.
    public init?(ipAddress: String, port: UInt16) {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, ipAddress, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            self.init(family: .ipv4, port: port, raw: v4)
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, ipAddress, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            self.init(family: .ipv6, port: port, raw: v6)
            return
        }
        return nil
    }

    /// Copies an address returned by `getaddrinfo`; `nil` for families other than IPv4 and IPv6.
    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            self.init(family: .ipv4, port: UInt16(bigEndian: v4.sin_port), raw: v4)
        case AF_INET6:
            let v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            self.init(family: .ipv6, port: UInt16(bigEndian: v6.sin6_port), raw: v6)
        default:
            return nil
        }
    }

    private init<Raw>(family: Family, port: UInt16, raw: Raw) {
        var raw = raw
        let bytes = withUnsafeBytes(of: &raw) { Array($0) }
        self.family = family
        self.port = port
        self.storage = bytes
        self.ipAddress = SocketAddress.presentation(family: family, raw: bytes)
    }

    /// `127.0.0.1:80` or `[::1]:80`.
    public var description: String { SocketAddress.endpoint(host: ipAddress, port: port) }

    /// Whether `host` is an IPv4 or IPv6 literal, which needs no resolution and gets no SNI.
    public static func isIPLiteral(_ host: String) -> Bool { SocketAddress(ipAddress: host, port: 0) != nil }

    /// Formats a host and port for messages, bracketing IPv6 literals.
    static func endpoint(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Calls `body` with the `sockaddr` pointer and length for `connect`.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> Result) throws(SystemError) -> Result {
        let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: storage.count, alignment: 8)
        defer { raw.deallocate() }
        raw.copyBytes(from: storage)
        return try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(storage.count))
    }

    private static func presentation(family: Family, raw: [UInt8]) -> String {
        raw.withUnsafeBytes { bytes in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let address: UnsafeRawPointer
            if family == .ipv4 {
                address = bytes.baseAddress! + MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
            } else {
                address = bytes.baseAddress! + MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
            }
            guard let written = inet_ntop(family.rawValue, address, &text, socklen_t(text.count)) else { return "?" }
            return String(cString: written)
        }
    }
}
