/// Hosts reached directly even when a proxy is configured: `NO_PROXY`, `no_proxy` or `--noproxy`, read the
/// way curl reads them.
///
/// The list is separated by commas (and/or spaces). Each entry is one of:
/// - `*`: every host bypasses the proxy;
/// - a domain, matched as itself and every name under it: `example.com` (or `.example.com`, or `*.example.com`)
///   matches `example.com` and `a.example.com` but not `notexample.com`; case-insensitive, a trailing dot
///   ignored;
/// - an IPv4 or IPv6 address, optionally as a CIDR range: `127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`,
///   `[::1]`; addresses match only hosts written as addresses (the URL's host is not resolved to check);
/// - any of those with a port, `example.com:8080`, `127.0.0.1:8080`, `[::1]:8080`: then only that port
///   bypasses (an extension; curl ignores ports here).
///
/// Like curl, entries that are none of these are kept as names that simply never match; the list itself
/// never fails to parse.
public struct NoProxyList: Sendable, Hashable, CustomStringConvertible {
    /// One entry of the list.
    public enum Entry: Sendable, Hashable, CustomStringConvertible {
        /// `*`: everything bypasses the proxy.
        case everything
        /// A domain (lowercased, without leading or trailing dot) and, optionally, the one port it covers.
        case domain(String, port: UInt16?)
        /// An IPv4 network (host byte order) with its prefix length, 32 for a single address.
        case ipv4(address: UInt32, prefixLength: Int, port: UInt16?)
        /// An IPv6 network as eight 16-bit pieces with its prefix length, 128 for a single address.
        case ipv6(pieces: [UInt16], prefixLength: Int, port: UInt16?)

        public var description: String {
            switch self {
            case .everything: return "*"
            case let .domain(name, port): return name + (port.map { ":\($0)" } ?? "")
            case let .ipv4(address, prefixLength, port):
                let text = (0..<4).map { String(address >> (24 - 8 * $0) & 0xFF) }.joined(separator: ".")
                    + (prefixLength == 32 ? "" : "/\(prefixLength)")
                return text + (port.map { ":\($0)" } ?? "")
            case let .ipv6(pieces, prefixLength, port):
                let text = HTTPHost.formatIPv6(pieces) + (prefixLength == 128 ? "" : "/\(prefixLength)")
                return port.map { "[\(text)]:\($0)" } ?? text
            }
        }
    }

    /// The entries, in the order given.
    public let entries: [Entry]

    /// An empty list: nothing bypasses the proxy.
    public init() { entries = [] }

    /// Parses a comma- (or space-) separated list; never fails (see the type's documentation).
    public init(_ text: String) {
        var entries: [Entry] = []
        let tokens = Array(text.utf8).split { $0 == UInt8(ascii: ",") || FieldSyntax.isWhitespace($0) }
        for token in tokens {
            if let entry = Self.parseEntry(token), !entries.contains(entry) { entries.append(entry) }
        }
        self.entries = entries
    }

    /// An explicit list of entries.
    public init(entries: [Entry]) { self.entries = entries }

    /// Whether nothing bypasses the proxy.
    public var isEmpty: Bool { entries.isEmpty }

    /// The normalized entries, comma-separated.
    public var description: String { entries.map(\.description).joined(separator: ",") }

    /// Whether requests to `origin` go directly rather than through the proxy.
    public func bypasses(_ origin: HTTPOrigin) -> Bool { bypasses(host: origin.host, port: origin.port) }

    /// Whether requests to `host`:`port` go directly rather than through the proxy.
    public func bypasses(host: HTTPHost, port: UInt16) -> Bool {
        var name = host.name
        if host.kind == .registeredName, name.hasSuffix(".") { name.removeLast() }
        let ipv4 = host.kind == .ipv4 ? Self.ipv4Value(Array(host.name.utf8)[...]) : nil
        let ipv6 = host.kind == .ipv6 ? HTTPHost.parseIPv6(Array(host.name.utf8)[...]) : nil
        for entry in entries {
            switch entry {
            case .everything:
                return true
            case let .domain(domain, entryPort):
                guard host.kind == .registeredName, entryPort == nil || entryPort == port else { continue }
                if name == domain || name.hasSuffix("." + domain) { return true }
            case let .ipv4(network, prefixLength, entryPort):
                guard let ipv4, entryPort == nil || entryPort == port else { continue }
                let mask: UInt32 = prefixLength == 0 ? 0 : ~UInt32(0) << (32 - prefixLength)
                if ipv4 & mask == network & mask { return true }
            case let .ipv6(network, prefixLength, entryPort):
                guard let ipv6, entryPort == nil || entryPort == port else { continue }
                if Self.samePrefix(ipv6, network, bits: prefixLength) { return true }
            }
        }
        return false
    }

