import HaulIO

/// What the earlier runs of a paused and resumed download cost, so that its ``DownloadResult`` covers the
/// whole download in this process and not only the last run.
struct DownloadTotals: Equatable {
    /// Time spent running (from each run's start to its pause, or to the rename); time paused is not counted.
    var duration: Duration = .zero
    var bytesRequested: Int64 = 0
    var retries = 0
    /// The most connections any run used at once.
    var connections = 0

    mutating func add(duration: Duration, bytesRequested: Int64, retries: Int, connections: Int) {
        self.duration += duration
        self.bytesRequested += bytesRequested
        self.retries += retries
        self.connections = max(self.connections, connections)
    }

    /// The last run's result with the earlier runs added in.
    func including(_ last: consuming DownloadResult) -> DownloadResult {
        var result = last
        result.duration += duration
        result.bytesRequested += bytesRequested
        result.retries += retries
        result.connections = max(result.connections, connections)
        return result
    }
}
