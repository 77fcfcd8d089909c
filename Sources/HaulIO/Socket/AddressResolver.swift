import Glibc

/// Why a host name could not be resolved.
public struct ResolutionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The host that was looked up.
    public let host: String
    /// The `getaddrinfo` error text (or the errno text for `EAI_SYSTEM`).
    public let reason: String

    /// `resolve HOST: REASON`.
    public var description: String { "resolve \(host): \(reason)" }
}

/// Turns host names into socket addresses without blocking an event loop or a Swift cooperative thread.
///
/// `getaddrinfo` blocks for as long as DNS takes, so each lookup runs on its own short-lived detached OS thread.
/// A downloader resolves a handful of hosts, so a thread per lookup is cheaper than keeping a pool alive.
/// IP literals are answered immediately without a thread.
public enum AddressResolver {
    /// Resolves `host` for TCP on `port`, both address families, in `getaddrinfo`'s (RFC 6724) order.
    ///
    /// `AI_ADDRCONFIG` is deliberately not used: glibc ignores loopback when deciding whether IPv6 is "configured",
    /// which would hide `::1` for `localhost`; unusable families simply fail fast during Happy Eyeballs.
    public static func resolve(host: String, port: UInt16) async throws(ResolutionError) -> [SocketAddress] {
        let result = await withCheckedContinuation { continuation in
            resolve(host: host, port: port) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Callback form of ``resolve(host:port:)``; `completion` runs on the resolver thread (or inline for literals).
    public static func resolve(
        host: String,
        port: UInt16,
        completion: @escaping @Sendable (Result<[SocketAddress], ResolutionError>) -> Void
    ) {
        if let literal = SocketAddress(ipAddress: host, port: port) {
            completion(.success([literal]))
            return
        }
        do {
            try PosixThread.spawnDetached(name: "haul-resolve") { completion(lookUp(host: host, port: port)) }
        } catch {
            completion(.failure(ResolutionError(host: host, reason: "cannot start resolver thread: \(error)")))
        }
    }

    /// The blocking lookup itself.
    static func lookUp(host: String, port: UInt16) -> Result<[SocketAddress], ResolutionError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &list)
        guard code == 0 else {
            let reason = code == EAI_SYSTEM ? SystemError.describe(errno: Glibc.errno) : String(cString: gai_strerror(code))
            return .failure(ResolutionError(host: host, reason: reason))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let pointer = current.pointee.ai_addr, let address = SocketAddress(pointer), !addresses.contains(address) {
                addresses.append(address)
            }
            entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { return .failure(ResolutionError(host: host, reason: "no IPv4 or IPv6 address")) }
        return .success(addresses)
    }
}
