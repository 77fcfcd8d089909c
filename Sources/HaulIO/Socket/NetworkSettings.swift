import Glibc
import HaulHTTP

/// Where and how connections are made beyond what the URL says: curl's `--resolve`, `--connect-to`,
/// `-4`/`-6` and `--interface`. TLS (SNI, the certificate's name check) and the request's `Host` always use
/// the URL's host; these settings only change which socket address a connection reaches and from where.
///
/// The order, as in curl: a ``ConnectToRule`` picks the host and port to connect to for a URL's host and
/// port, then a ``ResolveRule`` for *that* host and port gives its addresses instead of DNS, then
/// ``addressFamily`` keeps only one family, and the socket is bound to ``interface`` before connecting.
///
/// Through a proxy: the connection is to the proxy, so resolve rules for the proxy's host and port apply to
/// it (and family and interface too); a tunnel (HTTP `CONNECT`, SOCKS5) is asked to reach the connect-to
/// target instead of the URL's host, as curl does; a `socks5://` proxy (not `socks5h://`) is handed the
/// target's address as resolved here, so resolve rules apply to that lookup. A plain-HTTP request forwarded
/// to an HTTP proxy in absolute form names the URL's host, which the proxy resolves: neither rule applies.
public struct NetworkSettings: Sendable, Hashable {
    /// Addresses to use instead of DNS for a host and port (`--resolve`). A rule for the exact host wins
    /// over a `*` rule for the port; of two rules for the same host and port, the later one wins.
    public var resolve: [ResolveRule]
    /// Other hosts and ports to connect to for a URL's host and port (`--connect-to`); the first rule that
    /// matches is used.
    public var connectTo: [ConnectToRule]
    /// An IP address family.
    public enum AddressFamily: Sendable, Hashable {
        /// IPv4 only (`-4`).
        case ipv4
        /// IPv6 only (`-6`).
        case ipv6

        /// `IPv4` or `IPv6`.
        public var name: String { self == .ipv4 ? "IPv4" : "IPv6" }
        /// The option that asks for only this family: `-4/--ipv4` or `-6/--ipv6`.
        var option: String { self == .ipv4 ? "-4/--ipv4" : "-6/--ipv6" }
        var socketFamily: SocketAddress.Family { self == .ipv4 ? .ipv4 : .ipv6 }
    }

    /// Only addresses of this family (`-4`, `-6`); nil for both (Happy Eyeballs between them).
    public var addressFamily: AddressFamily?
    /// The device or local address every connection's socket is bound to before it connects (`--interface`).
    public var interface: NetworkInterface?

    /// The defaults: DNS, both families, any interface.
    public init(resolve: [ResolveRule] = [], connectTo: [ConnectToRule] = [], addressFamily: AddressFamily? = nil,
                interface: NetworkInterface? = nil) {
        self.resolve = resolve
        self.connectTo = connectTo
        self.addressFamily = addressFamily
        self.interface = interface
    }

    /// Whether nothing differs from plain DNS and connect.
    public var isDefault: Bool { self == NetworkSettings() }

    /// The host and port a connection for `host`:`port` goes to: the first matching connect-to rule's target,
    /// else `host`:`port` itself. `host` is as ``HTTPHost/name`` gives it (lowercase, IPv6 without brackets).
    public func connectTarget(host: String, port: UInt16) -> (host: String, port: UInt16) {
        for rule in connectTo where rule.matches(host: host, port: port) {
            return (rule.toHost ?? host, rule.toPort ?? port)
        }
        return (host, port)
    }

    /// The addresses a resolve rule gives for `host`:`port` (with `port`), or nil when DNS answers.
    public func pinnedAddresses(host: String, port: UInt16) -> [SocketAddress]? {
        let name = Self.canonicalHost(host)
        let exact = resolve.last { $0.host == name && $0.port == port }
        guard let rule = exact ?? resolve.last(where: { $0.host == "*" && $0.port == port }) else { return nil }
        return rule.addresses.compactMap { SocketAddress(ipAddress: $0, port: port) }
    }

