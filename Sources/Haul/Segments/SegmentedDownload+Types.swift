import HaulHTTP
import HaulIO
import HaulJournal

/// What a ``SegmentedDownload`` hands to its ``DownloadTask``: how it ended, where a directory download's
/// file goes, and its progress.
extension SegmentedDownload {
    /// What the loop hands to the blocking finish (checksum, sync, rename).
    ///
    /// A class: it holds a dozen references (URL, response head, paths) and is passed on several times
    /// between the loop, the task and the finish — inside ``Outcome``, captured by closures — once per
    /// small file. A struct was copied whole each time (every reference retained and released again); this is
    /// one reference. Nothing changes it once made.
    final class Finished: Sendable {
        /// nil for a download streamed in order (``OrderedStream``): everything is delivered already.
        let file: OutputFile?
        /// Whether `file` is in memory (``DownloadRequest/Destination/memory(limit:)``): its bytes are read
        /// back into the result, nothing is renamed. `partPath` then names it for messages only.
        let inMemory: Bool
        let partPath: String
        let journalPath: String
        /// Whether a journal was written (small files have none), so the finish knows to remove it.
        let journaled: Bool
        let bytes: Int64
        let finalURL: HTTPURL
        let entityTag: EntityTag?
        let lastModified: HTTPDate?
        let redirects: Int
        let connections: Int
        let bytesRequested: Int64
        let retries: Int
        /// The response the run took the file from (``DownloadStateMachine/response``).
        let response: ResponseHead?
        /// What the `Repr-Digest` fields of the responses claim the whole file's digests are; checked with the checksum.
        let representationDigests: [RepresentationDigestClaim]
        /// The destination was checked absent when the download started and may not be replaced: the final
        /// name is given without replacing a file that appeared since (``FinalNaming``).
        let finalNameIsNew: Bool

        init(file: OutputFile?, inMemory: Bool = false, partPath: String, journalPath: String, journaled: Bool, bytes: Int64,
             finalURL: HTTPURL, entityTag: EntityTag?, lastModified: HTTPDate?, redirects: Int, connections: Int,
             bytesRequested: Int64, retries: Int, response: ResponseHead?, representationDigests: [RepresentationDigestClaim] = [],
             finalNameIsNew: Bool = false) {
            self.file = file
            self.inMemory = inMemory
            self.partPath = partPath
            self.journalPath = journalPath
            self.journaled = journaled
            self.bytes = bytes
            self.finalURL = finalURL
            self.entityTag = entityTag
            self.lastModified = lastModified
            self.redirects = redirects
            self.connections = connections
            self.bytesRequested = bytesRequested
            self.retries = retries
            self.response = response
            self.representationDigests = representationDigests
            self.finalNameIsNew = finalNameIsNew
        }
    }

    /// How a download ended, for its ``DownloadTask``.
    enum Outcome {
        /// Every byte is written; the blocking finish remains.
        case finished(Finished)
        case failed(HaulError)
        /// Stopped by a pause after a final checkpoint (which may have failed). `resumable` is false when
        /// bytes were fetched from a server without range support: the next run starts over.
        case paused(checkpointFailure: JournalError?, resumable: Bool)
        /// Stopped by a cancel; any running checkpoint has landed, so the files can be removed.
        case cancelled
        /// The conditional probe was answered 304: the destination is kept as it is, nothing was fetched.
        case upToDate
        /// The first answer is a Metalink document to follow, at this URL; nothing was written.
        case metalinkDocument(HTTPURL)
    }

    /// Where a download into a directory goes, decided once the probe's head names the file.
    enum NameResolution {
        /// Start a new file at this destination path, in `file` (its `.part`, opened and locked, or a file
        /// without a name); `created` is what naming it created on disk; `finalNameIsNew`: see
        /// ``Finished/finalNameIsNew``.
        case fresh(destination: String, file: OutputFile, created: EarlyStopCleanup.Created, finalNameIsNew: Bool)
        /// A journal for this destination exists: continue it (the probe's response is dropped).
        case resume(destination: String, journal: ResumeJournal, state: JournalState, file: OutputFile)
    }

    /// What the download's progress looks like now, for ``DownloadProgress``.
    struct Snapshot {
        var bytesDone: Int64
        var total: Int64?
        var activeConnections: Int
        var completedRanges: [Range<Int64>]
        var segments: [DownloadProgress.Segment]
        var checkpointFailure: JournalError?
        var partialPath: String
        var notices: [String]
    }
}

extension DownloadStateMachine {
    /// The progress as it stands, with what only the driver knows (the checkpoints' last failure).
    func snapshot(checkpointFailure: JournalError?) -> SegmentedDownload.Snapshot {
        let active = connections.filter(\.isBusy)
        var segments: [DownloadProgress.Segment] = []
        if let planner {
            let owners = Set(active.compactMap(\.segment))
            for segment in planner.segments.values where segment.remaining > 0 {
                segments.append(.init(start: segment.start, next: segment.next, end: segment.end,
                                      isActive: owners.contains(segment.id)))
            }
            segments.sort { $0.start < $1.start }
        }
        return .init(bytesDone: bytesDone, total: total, activeConnections: active.count,
                     completedRanges: planner?.written.ranges ?? (bytesDone > 0 ? [0..<bytesDone] : []),
                     segments: segments, checkpointFailure: checkpointFailure, partialPath: partPath, notices: notices)
    }
}
