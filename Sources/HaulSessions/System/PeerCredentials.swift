import Glibc
import Haul
import HaulIO
import SystemPackage

/// The credentials of the process at the other end of a Unix socket, as the kernel recorded them when it
/// connected (`SO_PEERCRED`): they cannot be forged by the peer.
public struct PeerCredentials: Sendable, Hashable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32

    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// The peer of the connected Unix socket `socket`.
    public static func of(_ socket: FileDescriptor) throws(SystemError) -> PeerCredentials {
        let (pid, uid, gid) = try socket.peerCredentials()
        return PeerCredentials(pid: pid, uid: uid, gid: gid)
    }
}

/// Who may talk to a session's daemon: processes of the user who owns it, no one else — not even root, which
/// has its own sessions. (The socket is mode 0600 in a 0700 directory as well; this check holds even if
/// those permissions were loosened.)
public enum PeerPolicy {
    /// Whether a peer with `peer` credentials may use a daemon running as `owner`; nil when it may, else why
    /// not, in words for the refused client.
    public static func refusal(peer: PeerCredentials, owner: uid_t) -> String? {
        guard peer.uid == owner else {
            return "this session belongs to uid \(owner); process \(peer.pid) runs as uid \(peer.uid)"
        }
        return nil
    }
}
