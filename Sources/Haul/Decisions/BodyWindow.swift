/// Which bytes of one response body belong in the file: those of the range that was asked for, never one
/// more, so that no server can write into another connection's region or past the end of the file.
///
/// A body that runs past its range is a fault of that response. A body whose framing did not promise its
/// length (`bounded` false: chunked or close-delimited) is only *provisional* until it has ended at exactly
/// the range's end: a server that lied about the range could have sent other bytes, so its bytes count as
/// written only then, and are fetched again otherwise. Pure.
struct BodyWindow: Equatable {
    /// File offset of the body's first byte.
    let start: Int64
    /// One past the last byte asked for; nil for a single stream of unknown length (a whole-file `200`
    /// without `Content-Length`), which has no range to run past.
    let end: Int64?
    let bounded: Bool
    /// Body bytes seen so far.
    private(set) var received: Int64 = 0

    init(start: Int64, end: Int64?, bounded: Bool) {
        self.start = start
        self.end = end
        self.bounded = bounded
    }

    /// Where the next body byte goes.
    var position: Int64 { start + received }

    /// Whether every byte of the range has arrived.
    var isFilled: Bool { end.map { position >= $0 } ?? false }

    /// What to do with `count` more body bytes.
    struct Step: Equatable {
        /// How many of them to write, at ``BodyWindow/position`` (before the step).
        var writable: Int
        /// Bytes beyond the range: the response is faulty.
        var overrun: Int64
    }

    mutating func take(_ count: Int) -> Step {
        let room = end.map { max(0, $0 - position) } ?? Int64(count)
        let writable = Int(min(Int64(count), room))
        received += Int64(count)
        return Step(writable: writable, overrun: Int64(count - writable))
    }

    /// Whether a body that has ended (cleanly, by its framing) delivered exactly the range.
    var endedExactly: Bool { end.map { position == $0 } ?? true }
}