    // MARK: Parsing

    private static func parseEntry(_ token: ArraySlice<UInt8>) -> Entry? {
        if token.elementsEqual("*".utf8) { return .everything }
        var address = token
        var port: UInt16?
        if token.first == UInt8(ascii: "[") {
            // `[v6]`, `[v6/bits]`, `[v6]:port`.
            guard let close = token.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            address = token[(token.startIndex + 1)..<close]
            let after = token[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":"), let value = parsePort(after.dropFirst()) else { return nil }
                port = value
            }
            return parseIPv6Entry(address, port: port)
        }
        let colons = token.filter { $0 == UInt8(ascii: ":") }.count
        if colons == 1, let colon = token.firstIndex(of: UInt8(ascii: ":")) {
            guard let value = parsePort(token[(colon + 1)...]) else { return nil }
            port = value
            address = token[..<colon]
        } else if colons > 1 {
            return parseIPv6Entry(token, port: nil)
        }
        if let entry = parseIPv4Entry(address, port: port) { return entry }
        // A domain: `*.` and dots in front and behind are dropped (the entry never keeps one).
        var domain = address
        if domain.starts(with: "*.".utf8) { domain = domain.dropFirst(2) }
        while domain.first == UInt8(ascii: ".") { domain = domain.dropFirst() }
        while domain.last == UInt8(ascii: ".") { domain = domain.dropLast() }
        guard !domain.isEmpty else { return nil }
        // A name no host can have (`[f`, `a;b`) matches nothing: dropped, like any other malformed entry.
        guard domain.allSatisfy({ $0 >= 0x80 || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
                                  || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) }) else { return nil }
        // What is left may be an address after all (`.10.0.0.1`): an entry reads back as what it is.
        if domain.count != address.count, let entry = parseIPv4Entry(domain, port: port) { return entry }
        return .domain(String(decoding: domain.map(asciiLowercase), as: UTF8.self), port: port)
    }

    private static func splitPrefix(_ text: ArraySlice<UInt8>, maximum: Int) -> (ArraySlice<UInt8>, Int)? {
        guard let slash = text.firstIndex(of: UInt8(ascii: "/")) else { return (text, maximum) }
        let digits = text[(slash + 1)...]
        guard (1...3).contains(digits.count), digits.allSatisfy(FieldSyntax.isDigit) else { return nil }
        let bits = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard bits <= maximum else { return nil }
        return (text[..<slash], bits)
    }

    private static func parseIPv4Entry(_ text: ArraySlice<UInt8>, port: UInt16?) -> Entry? {
        guard let (address, bits) = splitPrefix(text, maximum: 32), let value = ipv4Value(address) else { return nil }
        return .ipv4(address: value, prefixLength: bits, port: port)
    }

    private static func parseIPv6Entry(_ text: ArraySlice<UInt8>, port: UInt16?) -> Entry? {
        guard let (address, bits) = splitPrefix(text, maximum: 128), let pieces = HTTPHost.parseIPv6(address) else {
            return nil
        }
        return .ipv6(pieces: pieces, prefixLength: bits, port: port)
    }

    private static func ipv4Value(_ text: ArraySlice<UInt8>) -> UInt32? {
        guard HTTPHost.parseIPv4(text) != nil else { return nil }
        var value: UInt32 = 0
        for octet in text.split(separator: UInt8(ascii: ".")) {
            value = value << 8 | UInt32(octet.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) })
        }
        return value
    }

    private static func parsePort(_ digits: ArraySlice<UInt8>) -> UInt16? {
        guard (1...5).contains(digits.count), digits.allSatisfy(FieldSyntax.isDigit) else { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return (1...65_535).contains(value) ? UInt16(value) : nil
    }

    private static func samePrefix(_ a: [UInt16], _ b: [UInt16], bits: Int) -> Bool {
        var remaining = bits
        for index in 0..<8 where remaining > 0 {
            let take = min(16, remaining)
            let mask: UInt16 = take == 16 ? 0xFFFF : ~UInt16(0) << (16 - take)
            if a[index] & mask != b[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}
