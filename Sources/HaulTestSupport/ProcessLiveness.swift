import Foundation
import Glibc

/// Whether a process the tests started (a session daemon, typically) is still there, and ending it for good.
public enum ProcessLiveness {
    /// Alive and not a zombie: a killed daemon's parent is init, which may be slow to reap it, and a zombie
    /// holds nothing (no lock, no socket) any more.
    public static func isAlive(_ pid: Int32) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return false }
        let state = text[text.index(close, offsetBy: 2)...].first
        return state != "Z" && state != "X"
    }

    /// SIGKILL to `pid` when it is alive, then polls until it is gone, for up to `timeout` seconds; returns
    /// whether it is gone.
    @discardableResult
    public static func kill(_ pid: Int32, timeout: Double = 10) -> Bool {
        guard isAlive(pid) else { return true }
        Glibc.kill(pid, SIGKILL)
        return poll(every: .milliseconds(10), within: timeout) { !isAlive(pid) }
    }
}
