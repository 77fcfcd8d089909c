/// Whether the live progress bar is on the terminal's current line, and whether it may still be drawn.
///
/// The ticker draws the bar while messages (a file saved, "interrupted", "paused at …") are written from other
/// tasks. Each decision here must be taken under the same lock as the write it decides, with the message that
/// follows a clear; then a tick that computed its line before a stop began can no longer draw it after the
/// stop's first message, leaving a bar uncleared before "paused at …".
public struct BarLineState: Sendable, Hashable {
    /// The bar is drawn on the current line (a message must erase it first).
    public private(set) var shown = false
    /// The run is stopping: the bar is never drawn again.
    public private(set) var retired = false

    public init() {}

    /// A tick wants to draw the bar: whether it may.
    public mutating func draw() -> Bool {
        guard !retired else { return false }
        shown = true
        return true
    }

    /// A message line is about to be written: whether the bar must be erased first.
    public mutating func clear() -> Bool {
        defer { shown = false }
        return shown
    }

    /// The run stops (the first Ctrl-C): no bar from now on; whether the one shown must be erased first.
    public mutating func retire() -> Bool {
        retired = true
        return clear()
    }
}
