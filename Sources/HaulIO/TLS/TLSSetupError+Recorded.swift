extension TLSSetupError {
    /// The error with `reason`, as a session's log recorded it (HaulSessions reads failures back).
    package init(recordedReason reason: String) {
        self.reason = reason
    }
}
