import HaulIO

/// Turns the engine's snapshots of one run into ``DownloadProgress``: the rate over the last few seconds
/// and the time left at that rate.
struct ProgressMeter {
    private var rate = RateEstimator()
    /// When the current run started (progress reports its elapsed time from here).
    private(set) var runStarted: MonotonicInstant

    init(runStarted: MonotonicInstant = .now()) {
        self.runStarted = runStarted
    }

    /// Starts measuring a new run: the rate of the previous one says nothing about this one.
    mutating func restart(at instant: MonotonicInstant = .now()) {
        rate = RateEstimator()
        runStarted = instant
    }

    /// Makes `progress` the snapshot of `snapshot` in `phase`, every field set, in place: a download publishes
    /// by changing its latest snapshot where it lies, not by building a new one.
    mutating func update(_ progress: inout DownloadProgress, from snapshot: SegmentedDownload.Snapshot, phase: DownloadProgress.Phase,
                         canResume: Bool = true, at now: MonotonicInstant = .now()) {
        rate.record(bytes: snapshot.bytesDone, at: now)
        let perSecond = phase == .downloading ? rate.bytesPerSecond : 0
        progress.phase = phase
        progress.bytesDone = snapshot.bytesDone
        progress.total = snapshot.total
        progress.bytesPerSecond = perSecond
        progress.estimatedTimeRemaining = DownloadProgress.estimatedTimeRemaining(done: snapshot.bytesDone, total: snapshot.total, bytesPerSecond: perSecond)
        progress.activeConnections = phase == .downloading ? snapshot.activeConnections : 0
        progress.completedRanges = snapshot.completedRanges
        progress.segments = snapshot.segments
        progress.elapsed = .nanoseconds(Int64(now.nanoseconds(since: runStarted)))
        progress.partialPath = snapshot.partialPath
        progress.checkpointFailure = snapshot.checkpointFailure
        progress.notices = snapshot.notices
        progress.canResume = canResume
    }
}

extension DownloadProgress {
    /// The time the bytes left take at `bytesPerSecond`; nil when the total or the rate is unknown.
    package static func estimatedTimeRemaining(done: Int64, total: Int64?, bytesPerSecond: Double) -> Duration? {
        guard let total, bytesPerSecond > 0, bytesPerSecond.isFinite else { return nil }
        return .milliseconds(Int64(Double(max(0, total - done)) / bytesPerSecond * 1000))
    }
}
