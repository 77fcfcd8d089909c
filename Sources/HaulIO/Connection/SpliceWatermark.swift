/// How many bytes a splicing connection's socket should hold before epoll wakes the loop for it
/// (`SO_RCVLOWAT`). Pure.
///
/// Left at the kernel's 1, a fast body wakes the loop for whatever has arrived since the last splice (about
/// half a pipe on a quiet loopback), and every wake-up costs an `epoll_wait`, a `splice` in, a `splice` out and
/// a scheduler round trip. Raised, each wake-up moves most of a pipe. It is raised only while the stream proves
/// fast (a wake-up found at least half the level waiting) and the body still has at least that many bytes to
/// splice, so the level is never above bytes the response still owes. Whatever else happens (the server slows
/// down or stops short, the reader changes, the next read is not a splice) the connection sets it back to 1:
/// at once, or after ``fallbackDelay`` without progress (`Connection`'s watermark timer), so no byte waits in
/// the socket longer than that.
struct SpliceWatermark: Equatable {
    /// The kernel's default: any byte wakes the reader.
    static let none = 1
    /// How long a raised watermark may go without progress before it is dropped and the socket read as it is.
    /// At the level of a 256 KiB pipe (192 KiB) this is a stream of 10 MB/s: anything slower is not held back
    /// by more than this per wake-up, and a fast stream never meets it.
    static let fallbackDelay: Duration = .milliseconds(20)

    /// The raised level: three quarters of the pipe, so that a wake-up finds about what one splice can take
    /// (a pipe's slots hold one page fragment each, so a full pipe rarely holds its whole capacity).
    let raised: Int

    init(pipeCapacity: Int) {
        raised = max(Self.none, pipeCapacity / 4 * 3)
    }

    /// The level for the next wait, after a wake-up that spliced `moved` bytes in all, when the next read
    /// would splice at most `nextSpliceLimit` bytes (0: the next read is not a splice).
    func level(afterMoving moved: Int, nextSpliceLimit: Int64) -> Int {
        guard raised > Self.none, nextSpliceLimit >= Int64(raised) else { return Self.none }
        // A stream that delivered at least half the level between two looks is fast enough to wait for
        // all of it; one that trickles (or the fallback's look, which finds little) reads at once.
        return moved >= raised / 2 ? raised : Self.none
    }
}
