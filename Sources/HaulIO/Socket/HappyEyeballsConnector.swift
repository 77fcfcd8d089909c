import Glibc

/// The address ordering and timing rules of Happy Eyeballs v2 (RFC 8305).
public enum HappyEyeballs {
    /// RFC 8305 §5's recommended "Connection Attempt Delay".
    public static let defaultAttemptDelay: Duration = .milliseconds(250)

    /// Orders addresses for connection attempts: IPv6 first, then alternating families (RFC 8305 §4), keeping the
    /// resolver's order within each family since `getaddrinfo` already sorted them by RFC 6724.
    public static func connectionOrder(_ addresses: [SocketAddress]) -> [SocketAddress] {
        let ipv6 = addresses.filter { $0.family == .ipv6 }
        let ipv4 = addresses.filter { $0.family == .ipv4 }
        var ordered: [SocketAddress] = []
        ordered.reserveCapacity(addresses.count)
        for index in 0..<max(ipv6.count, ipv4.count) {
            if index < ipv6.count { ordered.append(ipv6[index]) }
            if index < ipv4.count { ordered.append(ipv4[index]) }
        }
        return ordered
    }
}

/// Races TCP connection attempts to a host's addresses on an event loop (RFC 8305).
///
/// Attempts start `attemptDelay` apart, or at once when the previous one fails; the first to connect wins and the
/// rest are closed. One overall timer bounds resolution plus all attempts.
final class HappyEyeballsConnector: @unchecked Sendable {
    // @unchecked Sendable: all state is loop-confined. The only cross-thread hop is the resolver's completion,
    // which goes through `loop.execute` before touching anything.

    private struct Attempt {
        let socket: TCPSocket
        let registration: FileDescriptorRegistration
    }

    private let loop: EventLoop
    private let host: String
    private let port: UInt16
    private let options: SocketOptions
    private let network: NetworkSettings
    private let attemptDelay: Duration
    private let timeout: Duration
    private var completion: ((Result<TCPSocket, ConnectionError>) -> Void)?

    private var pendingAddresses: [SocketAddress] = []
    private var attempts: [Attempt] = []
    private var lastError: SystemError?
    private var timeoutTimer: TimerID?
    private var nextAttemptTimer: TimerID?

    /// `completion` runs once, on the loop thread, with the connected socket (deregistered, ready to re-register).
    init(
        loop: EventLoop,
        host: String,
        port: UInt16,
        options: SocketOptions,
        network: NetworkSettings = NetworkSettings(),
        attemptDelay: Duration = HappyEyeballs.defaultAttemptDelay,
        timeout: Duration,
        completion: @escaping (Result<TCPSocket, ConnectionError>) -> Void
    ) {
        self.loop = loop
        self.host = host
        self.port = port
        self.options = options
        self.network = network
        self.attemptDelay = attemptDelay
        self.timeout = timeout
        self.completion = completion
    }

    /// Begins resolution and the first attempt. Loop thread only.
    func start() {
        armTimeout()
        if let literal = SocketAddress(ipAddress: host, port: port) {
            didResolve(.success([literal]))
            return
        }
        // `--resolve`: the addresses given for this host and port, instead of DNS.
        if let pinned = network.pinnedAddresses(host: host, port: port) {
            didResolve(.success(pinned))
            return
        }
        AddressResolver.resolve(host: host, port: port) { [self] result in
            loop.execute { self.didResolve(result) }
        }
    }

    /// Races `addresses` (in the given order) without resolving `host`; for tests of the attempt timing.
    func start(addresses: [SocketAddress]) {
        armTimeout()
        pendingAddresses = addresses
        startNextAttempt()
    }

    private func armTimeout() {
        timeoutTimer = loop.scheduleTimer(after: timeout) { [self] in
            timeoutTimer = nil
            finish(.failure(ConnectionError(
                kind: .connectTimedOut, host: host, port: port, systemError: lastError, detail: timeout.compactDescription)))
        }
    }

    /// Abandons the attempt; `completion` is not called. Loop thread only.
    func cancel() {
        completion = nil
        tearDown(keeping: nil)
    }

    private func didResolve(_ result: Result<[SocketAddress], ResolutionError>) {
        guard completion != nil else { return }
        switch result {
        case .success(let addresses):
            let usable = usableAddresses(addresses)
            guard !usable.isEmpty else {
                finish(.failure(ConnectionError(kind: .connectFailed, host: host, port: port, detail: noUsableAddress(among: addresses))))
                return
            }
            pendingAddresses = HappyEyeballs.connectionOrder(usable)
            startNextAttempt()
        case .failure(let error):
            finish(.failure(ConnectionError(kind: .resolutionFailed, host: host, port: port, detail: error.reason)))
        }
    }