    /// `addresses` of ``addressFamily`` only (all of them when it is nil).
    public func usable(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let addressFamily else { return addresses }
        return addresses.filter { $0.family == addressFamily.socketFamily }
    }

    /// `host` as rules store it: lowercase, an IPv6 literal in canonical form without brackets.
    static func canonicalHost(_ host: String) -> String {
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.contains(":"), let literal = SocketAddress(ipAddress: text, port: 0) { return literal.ipAddress }
        return text.lowercased()
    }
}

/// Why a `--resolve`, `--connect-to` or `--interface` value is not one.
public struct NetworkSettingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text as given.
    public let text: String
    /// The form it should have, e.g. `HOST:PORT:ADDRESS[,ADDRESS...]`.
    public let form: String
    /// What is wrong with it.
    public let reason: String

    /// `"TEXT" is not FORM: REASON`.
    public var description: String { "\"\(text)\" is not \(form): \(reason)" }
}

/// A host and port whose addresses are given instead of looked up (curl's `--resolve HOST:PORT:ADDR[,ADDR...]`).
public struct ResolveRule: Sendable, Hashable {
    /// The host (lowercase; an IPv6 literal without brackets), or `*` for every host on ``port``.
    public let host: String
    /// The port the rule applies to.
    public let port: UInt16
    /// IP literals (no brackets), tried in this order (after Happy Eyeballs interleaves the families).
    public let addresses: [String]

    static let form = "[+]HOST:PORT:ADDRESS[,ADDRESS...]"

    /// The rule in curl's syntax, IPv6 in brackets: what ``init(parsing:)`` reads back as this rule.
    public var text: String {
        "\(NetworkText.bracketed(host)):\(port):" + addresses.map(NetworkText.bracketed).joined(separator: ",")
    }

    /// A rule from its parts; nil when an address is not an IP literal, the host is empty, or there is no address.
    public init?(host: String, port: UInt16, addresses: [String]) {
        let canonical = addresses.compactMap { SocketAddress(ipAddress: $0, port: port)?.ipAddress }
        guard !host.isEmpty, !canonical.isEmpty, canonical.count == addresses.count else { return nil }
        self.host = host == "*" ? "*" : NetworkSettings.canonicalHost(host)
        self.port = port
        self.addresses = canonical
    }

    /// Parses curl's syntax: `HOST:PORT:ADDRESS[,ADDRESS...]`, HOST `*` for any host, IPv6 hosts and
    /// addresses with or without brackets, and curl's leading `+` (entries that time out, which mean the same
    /// here). curl's `-HOST:PORT` (removing an entry) has nothing to remove and is refused.
    public init(parsing text: String) throws(NetworkSettingError) {
        func failure(_ reason: String) -> NetworkSettingError { NetworkSettingError(text: text, form: Self.form, reason: reason) }
        var rest = Substring(text)
        if rest.hasPrefix("-") { throw failure("removing an entry (-HOST:PORT) has no meaning here") }
        if rest.hasPrefix("+") { rest = rest.dropFirst() }
        let host: String
        do { host = try NetworkText.takeHost(&rest, allowsWildcard: true) } catch { throw failure(error.reason) }
        guard !host.isEmpty else { throw failure("the host is empty") }
        guard rest.first == ":" else { throw failure("no port after the host") }
        guard let port = NetworkText.takePort(&rest, allowsEmpty: false) ?? nil else { throw failure("the port is not a number from 1 to 65535") }
        guard rest.first == ":" else { throw failure("no address after the port") }
        rest = rest.dropFirst()
        var addresses: [String] = []
        for piece in rest.split(separator: ",", omittingEmptySubsequences: false) {
            var address = piece.trimmingSpaces
            if address.hasPrefix("["), address.hasSuffix("]") { address = address.dropFirst().dropLast() }
            guard !address.isEmpty else { throw failure("an address is empty") }
            guard let literal = SocketAddress(ipAddress: String(address), port: port) else {
                throw failure("\"\(address)\" is not an IPv4 or IPv6 address")
            }
            addresses.append(literal.ipAddress)
        }
        self.host = host
        self.port = port
        self.addresses = addresses
    }
}

