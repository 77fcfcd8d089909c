/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Sendable, Hashable {
    let rawValue: UInt64
}

/// A min-heap of deadlines with lazy cancellation. Confined to the event loop thread, which is why it is neither
/// locked nor `Sendable`.
///
/// Cancelling only drops the callback; the heap entry is discarded when it reaches the top. That keeps `cancel`
/// O(1), which matters because idle and connect timers are cancelled far more often than they fire.
struct TimerQueue {
    private struct Entry {
        let deadline: MonotonicInstant
        let id: UInt64

        /// Equal deadlines fire in scheduling order.
        func firesBefore(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private var heap: [Entry] = []
    private var callbacks: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// The number of timers that are scheduled and not cancelled.
    var count: Int { callbacks.count }
    /// Entries held, cancelled ones included (for tests of the compaction).
    var heldEntries: Int { heap.count }

    /// Schedules `callback` for `deadline` and returns the handle that cancels it.
    mutating func schedule(at deadline: MonotonicInstant, _ callback: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID += 1
        callbacks[id] = callback
        heap.append(Entry(deadline: deadline, id: id))
        siftUp(from: heap.count - 1)
        return TimerID(rawValue: id)
    }

    /// Cancels a timer; returns `false` if it already fired or was cancelled.
    @discardableResult
    mutating func cancel(_ timer: TimerID) -> Bool {
        guard callbacks.removeValue(forKey: timer.rawValue) != nil else { return false }
        // Cancelled entries far from the top (a 30 s idle timer per request) would otherwise pile up, one
        // per request, until their deadlines pass: thousands of small downloads grew the heap by as many.
        // Rebuilding once they outnumber live timers 4 to 1 keeps it bounded, at O(1) amortized per cancel.
        if heap.count > 64, heap.count > 4 * callbacks.count { compact() }
        return true
    }

    /// Drops every cancelled entry and restores the heap order.
    private mutating func compact() {
        heap.removeAll { callbacks[$0.id] == nil }
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    /// The earliest deadline that will still fire, dropping cancelled entries on the way.
    mutating func nextDeadline() -> MonotonicInstant? {
        while let top = heap.first {
            if callbacks[top.id] != nil { return top.deadline }
            popTop()
        }
        return nil
    }

    /// Removes and returns the callbacks due at `now`, earliest first. The caller runs them after this returns,
    /// so a callback may schedule or cancel timers freely.
    mutating func takeExpired(now: MonotonicInstant) -> [() -> Void] {
        var due: [() -> Void] = []
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let callback = callbacks.removeValue(forKey: top.id) { due.append(callback) }
        }
        return due
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(from: 0)
    }

    private mutating func siftUp(from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].firesBefore(heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count && heap[left].firesBefore(heap[first]) { first = left }
            if right < heap.count && heap[right].firesBefore(heap[first]) { first = right }
            if first == parent { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}
