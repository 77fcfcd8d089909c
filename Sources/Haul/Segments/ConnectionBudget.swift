/// The client-wide cap on open download connections, shared by every download of a ``HaulClient``.
///
/// A download takes a slot for each connection it opens and gives them back when it ends. One that finds no
/// slot waits in line; slots given back wake waiters in order, once each, and a waiter that still wants more
/// lines up again. Loop-confined.
final class ConnectionBudget: @unchecked Sendable {
    // @unchecked Sendable: touched on the client's event loop only.

    let limit: Int
    private(set) var inUse = 0
    /// Most slots ever taken at once (for tests and statistics).
    private(set) var peakInUse = 0
    private var waiters: [(owner: ObjectIdentifier, wake: () -> Void)] = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes up to `count` slots and returns how many it got (possibly none).
    func take(upTo count: Int) -> Int {
        let granted = max(0, min(count, limit - inUse))
        inUse += granted
        peakInUse = max(peakInUse, inUse)
        return granted
    }

    /// Returns `count` slots and wakes as many waiters as there are free slots.
    func giveBack(_ count: Int) {
        precondition(count <= inUse, "gave back more connection slots than were taken")
        inUse -= count
        var free = limit - inUse
        while free > 0, !waiters.isEmpty {
            let waiter = waiters.removeFirst()
            waiter.wake()
            free -= 1
        }
    }

    /// Calls `wake` (once) when a slot may be free; the owner then tries ``take(upTo:)`` again.
    func waitForSlot(owner: AnyObject, wake: @escaping () -> Void) {
        let id = ObjectIdentifier(owner)
        guard !waiters.contains(where: { $0.owner == id }) else { return }
        waiters.append((id, wake))
    }

    /// Leaves the line (the download ended, or no longer needs more connections).
    func stopWaiting(owner: AnyObject) {
        let id = ObjectIdentifier(owner)
        waiters.removeAll { $0.owner == id }
    }
}
