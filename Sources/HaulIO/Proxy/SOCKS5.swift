import Glibc
import HaulHTTP

/// The SOCKS5 client messages (RFC 1928) and username/password authentication (RFC 1929), as pure functions:
/// encoders return the bytes to send, decoders take everything received so far and return `nil` until a
/// whole message is there, then the message and how many bytes it took.
public enum SOCKS5 {
    /// Authentication methods (RFC 1928 §3).
    public enum Method: UInt8, Sendable, Hashable {
        /// No authentication.
        case noAuthentication = 0x00
        /// Username/password (RFC 1929).
        case usernamePassword = 0x02
        /// The server accepts none of the offered methods.
        case noAcceptableMethods = 0xFF
    }

    /// The address a CONNECT names (RFC 1928 §5).
    public enum Address: Sendable, Hashable, CustomStringConvertible {
        /// ATYP 1: four bytes.
        case ipv4([UInt8])
        /// ATYP 4: sixteen bytes.
        case ipv6([UInt8])
        /// ATYP 3: a name for the proxy to resolve, at most 255 bytes.
        case domain(String)

        /// The address of an IP literal (`192.0.2.1`, `2001:db8::1`); `nil` for anything else.
        public init?(ipLiteral text: String) {
            var v4 = in_addr()
            if inet_pton(AF_INET, text, &v4) == 1 {
                self = .ipv4(withUnsafeBytes(of: &v4) { Array($0) })
                return
            }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, text, &v6) == 1 {
                self = .ipv6(withUnsafeBytes(of: &v6) { Array($0) })
                return
            }
            return nil
        }

        /// The address for `host`: its IP for literals, its name otherwise.
        public init(_ host: HTTPHost) {
            self = Address(ipLiteral: host.name) ?? .domain(host.name)
        }

