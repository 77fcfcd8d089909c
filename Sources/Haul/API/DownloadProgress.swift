import HaulJournal

/// A snapshot of one download, as its ``DownloadTask/progress`` sequence delivers it.
///
/// Snapshots are values: keep them, compare them, draw them. The sequence delivers the newest one when the
/// consumer asks (older ones that were never read are dropped), so a slow consumer never slows the download.
public struct DownloadProgress: Sendable, Equatable, CustomReflectable {
    /// Where the download is in its life.
    public enum Phase: Sendable, Hashable {
        /// Connecting, or waiting for the first response (length and validators still unknown).
        case connecting
        /// Bytes are arriving.
        case downloading
        /// Every byte is written; checking the checksum, syncing and renaming.
        case finishing
        /// Stopped by ``DownloadTask/pause()``; the journal on disk records everything written.
        case paused
        /// The file is complete under its final name.
        case completed
        /// Stopped by an error; see the task's result.
        case failed
        /// Ended as ``HaulError/cancelled``. After ``DownloadTask/cancel()`` the partial file and journal are
        /// removed; after the Swift task awaiting the download was cancelled they stay for a later resume (a
        /// ``DownloadTask/cancel()`` then still removes them).
        case cancelled
    }

    /// One connection's share of the file, for drawing a segment map.
    public struct Segment: Sendable, Hashable {
        /// First byte of the segment.
        public var start: Int64
        /// Bytes before this offset are written.
        public var next: Int64
        /// One past the segment's last byte (it shrinks when another connection takes part of it).
        public var end: Int64
        /// Whether a connection is working on it right now.
        public var isActive: Bool

        /// A segment from `start` to `end`, written up to `next`.
        public init(start: Int64, next: Int64, end: Int64, isActive: Bool) {
            self.start = start
            self.next = next
            self.end = end
            self.isActive = isActive
        }
    }

    /// Where the download is in its life.
    public var phase: Phase {
        get { fields.box.fields.phase }
        set { fields.unique.fields.phase = newValue }
        _modify { yield &fields.unique.fields.phase }
    }
    /// Bytes of the file written so far (including those a resumed download found already on disk).
    public var bytesDone: Int64 {
        get { fields.box.fields.bytesDone }
        set { fields.unique.fields.bytesDone = newValue }
        _modify { yield &fields.unique.fields.bytesDone }
    }
    /// The file's length; nil until the server said it, or when it never says (a close-delimited body).
    public var total: Int64? {
        get { fields.box.fields.total }
        set { fields.unique.fields.total = newValue }
        _modify { yield &fields.unique.fields.total }
    }
    /// Bytes per second over the last few seconds.
    public var bytesPerSecond: Double {
        get { fields.box.fields.bytesPerSecond }
        set { fields.unique.fields.bytesPerSecond = newValue }
        _modify { yield &fields.unique.fields.bytesPerSecond }
    }
    /// Time left at the current rate; nil when the total or the rate is unknown.
    public var estimatedTimeRemaining: Duration? {
        get { fields.box.fields.estimatedTimeRemaining }
        set { fields.unique.fields.estimatedTimeRemaining = newValue }
        _modify { yield &fields.unique.fields.estimatedTimeRemaining }
    }
    /// Connections transferring right now.
    public var activeConnections: Int {
        get { fields.box.fields.activeConnections }
        set { fields.unique.fields.activeConnections = newValue }
        _modify { yield &fields.unique.fields.activeConnections }
    }
    /// Byte ranges already written, sorted and disjoint.
    public var completedRanges: [Range<Int64>] {
        get { fields.box.fields.completedRanges }
        set { fields.unique.fields.completedRanges = newValue }
        _modify { yield &fields.unique.fields.completedRanges }
    }
    /// The segments still being worked on, by start offset.
    public var segments: [Segment] {
        get { fields.box.fields.segments }
        set { fields.unique.fields.segments = newValue }
        _modify { yield &fields.unique.fields.segments }
    }
    /// Time since the download (or its latest resumption) started.
    public var elapsed: Duration {
        get { fields.box.fields.elapsed }
        set { fields.unique.fields.elapsed = newValue }
        _modify { yield &fields.unique.fields.elapsed }
    }
    /// The path being written (the destination plus `.part` until complete). Empty while a directory
    /// download waits for the server's suggested name, and for a download kept in memory (which has none).
    public var partialPath: String {
        get { fields.box.fields.partialPath }
        set { fields.unique.fields.partialPath = newValue }
        _modify { yield &fields.unique.fields.partialPath }
    }
    /// The latest failed checkpoint of the resume journal (say, no space left for it), if the journal is
    /// behind: the download goes on, but after a crash more would be fetched again. Nil once one succeeds.
    public var checkpointFailure: JournalError? {
        get { fields.box.fields.checkpointFailure }
        set { fields.unique.fields.checkpointFailure = newValue }
        _modify { yield &fields.unique.fields.checkpointFailure }
    }
    /// Things the user should know about this download, oldest first (for example that it resumed a
    /// partial download started from another URL).
    public var notices: [String] {
        get { fields.box.fields.notices }
        set { fields.unique.fields.notices = newValue }
        _modify { yield &fields.unique.fields.notices }
    }
    /// Whether a paused download can continue where it stopped: false when the server does not support
    /// ranges or sends no validator (no `ETag`, no `Last-Modified`: nothing could show that the rest is of
    /// the same file), or the download is streamed or kept in memory, so the next run starts over.
    public var canResume: Bool {
        get { fields.box.fields.canResume }
        set { fields.unique.fields.canResume = newValue }
        _modify { yield &fields.unique.fields.canResume }
    }

