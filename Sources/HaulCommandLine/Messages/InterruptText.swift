/// What a second Ctrl-C (or SIGTERM) prints before the process exits at once.
///
/// It claims no more than is sure at any moment of the pause: the journals are as their last finished
/// checkpoints wrote them (journal writes are atomic), and a small file may have none yet.
///
/// The lines are `StaticString`s because they are written from a signal handler, where only
/// async-signal-safe calls are allowed: `write(2)` of constant bytes, then `_exit(2)`. Each ends in a newline.
public enum InterruptText {
    /// The message, shared by both forms.
    public static var secondInterruptMessage: String {
        "second interrupt: exiting now; each journal keeps its last checkpoint; a download without one starts over"
    }

    /// For a log or a pipe.
    public static var secondInterruptLine: StaticString {
        "haul: second interrupt: exiting now; each journal keeps its last checkpoint; a download without one starts over\n"
    }

    /// For a terminal showing the live bar: clears the bar's line first.
    public static var secondInterruptTerminalLine: StaticString {
        "\r\u{1B}[Khaul: second interrupt: exiting now; each journal keeps its last checkpoint; a download without one starts over\n"
    }

    /// With `--progress json`: one JSON error object, as ``JSONProgress/errorLine(file:status:message:transient:)``
    /// would write it for status 130.
    public static var secondInterruptJSONLine: StaticString {
        #"{"type":"error","file":null,"code":130,"class":"interrupted","message":"second interrupt: exiting now; each journal keeps its last checkpoint; a download without one starts over","transient":true}\#n"#
    }
}
