import Glibc
import SystemPackage

/// What the kernel says about loopback TCP sockets: the conditions tests wait for instead of sleeping ("a SYN
/// is out", "the server has read everything we sent", "the reply is in our socket").
enum KernelSockets {
    /// One line of `/proc/net/tcp` or `/proc/net/tcp6`.
    struct Entry: Equatable {
        var localPort: UInt16
        var remotePort: UInt16
        /// The kernel's TCP state number: 1 ESTABLISHED, 2 SYN_SENT, 10 LISTEN, ...
        var state: Int
        /// Bytes received and not yet read by the socket's owner.
        var receiveQueue: Int

        static let established = 1
        static let synSent = 2
    }

    /// Every TCP socket of this network namespace, IPv4 and IPv6.
    static func entries() -> [Entry] {
        ["/proc/net/tcp", "/proc/net/tcp6"].flatMap { path -> [Entry] in
            guard let text = readText(path) else { return [] }
            return text.split(separator: "\n").dropFirst().compactMap(entry)
        }
    }

    /// Bytes waiting to be read in `socket` (FIONREAD).
    static func pendingBytes(_ socket: FileDescriptor) -> Int {
        var count: Int32 = 0
        return ioctl(socket.rawValue, UInt(FIONREAD), &count) == 0 ? Int(count) : 0
    }

    // sl local_address rem_address st tx_queue:rx_queue ...
    private static func entry(_ line: Substring) -> Entry? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 4,
              let local = fields[1].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
              let remote = fields[2].split(separator: ":").last.flatMap({ UInt16($0, radix: 16) }),
              let state = Int(fields[3], radix: 16),
              let receiveQueue = fields[4].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
        else { return nil }
        return Entry(localPort: local, remotePort: remote, state: state, receiveQueue: receiveQueue)
    }

    private static func readText(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
