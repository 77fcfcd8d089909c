/// Whether a download's end may reach the run loop without waking it (``EventInbox/post(_:wake:)`` with
/// `wake: false`): taken later with the next end that wakes it, or with a full batch. Pure.
///
/// Only an end with nothing to show: the run shows nothing per download (no progress, no JSON lines, no
/// `-w`), the download succeeded, and it is not a Metalink document (whose files the run loop starts). After a
/// stop signal every end is told at once: the stop waits for the finishing downloads' reports.
public enum QuietEnd {
    public static func isQuiet(runShowsNothing: Bool, succeeded: Bool, isMetalinkDocument: Bool, stopping: Bool) -> Bool {
        runShowsNothing && succeeded && !isMetalinkDocument && !stopping
    }
}
