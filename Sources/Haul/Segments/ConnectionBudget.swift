import HaulIO
import Synchronization

/// The client-wide cap on open download connections, shared by every download of a ``HaulClient``, on
/// whichever of the client's event loops each runs.
///
/// A download takes a slot for each connection it opens and gives them back when it ends. One that finds no
/// slot waits in line; slots given back wake waiters in order, once each, and a waiter that still wants more
/// lines up again. Thread-safe: the count and the line are behind a lock, so the cap holds across loops. A
/// waiter is woken on its own loop — at once when the slots are given back on that loop (as with one loop),
/// else through `loop.execute` — never while the lock is held. A woken waiter takes its slot when its loop
/// runs it; a download that starts on another loop meanwhile may take the slot first, and the waiter then
/// lines up again (the slot is held, so giving it back wakes the line again: nothing is lost).
final class ConnectionBudget: Sendable {
    private struct Waiter {
        var owner: ObjectIdentifier
        var loop: EventLoop
        var wake: @Sendable () -> Void
    }

    private struct State {
        var inUse = 0
        var peakInUse = 0
        var waiters: [Waiter] = []
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Slots taken now.
    var inUse: Int { state.withLock { $0.inUse } }
    /// Most slots ever taken at once (for tests and statistics).
    var peakInUse: Int { state.withLock { $0.peakInUse } }
    /// How many owners wait in line (for tests).
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Takes up to `count` slots and returns how many it got (possibly none).
    func take(upTo count: Int) -> Int {
        state.withLock { state in
            let granted = max(0, min(count, limit - state.inUse))
            state.inUse += granted
            state.peakInUse = max(state.peakInUse, state.inUse)
            return granted
        }
    }

    /// Returns `count` slots and wakes as many waiters as there are free slots, each on its own loop.
    func giveBack(_ count: Int) {
        let woken = state.withLock { state -> [Waiter] in
            precondition(count <= state.inUse, "gave back more connection slots than were taken")
            state.inUse -= count
            let free = min(limit - state.inUse, state.waiters.count)
            guard free > 0 else { return [] }
            defer { state.waiters.removeFirst(free) }
            return Array(state.waiters[..<free])
        }
        for waiter in woken {
            if waiter.loop.inEventLoop { waiter.wake() } else { waiter.loop.execute(waiter.wake) }
        }
    }

    /// Calls `wake` (once, on `loop`) when a slot may be free; the owner then tries ``take(upTo:)`` again.
    /// An owner already in line keeps its place (and its first `wake`).
    ///
    /// A slot free by now (given back on another loop between the owner's ``take(upTo:)`` and this call) wakes
    /// the owner at once — after its loop's current task, never inside this call — instead of lining it up
    /// for a give-back that may never come.
    func waitForSlot(owner: AnyObject, on loop: EventLoop, wake: @escaping @Sendable () -> Void) {
        let id = ObjectIdentifier(owner)
        let freeNow = state.withLock { state -> Bool in
            guard !state.waiters.contains(where: { $0.owner == id }) else { return false }
            if state.inUse < limit { return true }
            state.waiters.append(Waiter(owner: id, loop: loop, wake: wake))
            return false
        }
        if freeNow { loop.execute(wake) }
    }

    /// Leaves the line (the download ended, or no longer needs more connections).
    func stopWaiting(owner: AnyObject) {
        let id = ObjectIdentifier(owner)
        state.withLock { $0.waiters.removeAll { $0.owner == id } }
    }
}
