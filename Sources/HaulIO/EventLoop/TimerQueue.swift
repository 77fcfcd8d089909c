/// Identifies a scheduled timer so it can be cancelled.
public struct TimerID: Sendable, Hashable {
    /// The timer's serial number, never reused.
    let rawValue: UInt64
    /// Where the queue keeps its callback while it is scheduled.
    let slot: Int32
}

/// A min-heap of deadlines with lazy cancellation. Confined to the event loop thread, which is why it is neither
/// locked nor `Sendable`.
///
/// Cancelling only drops the callback; the heap entry is discarded when it reaches the top. That keeps `cancel`
/// O(1), which matters because idle and connect timers are cancelled far more often than they fire.
///
/// Callbacks live in slots, found from a timer's ID without hashing: requests schedule and cancel timers (the
/// head deadline and the connection's idle watchdog, re-armed lazily; connect and retry delays), and keeping
/// them in a dictionary cost more than the heap. A slot is used again once its timer fired or was cancelled;
/// it records which timer holds it, so a stale heap entry or ID never reaches the slot's next timer.
struct TimerQueue {
    private struct Entry {
        let deadline: MonotonicInstant
        let id: UInt64
        let slot: Int32

        /// Equal deadlines fire in scheduling order.
        func firesBefore(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private struct Slot {
        /// The timer holding the slot; 0 when it is free.
        var id: UInt64 = 0
        var callback: (() -> Void)?
    }

    private var heap: [Entry] = []
    private var slots: [Slot] = []
    private var freeSlots: [Int32] = []
    private var nextID: UInt64 = 1

    /// The number of timers that are scheduled and not cancelled.
    private(set) var count = 0
    /// Entries held, cancelled ones included (for tests of the compaction).
    var heldEntries: Int { heap.count }

    /// Schedules `callback` for `deadline` and returns the handle that cancels it.
    mutating func schedule(at deadline: MonotonicInstant, _ callback: @escaping () -> Void) -> TimerID {
        let id = nextID
        nextID += 1
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            slots[Int(slot)] = Slot(id: id, callback: callback)
        } else {
            slot = Int32(slots.count)
            slots.append(Slot(id: id, callback: callback))
        }
        count += 1
        heap.append(Entry(deadline: deadline, id: id, slot: slot))
        siftUp(from: heap.count - 1)
        return TimerID(rawValue: id, slot: slot)
    }

    /// Cancels a timer; returns `false` if it already fired or was cancelled.
    @discardableResult
    mutating func cancel(_ timer: TimerID) -> Bool {
        guard take(slot: timer.slot, id: timer.rawValue) != nil else { return false }
        // Cancelled entries far from the top (a 30 s idle timer per request) would otherwise pile up, one
        // per request, until their deadlines pass: thousands of small downloads grew the heap by as many.
        // Rebuilding once they outnumber live timers 4 to 1 keeps it bounded, at O(1) amortized per cancel.
        if heap.count > 64, heap.count > 4 * count { compact() }
        return true
    }

    /// The callback of timer `id` if it still holds `slot`, which is freed.
    private mutating func take(slot: Int32, id: UInt64) -> (() -> Void)? {
        let index = Int(slot)
        guard index >= 0, index < slots.count, slots[index].id == id, let callback = slots[index].callback else { return nil }
        slots[index] = Slot()
        freeSlots.append(slot)
        count -= 1
        return callback
    }

    private func isLive(_ entry: Entry) -> Bool {
        slots[Int(entry.slot)].id == entry.id
    }

    /// Drops every cancelled entry and restores the heap order.
    private mutating func compact() {
        let slots = slots
        heap.removeAll { slots[Int($0.slot)].id != $0.id }
        var index = heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    /// The earliest deadline that will still fire, dropping cancelled entries on the way.
    mutating func nextDeadline() -> MonotonicInstant? {
        while let top = heap.first {
            if isLive(top) { return top.deadline }
            popTop()
        }
        return nil
    }

    /// Removes and returns the callbacks due at `now`, earliest first. The caller runs them after this returns,
    /// so a callback may schedule or cancel timers freely.
    mutating func takeExpired(now: MonotonicInstant) -> [() -> Void] {
        var due: [DueTimer] = []
        takeExpired(now: now, into: &due)
        return due.map(\.callback)
    }

    /// A due timer's callback. Wrapped: an array of bare closures holds each behind a reabstraction thunk, made
    /// (allocated) for every timer that fires.
    struct DueTimer {
        let callback: () -> Void
    }

    /// ``takeExpired(now:)`` appending to `due`, whose buffer the event loop keeps from turn to turn.
    mutating func takeExpired(now: MonotonicInstant, into due: inout [DueTimer]) {
        while let top = heap.first, top.deadline <= now {
            popTop()
            if let callback = take(slot: top.slot, id: top.id) { due.append(DueTimer(callback: callback)) }
        }
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
