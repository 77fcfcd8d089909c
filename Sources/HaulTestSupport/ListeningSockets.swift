import Glibc

/// Whose listening socket answers on a loopback port, read from `/proc`.
///
/// A port that accepts connections is not yet proof that the server we started listens there: ports are chosen
/// by binding port 0 and releasing it, so a test running in parallel can be handed the same port a moment later
/// and start its own server on it. Ours then fails to bind that one port — nginx retries for a few seconds,
/// listening on its other ports meanwhile — and every port accepts connections, one of them on the other
/// test's server. A server counts as started only once its own processes hold a listening socket on each port.
enum ListeningSockets {
    /// Whether processes of process group `group` hold a listening TCP socket on each of `ports`, in the address
    /// family of each of `hosts` (`127.x.x.x`, `::1`). True when `/proc/net` cannot be read at all (nothing to
    /// tell, so the connection check alone decides, as it did before).
    static func processGroup(_ group: pid_t, listensOn ports: [UInt16], hosts: [String]) -> Bool {
        let families = Set(hosts.map { $0.contains(":") ? "tcp6" : "tcp" })
        var listening: [String: [UInt16: Set<UInt64>]] = [:]
        for family in families {
            guard let table = listeningInodes(table: "/proc/net/" + family) else { return true }
            listening[family] = table
        }
        let owned = socketInodes(ofProcessGroup: group)
        return families.allSatisfy { family in
            ports.allSatisfy { port in !(listening[family]?[port] ?? []).isDisjoint(with: owned) }
        }
    }

    /// The inodes of the sockets in state LISTEN in a `/proc/net/tcp` or `tcp6` table, by local port; nil when
    /// the table cannot be read.
    ///
    /// A line: `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …`, the local address
    /// `HEXADDRESS:HEXPORT`, the state `0A` for LISTEN.
    static func listeningInodes(table path: String) -> [UInt16: Set<UInt64>]? {
        guard let text = readWhole(path) else { return nil }
        var result: [UInt16: Set<UInt64>] = [:]
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[3] == "0A", let colon = fields[1].lastIndex(of: ":"),
                  let port = UInt16(fields[1][fields[1].index(after: colon)...], radix: 16),
                  let inode = UInt64(fields[9]) else { continue }
            result[port, default: []].insert(inode)
        }
        return result
    }

    /// The inodes of the sockets open in the processes of process group `group` (those whose descriptors this
    /// process may read: its own user's, or all of them as root).
    static func socketInodes(ofProcessGroup group: pid_t) -> Set<UInt64> {
        var inodes: Set<UInt64> = []
        for entry in names(in: "/proc") {
            guard let pid = Int32(entry), processGroup(of: pid) == group else { continue }
            let directory = "/proc/\(pid)/fd"
            for descriptor in names(in: directory) {
                guard let target = readLink(directory + "/" + descriptor), target.hasPrefix("socket:["), target.hasSuffix("]"),
                      let inode = UInt64(target.dropFirst("socket:[".count).dropLast()) else { continue }
                inodes.insert(inode)
            }
        }
        return inodes
    }

    /// The process group of `pid` (the fifth field of `/proc/PID/stat`, the third after the name in
    /// parentheses, which may itself hold spaces and parentheses); nil when the process is gone.
    static func processGroup(of pid: pid_t) -> pid_t? {
        guard let text = readWhole("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 2 else { return nil }
        return pid_t(fields[2])
    }

    // Plain system calls, not FileManager: /proc changes under the reader all the time (processes end, sockets
    // come and go), and a listing or read must give what it can rather than fail as a whole.

    /// The names in a directory, without `.` and `..`; what could be read when it changes meanwhile.
    private static func names(in path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A whole file read to its end (procfs files report no size); nil when it cannot be opened.
    private static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