    /// The addresses of the family `-4`/`-6` allow and a local address to bind to can reach.
    private func usableAddresses(_ addresses: [SocketAddress]) -> [SocketAddress] {
        let allowed = network.usable(addresses)
        guard let localFamily = network.interface?.family else { return allowed }
        return allowed.filter { $0.family == localFamily }
    }

    /// Why none of `addresses` may be connected to, naming the setting that excludes them.
    private func noUsableAddress(among addresses: [SocketAddress]) -> String {
        let listed = addresses.map(\.ipAddress).joined(separator: ", ")
        if let family = network.addressFamily, !addresses.contains(where: { $0.family == family.socketFamily }) {
            return "no \(family.name) address (\(family.option)); it has \(listed)"
        }
        let local = network.interface?.description ?? "the local address"
        return "no address of the family of \(local); it has \(listed)"
    }

    private func startNextAttempt() {
        if let timer = nextAttemptTimer { loop.cancelTimer(timer) }
        nextAttemptTimer = nil
        while completion != nil, !pendingAddresses.isEmpty {
            let address = pendingAddresses.removeFirst()
            do {
                let socket = try TCPSocket(family: address.family, options: options)
                if let interface = network.interface {
                    do {
                        try socket.bind(to: interface)
                    } catch {
                        // Every address would fail alike: a missing device, an address that is not local.
                        socket.close()
                        finish(.failure(ConnectionError(kind: .connectFailed, host: host, port: port,
                                                        detail: Self.bindFailure(interface, error))))
                        return
                    }
                }
                if try socket.connect(to: address) {
                    finish(.success(socket))
                    return
                }
                let token = Box<FileDescriptorRegistration?>(nil)
                let registration = try loop.register(socket.fileDescriptor, interest: .writable) { [self] _ in
                    if let registration = token.value { attemptBecameWritable(registration) }
                }
                token.value = registration
                attempts.append(Attempt(socket: socket, registration: registration))
                if !pendingAddresses.isEmpty {
                    nextAttemptTimer = loop.scheduleTimer(after: attemptDelay) { [self] in
                        nextAttemptTimer = nil
                        startNextAttempt()
                    }
                }
                return
            } catch {
                // Refused synchronously, or the family is unusable here (EAFNOSUPPORT, ENETUNREACH): try the next one.
                lastError = error
            }
        }
        if attempts.isEmpty { failWithLastError() }
    }

    private func attemptBecameWritable(_ registration: FileDescriptorRegistration) {
        guard let index = attempts.firstIndex(where: { $0.registration == registration }) else { return }
        let attempt = attempts[index]
        let code: Int32
        do {
            code = try attempt.socket.takePendingError()
        } catch {
            code = error.errno
        }
        if code == 0 {
            finish(.success(attempt.socket))
            return
        }
        lastError = SystemError(call: "connect", errno: code)
        attempts.remove(at: index)
        loop.deregister(attempt.registration)
        attempt.socket.close()
        if pendingAddresses.isEmpty {
            if attempts.isEmpty { failWithLastError() }
        } else {
            startNextAttempt()
        }
    }

    /// `cannot use interface nosuch0: No such device`, with what to do for the usual errors.
    static func bindFailure(_ interface: NetworkInterface, _ error: SystemError) -> String {
        switch (interface, error.errno) {
        case (.device, ENODEV):
            return "cannot use \(interface): no such network interface (\(error.call): \(error.reason))"
        case (.address, EADDRNOTAVAIL):
            return "cannot use \(interface): no interface of this machine has that address (\(error.call): \(error.reason))"
        case (.device, EPERM):
            return "cannot use \(interface): binding to a device needs CAP_NET_RAW here; give its address instead (\(error.call): \(error.reason))"
        default:
            return "cannot use \(interface): \(error.call): \(error.reason)"
        }
    }

    private func failWithLastError() {
        finish(.failure(ConnectionError(
            kind: .connectFailed, host: host, port: port, systemError: lastError,
            detail: lastError == nil ? "no address to connect to" : "")))
    }

    private func finish(_ result: Result<TCPSocket, ConnectionError>) {
        guard let completion else { return }
        self.completion = nil
        if case .success(let winner) = result { tearDown(keeping: winner) } else { tearDown(keeping: nil) }
        completion(result)
    }

    private func tearDown(keeping winner: TCPSocket?) {
        if let timer = timeoutTimer { loop.cancelTimer(timer) }
        if let timer = nextAttemptTimer { loop.cancelTimer(timer) }
        timeoutTimer = nil
        nextAttemptTimer = nil
        pendingAddresses = []
        for attempt in attempts {
            loop.deregister(attempt.registration)
            if attempt.socket !== winner { attempt.socket.close() }
        }
        attempts = []
    }
}

/// A mutable cell, for handing a value to a closure created before the value exists.
final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}