    /// Every field in one copy-on-write box: a snapshot is copied several times on its way to its readers,
    /// and copying it then retains one object instead of each array and string.
    private var fields: CopyOnWrite<Fields>

    private struct Fields: Sendable, Equatable {
        var phase: Phase
        var bytesDone: Int64
        var total: Int64?
        var bytesPerSecond: Double
        var estimatedTimeRemaining: Duration?
        var activeConnections: Int
        var completedRanges: [Range<Int64>]
        var segments: [Segment]
        var elapsed: Duration
        var partialPath: String
        var checkpointFailure: JournalError?
        var notices: [String] = []
        var canResume: Bool = true
    }

    /// A snapshot with every field given (the engine makes these; tests and custom renderers may too).
    public init(phase: Phase, bytesDone: Int64, total: Int64?, bytesPerSecond: Double, estimatedTimeRemaining: Duration?,
                activeConnections: Int, completedRanges: [Range<Int64>], segments: [Segment], elapsed: Duration,
                partialPath: String, checkpointFailure: JournalError? = nil) {
        fields = CopyOnWrite(Fields(
            phase: phase, bytesDone: bytesDone, total: total, bytesPerSecond: bytesPerSecond,
            estimatedTimeRemaining: estimatedTimeRemaining, activeConnections: activeConnections,
            completedRanges: completedRanges, segments: segments, elapsed: elapsed, partialPath: partialPath,
            checkpointFailure: checkpointFailure))
    }

    /// `bytesDone / total`, or nil when the total is unknown.
    public var fractionDone: Double? {
        guard let total else { return nil }
        return total == 0 ? 1 : Double(bytesDone) / Double(total)
    }

    /// Equal when every field is (as the synthesized `==` of the fields compared them).
    public static func == (lhs: DownloadProgress, rhs: DownloadProgress) -> Bool {
        lhs.fields.value == rhs.fields.value
    }

    /// The fields, as a struct's (what `print` and `dump` show), not the box that holds them.
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: fields.value).children, displayStyle: .struct)
    }

    /// Whether `self` and `other` share one box of fields (for tests of copy-on-write).
    func sharesStorage(with other: DownloadProgress) -> Bool { fields.sharesStorage(with: other.fields) }
}
