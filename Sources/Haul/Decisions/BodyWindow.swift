/// Which bytes of one response body belong in the file: those of the range that was asked for, never one
/// more, so that no server can write into another connection's region or past the end of the file.
///
/// A body that runs past its range is a fault of that response. A body whose framing did not promise its
/// length (`bounded` false: chunked or close-delimited) is only *provisional* until it has ended at exactly
/// the range's end: a server that lied about the range could have sent other bytes, so its bytes count as
/// written only then, and are fetched again otherwise.
///
/// A window over a *whole-file* body (``skipped``: a server that ignored `Range` but proved the file the
/// same, see ``RangedResponseDecision/acceptFromWholeBody``) drops the body bytes before the range, and the
/// bytes after it are the rest of the file, not an overrun: the connection stops reading there. Pure.
struct BodyWindow: Equatable {
    /// File offset of the body's first byte.
    let start: Int64
    /// One past the last byte asked for; nil for a single stream of unknown length (a whole-file `200`
    /// without `Content-Length`), which has no range to run past.
    let end: Int64?
    let bounded: Bool
    /// Body bytes before the range's first byte, dropped: nonzero only in a whole-file body.
    let skipped: Int64
    /// Whether the body is the whole file, of which the window takes the range: what follows the range is
    /// not an overrun.
    let isWholeBody: Bool
    /// Body bytes seen so far.
    private(set) var received: Int64 = 0

    init(start: Int64, end: Int64?, bounded: Bool) {
        self.start = start
        self.end = end
        self.bounded = bounded
        self.skipped = 0
        self.isWholeBody = false
    }

    /// `range` out of a body that is the whole file (its first byte is the file's byte 0) with a known length.
    init(wholeBodyTaking range: Range<Int64>) {
        start = range.lowerBound
        end = range.upperBound
        bounded = true
        skipped = range.lowerBound
        isWholeBody = true
    }

    /// Where the next body byte goes.
    var position: Int64 { start + max(0, received - skipped) }

    /// Whether every byte of the range has arrived.
    var isFilled: Bool { end.map { position >= $0 } ?? false }

    /// What to do with `count` more body bytes.
    struct Step: Equatable {
        /// How many of them come before the range and are dropped (a whole-file body only).
        var dropped: Int = 0
        /// How many of them to write (those after the dropped ones), at ``BodyWindow/position`` (before the step).
        var writable: Int
        /// Bytes beyond the range: the response is faulty — unless the body is the whole file.
        var overrun: Int64
    }

    mutating func take(_ count: Int) -> Step {
        let dropped = Int(min(Int64(count), max(0, skipped - received)))
        let room = end.map { max(0, $0 - position) } ?? Int64(count)
        let writable = Int(min(Int64(count - dropped), room))
        received += Int64(count)
        return Step(dropped: dropped, writable: writable, overrun: Int64(count - dropped - writable))
    }

    /// Whether a body that has ended (cleanly, by its framing) delivered exactly the range.
    var endedExactly: Bool { end.map { position == $0 } ?? true }
}