        public var description: String {
            switch self {
            case .ipv4(let bytes): return bytes.map(String.init).joined(separator: ".")
            case .ipv6(let bytes):
                var address = in6_addr()
                withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes.prefix(16)) }
                var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                guard let written = inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) else { return "?" }
                return String(cString: written)
            case .domain(let name): return name
            }
        }
    }

    /// A CONNECT reply code (RFC 1928 §6).
    public enum ReplyCode: Sendable, Hashable, CustomStringConvertible {
        case succeeded, generalFailure, notAllowed, networkUnreachable, hostUnreachable, connectionRefused,
             ttlExpired, commandNotSupported, addressTypeNotSupported
        /// A code RFC 1928 leaves unassigned.
        case unassigned(UInt8)

        /// The code for `value`.
        public init(_ value: UInt8) {
            switch value {
            case 0: self = .succeeded
            case 1: self = .generalFailure
            case 2: self = .notAllowed
            case 3: self = .networkUnreachable
            case 4: self = .hostUnreachable
            case 5: self = .connectionRefused
            case 6: self = .ttlExpired
            case 7: self = .commandNotSupported
            case 8: self = .addressTypeNotSupported
            default: self = .unassigned(value)
            }
        }

        /// The byte on the wire.
        public var rawValue: UInt8 {
            switch self {
            case .succeeded: 0
            case .generalFailure: 1
            case .notAllowed: 2
            case .networkUnreachable: 3
            case .hostUnreachable: 4
            case .connectionRefused: 5
            case .ttlExpired: 6
            case .commandNotSupported: 7
            case .addressTypeNotSupported: 8
            case .unassigned(let value): value
            }
        }

        /// RFC 1928's wording, lowercased: `connection refused`.
        public var description: String {
            switch self {
            case .succeeded: "succeeded"
            case .generalFailure: "general SOCKS server failure"
            case .notAllowed: "connection not allowed by ruleset"
            case .networkUnreachable: "network unreachable"
            case .hostUnreachable: "host unreachable"
            case .connectionRefused: "connection refused"
            case .ttlExpired: "TTL expired"
            case .commandNotSupported: "command not supported"
            case .addressTypeNotSupported: "address type not supported"
            case .unassigned: "unassigned reply code"
            }
        }
    }

    /// A SOCKS5 message that breaks the protocol, or a request that cannot be encoded.
    public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What was wrong.
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// A successful or failed CONNECT reply.
    public struct ConnectReply: Sendable, Hashable {
        /// The reply code.
        public let code: ReplyCode
        /// The address the proxy bound for the connection.
        public let boundAddress: Address
        /// The port the proxy bound.
        public let boundPort: UInt16
    }

    // MARK: Greeting

    /// `05 01 00`, or `05 02 00 02` when credentials can be offered.
    public static func greeting(offeringUsernamePassword: Bool) -> [UInt8] {
        offeringUsernamePassword
            ? [5, 2, Method.noAuthentication.rawValue, Method.usernamePassword.rawValue]
            : [5, 1, Method.noAuthentication.rawValue]
    }

    /// The server's method selection, `05 METHOD`: the method byte.
    public static func parseMethodSelection(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> (method: UInt8, consumed: Int)? {
        guard bytes.count >= 2 else { return nil }
        let version = bytes.first!
        guard version == 5 else { throw ProtocolError("the proxy answered with version \(version), not SOCKS5") }
        return (bytes.dropFirst().first!, 2)
    }

    // MARK: Username/password (RFC 1929)

    /// `01 ULEN USER PLEN PASSWORD`; each part must be 1–255 bytes (RFC 1929 forbids empty ones).
    public static func usernamePasswordRequest(user: String, password: String) throws(ProtocolError) -> [UInt8] {
        let userBytes = Array(user.utf8)
        let passwordBytes = Array(password.utf8)
        guard (1...255).contains(userBytes.count) else {
            throw ProtocolError("a SOCKS5 user name must be 1 to 255 bytes long, not \(userBytes.count)")
        }
        guard (1...255).contains(passwordBytes.count) else {
            throw ProtocolError("a SOCKS5 password must be 1 to 255 bytes long, not \(passwordBytes.count)")
        }
        return [1, UInt8(userBytes.count)] + userBytes + [UInt8(passwordBytes.count)] + passwordBytes
    }

    /// The authentication reply, `01 STATUS`: the status byte (0 is success).
    public static func parseAuthenticationReply(_ bytes: some Collection<UInt8>) throws(ProtocolError) -> (status: UInt8, consumed: Int)? {
        guard bytes.count >= 2 else { return nil }
        let version = bytes.first!
        guard version == 1 else {
            throw ProtocolError("the username/password reply has version \(version), not 1")
        }
        return (bytes.dropFirst().first!, 2)
    }

    // MARK: CONNECT

    /// `05 01 00 ATYP ADDRESS PORT`.
    public static func connectRequest(to address: Address, port: UInt16) throws(ProtocolError) -> [UInt8] {
        var bytes: [UInt8] = [5, 1, 0]
        switch address {
        case .ipv4(let raw):
            guard raw.count == 4 else { throw ProtocolError("an IPv4 address has 4 bytes, not \(raw.count)") }
            bytes.append(1)
            bytes += raw
        case .ipv6(let raw):
            guard raw.count == 16 else { throw ProtocolError("an IPv6 address has 16 bytes, not \(raw.count)") }
            bytes.append(4)
            bytes += raw
        case .domain(let name):
            let raw = Array(name.utf8)
            guard (1...255).contains(raw.count) else {
                throw ProtocolError("a host name sent to a SOCKS5 proxy must be 1 to 255 bytes long, not \(raw.count)")
            }
            bytes.append(3)
            bytes.append(UInt8(raw.count))
            bytes += raw
        }
        bytes.append(UInt8(port >> 8))
        bytes.append(UInt8(port & 0xFF))
        return bytes
    }

    /// The CONNECT reply, `05 REP 00 ATYP BND.ADDR BND.PORT`.
    public static func parseConnectReply(_ received: some Collection<UInt8>) throws(ProtocolError) -> (reply: ConnectReply, consumed: Int)? {
        let bytes = Array(received)
        guard bytes.count >= 5 else { return nil }
        guard bytes[0] == 5 else { throw ProtocolError("the proxy answered with version \(bytes[0]), not SOCKS5") }
        let code = ReplyCode(bytes[1])
        let addressLength: Int
        let addressStart: Int
        switch bytes[3] {
        case 1: (addressStart, addressLength) = (4, 4)
        case 4: (addressStart, addressLength) = (4, 16)
        case 3: (addressStart, addressLength) = (5, Int(bytes[4]))
        default:
            // A failure reply may come with a careless address type; the code is what matters then.
            if code != .succeeded {
                return (ConnectReply(code: code, boundAddress: .ipv4([0, 0, 0, 0]), boundPort: 0), bytes.count)
            }
            throw ProtocolError("the CONNECT reply has unknown address type \(bytes[3])")
        }
        let total = addressStart + addressLength + 2
        guard bytes.count >= total else { return nil }
        let raw = Array(bytes[addressStart..<(addressStart + addressLength)])
        let address: Address
        switch bytes[3] {
        case 1: address = .ipv4(raw)
        case 4: address = .ipv6(raw)
        default: address = .domain(String(decoding: raw, as: UTF8.self))
        }
        let port = UInt16(bytes[total - 2]) << 8 | UInt16(bytes[total - 1])
        return (ConnectReply(code: code, boundAddress: address, boundPort: port), total)
    }
}