/// Connects elsewhere for a host and port (curl's `--connect-to HOST1:PORT1:HOST2:PORT2`): requests for
/// HOST1:PORT1 go to HOST2:PORT2, with the URL's host kept for TLS and `Host`.
public struct ConnectToRule: Sendable, Hashable {
    /// The URL host the rule applies to; nil for any (an empty HOST1).
    public let fromHost: String?
    /// The URL port the rule applies to; nil for any (an empty PORT1).
    public let fromPort: UInt16?
    /// The host to connect to instead; nil keeps the URL's host (an empty HOST2).
    public let toHost: String?
    /// The port to connect to instead; nil keeps the URL's port (an empty PORT2).
    public let toPort: UInt16?

    static let form = "HOST1:PORT1:HOST2:PORT2 (an empty field means any host or port, or the same one)"

    /// The rule in curl's syntax, IPv6 in brackets, empty fields for nil: what ``init(parsing:)`` reads back.
    public var text: String {
        [fromHost.map(NetworkText.bracketed) ?? "", fromPort.map(String.init) ?? "",
         toHost.map(NetworkText.bracketed) ?? "", toPort.map(String.init) ?? ""].joined(separator: ":")
    }

    /// A rule from its parts; hosts are matched and connected to as given (lowercase names, bare IPv6).
    public init(fromHost: String?, fromPort: UInt16?, toHost: String?, toPort: UInt16?) {
        self.fromHost = fromHost.map(NetworkSettings.canonicalHost)
        self.fromPort = fromPort
        self.toHost = toHost.map(NetworkSettings.canonicalHost)
        self.toPort = toPort
    }

    /// Parses curl's syntax: four fields separated by `:`, IPv6 hosts in brackets, any field empty.
    public init(parsing text: String) throws(NetworkSettingError) {
        func failure(_ reason: String) -> NetworkSettingError { NetworkSettingError(text: text, form: Self.form, reason: reason) }
        // Colons outside brackets separate the fields: more than three, and a bare IPv6 address is the likely cause.
        var depth = 0
        let separators = text.filter { character in
            if character == "[" { depth += 1 } else if character == "]" { depth -= 1 }
            return character == ":" && depth == 0
        }.count
        guard separators <= 3 else { throw failure("it has more than four fields (write an IPv6 address in brackets)") }
        var rest = Substring(text)
        let fromHost: String
        do { fromHost = try NetworkText.takeHost(&rest, allowsWildcard: false) } catch { throw failure(error.reason) }
        guard rest.first == ":" else { throw failure("it has fewer than four fields") }
        guard let fromPort = NetworkText.takePort(&rest, allowsEmpty: true) else {
            throw failure("PORT1 is not empty or a number from 1 to 65535")
        }
        guard rest.first == ":" else { throw failure("it has fewer than four fields") }
        rest = rest.dropFirst()
        let toHost: String
        do { toHost = try NetworkText.takeHost(&rest, allowsWildcard: false) } catch { throw failure(error.reason) }
        guard rest.first == ":" else { throw failure("it has fewer than four fields") }
        guard let toPort = NetworkText.takePort(&rest, allowsEmpty: true) else {
            throw failure("PORT2 is not empty or a number from 1 to 65535")
        }
        guard rest.isEmpty else { throw failure("it has more than four fields (write an IPv6 address in brackets)") }
        self.init(fromHost: fromHost.isEmpty ? nil : fromHost, fromPort: fromPort, toHost: toHost.isEmpty ? nil : toHost, toPort: toPort)
    }

    /// Whether the rule applies to a URL's `host`:`port`.
    public func matches(host: String, port: UInt16) -> Bool {
        (fromHost == nil || fromHost == NetworkSettings.canonicalHost(host)) && (fromPort == nil || fromPort == port)
    }
}

