import Glibc
import Haul
import HaulIO
import SystemPackage

/// Where a session lives: `STATE/sessions/ID/`, with `STATE` from `HAUL_STATE_DIR`, else
/// `$XDG_STATE_HOME/haul`, else `~/.local/state/haul`.
public struct SessionPaths: Sendable, Hashable {
    /// The session identifier (`default` when none is named).
    public let identifier: String
    /// The state directory that holds `sessions/`.
    public let stateDirectory: String

    public static let defaultIdentifier = "default"

    /// The paths of session `identifier` under `stateDirectory` (or the default state directory).
    public init(identifier: String = SessionPaths.defaultIdentifier, stateDirectory: String? = nil) throws(SessionError) {
        guard Self.isValidName(identifier) else { throw .invalidIdentifier(identifier) }
        guard let state = stateDirectory ?? Self.defaultStateDirectory() else { throw .noStateDirectory }
        self.identifier = identifier
        var trimmed = state
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.stateDirectory = trimmed
    }

    /// `HAUL_STATE_DIR`, else `$XDG_STATE_HOME/haul`, else `$HOME/.local/state/haul`; nil when none is set.
    /// Relative values are taken from the current directory, made absolute.
    public static func defaultStateDirectory() -> String? {
        func variable(_ name: String) -> String? {
            guard let value = getenv(name).map({ String(cString: $0) }), !value.isEmpty else { return nil }
            return value
        }
        if let explicit = variable("HAUL_STATE_DIR") { return absolute(explicit) }
        // The XDG Base Directory spec says relative values are invalid and to be ignored.
        if let xdg = variable("XDG_STATE_HOME"), xdg.hasPrefix("/") { return xdg + "/haul" }
        if let home = variable("HOME") { return home + "/.local/state/haul" }
        return nil
    }

    /// `path`, made absolute against the current directory.
    public static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if path == "." { return directory }
        let relative = path.hasPrefix("./") ? String(path.dropFirst(2)) : path
        return directory == "/" ? "/" + relative : directory + "/" + relative
    }

    /// Session identifiers and consumer names: 1–64 of `A-Z a-z 0-9 . _ -`, not starting with `.`.
    public static func isValidName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 64, !name.hasPrefix(".") else { return false }
        return name.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// The session directory.
    public var directory: String { stateDirectory + "/sessions/" + identifier }
    /// The log: the queue and the events (`docs/sessions.md`).
    public var log: String { directory + "/session.haul" }
    /// The daemon's Unix socket.
    public var socket: String { directory + "/daemon.sock" }
    /// The daemon's process id, one decimal line.
    public var pidFile: String { directory + "/daemon.pid" }
    /// Where a daemon started in the background writes its messages (and hooks their output).
    public var daemonLog: String { directory + "/daemon.log" }

    /// Creates the session directory (and the ones above it, mode 0700) when missing, and checks that it is
    /// a directory owned by this user that nobody else can write to.
    public func prepareDirectory() throws(SessionError) {
        do {
            try OutputFile.createDirectories(directory)
        } catch {
            throw .unusableDirectory(path: directory, reason: "cannot create it: \(error)")
        }
        // The directory of all sessions made private too, as a courtesy: what protects a session is its own
        // directory's check below, so a failure here (someone else's parent directory) changes nothing.
        _ = try? blockingSyscall("chmod") { chmod(stateDirectory + "/sessions", 0o700) }
        try checkDirectory()
    }

    /// Checks the session directory: a real directory (not a link), owned by this user, not writable by
    /// others; tightened to 0700 when it is looser.
    public func checkDirectory() throws(SessionError) {
        let info: Stat
        do { info = try FilePath(directory).stat(followTargetSymlink: false) } catch {
            throw .unusableDirectory(path: directory, reason: SystemError(call: "lstat", errno: error.rawValue).description)
        }
        guard info.type == .directory else { throw .unusableDirectory(path: directory, reason: "not a directory") }
        guard info.userID.rawValue == geteuid() else {
            throw .unusableDirectory(path: directory, reason: "owned by uid \(info.userID.rawValue), not by this user (uid \(geteuid()))")
        }
        if info.permissions.rawValue & 0o077 != 0 {
            do { _ = try blockingSyscall("chmod") { chmod(directory, 0o700) } } catch {
                throw .unusableDirectory(path: directory, reason: "others may use it, and it cannot be made private: \(error)")
            }
        }
    }

    /// The pid in `daemon.pid`, if the file holds one.
    public func recordedDaemonPID() -> Int32? {
        guard let text = SmallFile.read(pidFile) else { return nil }
        return Int32(text.trimmingWhitespace())
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}

/// Reads small files whole, without Foundation.
enum SmallFile {
    /// The text of the file at `path` (at most `limit` bytes of it), or nil when it cannot be read.
    static func read(_ path: String, limit: Int = 1 << 20) -> String? {
        (try? readBytes(path, limit: limit)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The bytes of the file at `path`, up to the end or a little past `limit`.
    static func readBytes(_ path: String, limit: Int = Int.max) throws(SystemError) -> [UInt8] {
        let file = try FileDescriptor.openingSessionFile(path, .readOnly)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while bytes.count < limit {
            let count = try systemCall("read") { try buffer.withUnsafeMutableBytes { try file.descriptor.read(into: $0) } }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }
}
