import CHaulSystem

/// Readiness conditions of a file descriptor, as reported by epoll and as requested when registering.
public struct IOEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The epoll event bits.
    public let rawValue: UInt32
    /// Wraps raw epoll event bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Data (or a pending connection, or end of stream) can be read.
    public static let readable = IOEvents(rawValue: haul_EPOLLIN)
    /// The send buffer has room, or a non-blocking `connect` finished.
    public static let writable = IOEvents(rawValue: haul_EPOLLOUT)
    /// The descriptor has a pending error (`SO_ERROR`); always reported, never needs requesting.
    public static let error = IOEvents(rawValue: haul_EPOLLERR)
    /// Both directions are shut down; always reported, never needs requesting.
    public static let hangup = IOEvents(rawValue: haul_EPOLLHUP)
    /// The peer shut down its writing side.
    public static let readHangup = IOEvents(rawValue: haul_EPOLLRDHUP)

    /// The set names, e.g. `[readable, hangup]`.
    public var description: String {
        let names: [(IOEvents, String)] = [
            (.readable, "readable"), (.writable, "writable"), (.error, "error"), (.hangup, "hangup"),
            (.readHangup, "readHangup"),
        ]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}
