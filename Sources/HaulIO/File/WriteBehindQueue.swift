import Synchronization

/// The ranges of a file waiting for their write-back to be started, and whether a thread is draining them.
///
/// The event loop adds ranges; one blocking-work thread at a time takes them in batches. A range that
/// continues the last one queued is merged into it, so a batch holds one range per run of adjacent writes.
final class WriteBehindQueue: Sendable {
    private struct State {
        var pending: [Range<Int64>] = []
        var draining = false
    }

    private let state = Mutex(State())

    /// Queues `range`; true when no thread is draining, so the caller must start one (which then calls
    /// ``take()`` until it returns nil).
    func add(_ range: Range<Int64>) -> Bool {
        state.withLock { state in
            if let last = state.pending.last, last.upperBound == range.lowerBound {
                state.pending[state.pending.count - 1] = last.lowerBound..<range.upperBound
            } else {
                state.pending.append(range)
            }
            if state.draining { return false }
            state.draining = true
            return true
        }
    }

    /// Everything queued, in the order it came; nil when nothing is, and then the drain is over (the next
    /// ``add(_:)`` asks for a new one).
    func take() -> [Range<Int64>]? {
        state.withLock { state in
            guard !state.pending.isEmpty else {
                state.draining = false
                return nil
            }
            let taken = state.pending
            state.pending = []
            return taken
        }
    }
}