/// What a socket is bound to before it connects (curl's `--interface`).
public enum NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    /// A network device by name (`SO_BINDTODEVICE`), e.g. `eth0` or `lo`.
    case device(String)
    /// A local address (`bind` to it, port 0): only addresses of its family are connected to.
    case address(String)

    /// An IP literal is an address, `if!NAME` (curl's spelling) or any other name a device.
    public init(parsing text: String) throws(NetworkSettingError) {
        func failure(_ reason: String) -> NetworkSettingError {
            NetworkSettingError(text: text, form: "a network interface name or a local IP address", reason: reason)
        }
        var name = Substring(text)
        if name.hasPrefix("host!") { throw failure("binding to a host name's address is not supported; give the address") }
        if name.hasPrefix("if!") { name = name.dropFirst(3) }
        var literal = name
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = literal.dropFirst().dropLast() }
        if let address = SocketAddress(ipAddress: String(literal), port: 0) {
            self = .address(address.ipAddress)
            return
        }
        guard !name.isEmpty else { throw failure("it is empty") }
        // IFNAMSIZ is 16 with the terminating NUL; the kernel refuses '/', ':' and white space in names.
        guard name.utf8.count < Int(IFNAMSIZ) else { throw failure("an interface name has at most \(Int(IFNAMSIZ) - 1) characters") }
        guard !name.contains(where: { $0 == "/" || $0 == ":" || $0 == " " || $0 == "\t" }) else {
            throw failure("an interface name has no '/', ':' or spaces")
        }
        self = .device(String(name))
    }

    /// The device's name or the address: what ``init(parsing:)`` reads back as this interface.
    public var text: String {
        switch self {
        case .device(let name): return name
        case .address(let address): return address
        }
    }

    /// `interface lo` or `local address 127.0.0.1`.
    public var description: String {
        switch self {
        case .device(let name): return "interface \(name)"
        case .address(let address): return "local address \(address)"
        }
    }

    /// The family a socket bound here must have, for an address; nil for a device (either family).
    var family: SocketAddress.Family? {
        guard case .address(let text) = self else { return nil }
        return SocketAddress(ipAddress: text, port: 0)?.family
    }

    /// Whether a device of this name exists on the machine (`if_nametoindex`); true for an address.
    public var exists: Bool {
        guard case .device(let name) = self else { return true }
        return if_nametoindex(name) != 0
    }
}

/// The pieces of curl's colon-separated network options.
enum NetworkText {
    struct Failure: Error { let reason: String }

    /// `host`, with brackets when it is an IPv6 address.
    static func bracketed(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// Takes a host up to the next `:` (an IPv6 literal in brackets, whose colons do not count), leaving
    /// `text` at that `:` or at its end; validated as a URL host (or `*`), canonical; empty when it is empty.
    static func takeHost(_ text: inout Substring, allowsWildcard: Bool) throws(Failure) -> String {
        let raw: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw Failure(reason: "an IPv6 address has no closing ']'") }
            raw = text[...close]
            text = text[text.index(after: close)...]
        } else {
            let end = text.firstIndex(of: ":") ?? text.endIndex
            raw = text[..<end]
            text = text[end...]
        }
        if raw.isEmpty { return "" }
        if allowsWildcard && raw == "*" { return "*" }
        guard !raw.contains(where: { "/@?#%\\ ".contains($0) }) else { throw Failure(reason: "\"\(raw)\" is not a host name or IP address") }
        // A bare IPv6 address cannot be told from the fields around it: curl wants brackets too.
        guard let url = try? HTTPURL("http://\(raw)/") else { throw Failure(reason: "\"\(raw)\" is not a host name or IP address") }
        return url.host.name
    }

    /// Takes `:PORT` from the start of `text`: nil when it is not there or not a port; `.some(nil)` for an
    /// empty port when `allowsEmpty`.
    static func takePort(_ text: inout Substring, allowsEmpty: Bool) -> UInt16?? {
        guard text.first == ":" else { return nil }
        text = text.dropFirst()
        let end = text.firstIndex(of: ":") ?? text.endIndex
        let digits = text[..<end]
        text = text[end...]
        if digits.isEmpty { return allowsEmpty ? .some(nil) : nil }
        guard digits.count <= 5, digits.allSatisfy(\.isASCIIDigitCharacter), let value = Int(digits), (1...65535).contains(value) else {
            return nil
        }
        return .some(UInt16(value))
    }
}

private extension Character {
    var isASCIIDigitCharacter: Bool { ("0"..."9").contains(self) }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
