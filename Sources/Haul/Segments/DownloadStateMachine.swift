import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// Everything one download decides, as a value: events go in (a response head, written bytes, an
/// exchange's end, a timer, a pause), actions come out (send this request, stop that connection, prepare
/// the file, checkpoint, end). ``SegmentedDownload`` feeds it and carries the actions out; it touches no
/// socket, file or clock, so its tests script the inputs (`DownloadStateMachineTests`).
///
/// The pure decisions it asks: ``ProbeResponseDecision`` (what the first answer means),
/// ``RangedResponseDecision`` (whether a ranged answer may be written), ``FailurePolicy`` and
/// ``RetryPolicy`` (what a failure leads to), ``ConnectionSpeedWatch`` (which connections are too slow),
/// ``SegmentPlanner`` (which bytes each connection asks for), ``MirrorSet``, ``EarlyStopCleanup``,
/// ``PieceVerification`` (which pieces to hash, what a bad one leads to). What it
/// decides itself: when the probe's bytes are in flight, when provisional bytes are proven, when the
/// journal starts, when reads wait for the checkpoints, when the file is preallocated, whether a pause
/// can be resumed, and when the file is complete.
struct DownloadStateMachine {
    enum Phase: Equatable {
        /// Waiting for the client-wide budget's first connection.
        case waitingForConnection
        /// The probe's answer decides the download's shape (also again, after a restart or a failure of a
        /// server without ranges).
        case probing
        /// Every other mirror is asked for its first byte before anything is written.
        case checkingMirrors
        /// Segments are fetched.
        case running
        /// Every byte is written; the output's size is being checked.
        case finishing
        case stopped(Stop)
    }

    enum Stop: Equatable { case finished, failed, paused, cancelled }

    /// One connection as the machine sees it (the worker carrying it out holds only its exchange).
    struct Connection {
        enum Activity: Equatable { case idle, exchanging, waitingToRetry }
        /// What the response head decided that the exchange's end must act on.
        enum Verdict {
            case none
            case redirect(ResponseFacts)
            /// Dropped on purpose (the download continues from a journal instead).
            case retired
            /// The probe goes again in the form the download now holds (``ProbeForm``).
            case retryProbe(because: HaulError)
            /// The probe was answered 304 Not Modified: the destination stays as it is.
            case upToDate
            /// Stopped on purpose: a far slower mirror's request, withdrawn (``MirrorSelector``).
            case withdrawn
            /// The probe's answer is a Metalink document to follow, at this URL (after redirects).
            case metalinkDocument(HTTPURL)
        }

        let id: Int
        /// The mirror the next request goes to (it moves when a mirror is dropped, or to a faster one).
        var mirror: Int
        var activity = Activity.idle
        var exchange: SegmentAssignment?
        /// Every URL the current request's redirect chain has visited.
        var chain: [HTTPURL] = []
        /// The planner segment this connection writes into.
        var segment: Int?
        var failuresInRow = 0
        var verdict = Verdict.none
        /// Why the download stopped the exchange itself (too slow), reported instead of the close.
        var interruption: HaulError?
        var isBusy: Bool { activity == .exchanging }
    }

    /// What the driver does with connection slots it asks the client-wide budget for.
    enum SlotPurpose: Equatable {
        /// The download's first connection (the probe, or the first range of a resume).
        case first
        /// Connections for segments.
        case work
        /// One connection per mirror to check, in order.
        case mirrorChecks([Int])
    }

    /// What the file needs before the first body byte: emptied, checked for room, maybe preallocated.
    struct FilePreparation: Equatable {
        var length: Int64?
        var preallocate: Bool
    }

    /// What the driver waits for before it reports the end.
    enum EndWait: Equatable {
        case nothing
        /// What this run created goes again, once no checkpoint is writing.
        case removing(EarlyStopCleanup)
        /// A last checkpoint of these ranges lands first.
        case checkpoint(ByteRangeSet, pausing: Bool)
        /// Any checkpoint running lands first.
        case checkpointerIdle
    }

    enum Report {
        case finished
        case failed(HaulError)
        /// `resumable` false: bytes were fetched without range support; the next run starts over.
        case paused(resumable: Bool)
        case cancelled
        /// A conditional probe was answered 304: nothing fetched, the destination kept.
        case upToDate
        /// The probe's answer is a Metalink document to follow (``DownloadRequest/followsMetalink``); nothing
        /// was written.
        case metalinkDocument(HTTPURL)
    }

    enum Action {
        /// Start this exchange on its connection's worker (a new worker for a new connection).
        case send(SegmentAssignment)
        /// Close this connection's exchange: its end is reported as a failure.
        case stop(connection: Int)
        /// Feed ``retryDue(_:)`` after this delay.
        case retry(connection: Int, after: Duration)
        /// Take up to this many slots from the budget and feed ``slotsGranted(_:wanted:for:)``.
        case takeSlots(Int, SlotPurpose)
        /// Feed ``slotFreed()`` when the budget may have a slot.
        case waitForSlot
        /// Stop every worker (exchange and retry timer), the speed and checkpoint timers.
        case stopConnections
        case stopTimers
        /// Give the budget every slot but `keeping` and forget the workers.
        case releaseConnections(keeping: Int)
        case prepareFile(FilePreparation)
        /// Open the `.part` of a resumed download (it stays as it is).
        case openPartialFile(length: Int64)
        /// Start the journal (``DownloadStateMachine/journalState(createdAt:checksum:)``); `firstCheckpoint`:
        /// with an empty first checkpoint and the checkpoint timer, else (a pause) with nothing.
        case startJournal(firstCheckpoint: Bool)
        /// Continue the journal of a resumed download, with the checkpoint timer.
        case continueJournal(JournalState)
        /// Remove the journal once its checkpointer is idle; `thenStartOver`: feed ``journalDiscarded()``.
        case discardJournal(thenStartOver: Bool)
        case checkpoint(ByteRangeSet)
        case scheduleSpeedChecks
        /// Deliver a stream's provisional bytes and feed ``provisionalCommitted(on:serial:window:failure:)``.
        case commitStream(Range<Int64>, connection: Int, serial: Int, window: BodyWindow)
        case discardUnproven(Range<Int64>)
        /// Measure the output and feed ``outputChecked(size:)``.
        case checkOutput
        /// Hash these pieces from the file (off the loop) and feed each result to ``pieceHashed(_:)``.
        case hashPieces([PieceCheck])
        case log(Logger.Level, Logger.Message, () -> Logger.Metadata)
        case end(Report, after: EndWait)
        /// Ask the download's URL refresher for a new URL in place of `url` (the mirror's given URL, expired
        /// `because`) and feed ``urlRefreshed(mirror:to:refresherError:)`` (DownloadStateMachine+Refresh.swift).
        case refreshURL(mirror: Int, url: HTTPURL, because: HaulError)
    }

    // MARK: State (internal so that the machine's extensions in other files can set it; only they do)

    let options: DownloadOptions
    let ifChangedOnServer: ChangePolicy
    /// The validators the probe sends when only a changed file is wanted (``DownloadRequest/onlyIfChanged``).
    var conditional: ConditionalProbe?
    /// The file's length as the request gave it (``DownloadRequest/expectedSize``): any other is refused.
    var expectedSize: Int64?
    /// Whether a first answer that is a Metalink document ends the download for it to be followed
    /// (``DownloadRequest/followsMetalink``, ``MetalinkResponseDecision``).
    var followsMetalink = false
    let sink: BodyReceivePath.Sink
    /// The most bytes the download may hold: a memory destination's limit or `DownloadOptions/maximumFileSize`,
    /// the smaller of both; nil for none.
    let sizeLimit: Int64?
    /// What one request of a streamed download asks for, and the most asked ahead of the stream's delivery.
    let streamChunk: Int64
    let streamWindow: Int64
    /// This boot's id, to tell which unsynced journal ranges survived (``JournalState/trustedDurable(currentBootID:)``);
    /// given with a journal to continue.
    var bootID: [UInt8]?

    var phase = Phase.waitingForConnection
    var mirrors: MirrorSet
    var connections: [Connection] = []

    /// What `read` takes from connection `id`, read in place: `connections[id].field` copies the whole
    /// connection first (an array's getter returns its element), hundreds of instructions for a field of a
    /// few bytes, several times per small download.
    func connection<Value>(_ id: Int, _ read: (Connection) -> Value) -> Value {
        precondition(connections.indices.contains(id), "no connection \(id)")
        return connections.withUnsafeBufferPointer { read($0[id]) }
    }
    var planner: SegmentPlanner?
    var total: Int64?
    /// Whether the server answered with 206: only then can bytes be fetched out of order.
    var rangesSupported = false
    /// The first response accepted as the file in this run. Forgotten when the file starts over.
    var response: ResponseHead?
    var bytesDone: Int64 = 0
    var bytesRequested: Int64 = 0
    var retries = 0
    var restarts = 0
    var redirects = 0
    var peakConnections = 0
    var notices: [String]
    /// The final path, its `.part` and journal; empty until a directory download's probe names the file.
    var destination: String
    var partPath: String
    var journalPath: String
    /// Set for a download into a directory until the probe's head has named the file.
    var awaitingName: Bool
    /// What this run created on disk, removed again if it stops before its first body byte.
    var created: EarlyStopCleanup.Created
    var resumeState: JournalState?
    /// Whether this run continued a journal, or started one.
    var resumedFromJournal: Bool
    var journaling = false
    var fileOpen: Bool
    var bytesAtLastCheckpoint: Int64 = 0
    /// The form a refused probe fell back to, which every later probe of this download keeps.
    var probeFallback: ProbeForm?
    var mirrorChecksPending = 0
    var waitingForSlot: SlotPurpose?
    var workWanted = 0
    var horizonCheckQueued = false
    var speedWatch: ConnectionSpeedWatch
    var mirrorSelector: MirrorSelector
    var serial = 0
    /// Piece hashes and `Repr-Digest` claims (``IntegrityChecks``).
    var integrity: IntegrityChecks
    /// The refreshes of expired URLs asked for and pending (``URLRefreshDecision``).
    var urlRefresh: URLRefreshState

    init(options: DownloadOptions, mirrors: MirrorSet, destination: String?, awaitingName: Bool, sink: BodyReceivePath.Sink,
         sizeLimit: Int64?, ifChangedOnServer: ChangePolicy = .fail, resume: JournalState? = nil, notices: [String] = [],
         fileOpen: Bool = false, created: EarlyStopCleanup.Created = .init(), bootID: [UInt8]? = nil,
         conditional: ConditionalProbe? = nil, pieceHashes: PieceHashes? = nil, refreshesURLs: Bool = false,
         expectedSize: Int64? = nil, followsMetalink: Bool = false) {
        self.expectedSize = expectedSize
        self.followsMetalink = followsMetalink
        self.integrity = IntegrityChecks(pieceHashes: pieceHashes)
        self.urlRefresh = URLRefreshState(enabled: refreshesURLs)
        self.conditional = conditional
        self.sink = sink
        self.sizeLimit = sizeLimit
        self.ifChangedOnServer = ifChangedOnServer
        self.resumeState = resume
        self.resumedFromJournal = resume != nil
        self.notices = notices
        self.fileOpen = fileOpen
        self.created = created
        self.bootID = bootID
        self.awaitingName = destination == nil && awaitingName
        // A stream is named "-", as on curl's command line; memory has no path at all (nothing to lock,
        // journal or rename); a file has its `.part` and journal beside it once it has a name.
        let path = sink == .file ? destination : nil
        self.destination = sink == .stream ? "-" : path ?? ""
        partPath = path.map(WorkingFileNames.partial(of:)) ?? ""
        journalPath = path.map(WorkingFileNames.journal(of:)) ?? ""
        let streamChunk = max(options.minimumSegment, 1 << 20)
        self.streamChunk = streamChunk
        streamWindow = Int64(options.connections) * streamChunk
        speedWatch = ConnectionSpeedWatch(
            window: Int(options.slowWindow.components.seconds), slowRatio: options.slowConnectionRatio,
            lowSpeed: options.lowSpeedLimit?.allowing(rateLimit: options.rateLimit, connections: options.connections))
        // One mirror (nearly every download) has none to choose between, and the selector then never changes
        // a decision: it is given none to keep its four arrays for (made and freed per download otherwise).
        mirrorSelector = MirrorSelector(mirrorCount: mirrors.mirrors.count > 1 ? mirrors.mirrors.count : 0,
                                        requestBytes: max(options.minimumSegment, SegmentPlanner.defaultRequestChunk))
        // Stored last, after their last reads here: moved in, not copied (a copy retained every string and
        // array in them).
        self.mirrors = mirrors
        self.options = options
    }

    /// What messages call the file being written: the `.part` path, or, in memory, the URL so marked.
    var fileLabel: String { sink == .memory ? "\(mirrors.primary.given) (in memory)" : partPath }

    var isStopped: Bool { if case .stopped = phase { true } else { false } }
    /// Whether new work may start (not while finishing or stopped).
    var isActive: Bool { !isStopped && phase != .finishing }

    mutating func name(_ path: String) {
        destination = path
        partPath = WorkingFileNames.partial(of: path)
        journalPath = WorkingFileNames.journal(of: path)
    }

    /// Whether exchange `serial` is the one `connection` runs now (not one stopped and replaced since).
    func isCurrent(connection: Int, serial: Int) -> Bool {
        connections.indices.contains(connection) && connections[connection].exchange?.serial == serial
    }

    // MARK: Start and slots

    /// Asks for the first connection.
    mutating func start() -> [Action] {
        [.takeSlots(1, .first)]
    }

    /// The budget gave `granted` of the `wanted` slots asked for `purpose`.
    mutating func slotsGranted(_ granted: Int, wanted: Int, for purpose: SlotPurpose) -> [Action] {
        guard isActive else { return [] }
        var actions: [Action] = []
        switch purpose {
        case .first:
            guard granted > 0 else { return waitForSlot(.first) }
            let first = addConnection(mirror: 0)
            if let resumeState {
                actions = resume(from: resumeState, first: first)
                actions.append(.scheduleSpeedChecks)
            } else {
                // Made at its size: one array per download, not one grown by the append.
                actions = [probe(first), .scheduleSpeedChecks]
            }
        case .work:
            for _ in 0..<granted { actions += assignWork(addConnection(mirror: nil)) }
            if granted < wanted {
                workWanted = wanted - granted
                actions += waitForSlot(.work)
            }
        case .mirrorChecks(let unchecked):
            for mirror in unchecked.prefix(granted) {
                mirrorChecksPending += 1
                actions.append(send(addConnection(mirror: mirror), first: 0, end: 1, role: .mirrorCheck))
            }
            if mirrorChecksPending == 0 { actions += startAfterMirrorChecks() }
        }
        peakConnections = max(peakConnections, connections.count)
        return actions
    }

    /// The budget may have a slot again.
    mutating func slotFreed() -> [Action] {
        let purpose = waitingForSlot
        waitingForSlot = nil
        guard isActive else { return [] }
        switch purpose {
        case .first: return [.takeSlots(1, .first)]
        case .work:
            // Only open what the remaining work can still use.
            guard let planner else { return [] }
            let useful = planner.usefulConnections(limit: options.connections) - connections.lazy.filter(\.isBusy).count
            return useful > 0 ? [.takeSlots(min(workWanted, useful), .work)] : []
        case .mirrorChecks, nil: return []
        }
    }

    private mutating func waitForSlot(_ purpose: SlotPurpose) -> [Action] {
        // One place in line per download: a second wish waits behind the first, as the budget keeps it.
        if waitingForSlot == nil { waitingForSlot = purpose }
        return [.waitForSlot]
    }

    private mutating func addConnection(mirror: Int?) -> Int {
        let id = connections.count
        connections.append(Connection(id: id, mirror: mirror ?? mirrors.mirror(forConnection: id)))
        return id
    }

    /// Opens up to `wanted` more connections for segments.
    func openConnections(_ wanted: Int) -> [Action] {
        wanted > 0 && isActive ? [.takeSlots(wanted, .work)] : []
    }

    // MARK: Requests

    /// The request `first..<end` on a new redirect chain from the mirror's resolved URL, or — `hop` — the
    /// current chain continued at `hop` (keeping its mirror and whether it sent `Range`).
    mutating func send(_ id: Int, first: Int64, end: Int64?, role: SegmentAssignment.Role, hop: HTTPURL? = nil,
                       withoutRange: Bool = false) -> Action {
        // The connection is changed in place: a copy of it (its request, its chain) taken out and stored back
        // cost more than the rest of this, per request.
        let mirror = hop == nil ? connections[id].mirror : connections[id].exchange?.mirror ?? connections[id].mirror
        let sendsRange = hop == nil ? !withoutRange : connections[id].exchange?.sendsRange ?? true
        let target = hop ?? mirrors[mirror].resolved
        if hop == nil { connections[id].chain = [target] }
        let ifRange = role == .ranged ? mirrors[mirror].validators.ifRange : nil
        let range: RangeRequest? = sendsRange ? end.map { .bytes(first...($0 - 1)) } ?? .from(first) : nil
        serial += 1
        var head = mirrors.request(to: target, range: range, ifRange: ifRange)
        let conditionalFields = role == .probe ? conditional?.fields ?? [] : []
        for field in conditionalFields { head.headers.append(name: Array(field.name.utf8), value: Array(field.value.utf8)) }
        let assignment = SegmentAssignment(
            connection: id, serial: serial, role: role, first: first, end: end, mirror: mirror,
            sendsRange: sendsRange, sentIfRange: ifRange != nil, sentConditional: !conditionalFields.isEmpty,
            attempt: connections[id].failuresInRow + 1, head: head)
        connections[id].exchange = assignment
        connections[id].activity = .exchanging
        connections[id].verdict = .none
        connections[id].interruption = nil
        if let end, role != .mirrorCheck { bytesRequested += end - first }
        return .send(assignment)
    }

    /// Where the probe's range ends: one request's worth when other connections will share the file, so
    /// that the first connection asks for its segment a request at a time like the others and one that runs
    /// out of work can take half of what it has left (an open-ended request makes its whole segment "in
    /// flight", which nobody may split). Open-ended with one connection and for a stream.
    var probeEnd: Int64? {
        guard options.connections > 1, sink != .stream else { return nil }
        return max(options.minimumSegment, SegmentPlanner.defaultRequestChunk)
    }

    /// The probe, in the form the server has not refused: the fallback a refusal chose, else bounded
    /// (``probeEnd``) — open-ended when it goes `again` after a failure.
    mutating func sendProbe(_ id: Int, again: Bool = false) -> [Action] {
        [probe(id, again: again)]
    }

    /// The action of ``sendProbe(_:again:)``.
    private mutating func probe(_ id: Int, again: Bool = false) -> Action {
        let form = probeFallback ?? (again ? .openEnded : probeEnd.map { .bounded(end: $0) } ?? .openEnded)
        phase = .probing
        return send(id, first: 0, end: form.end, role: .probe, withoutRange: !form.sendsRange)
    }

    /// Gives connection `id` its next range, or lets it rest when there is nothing left to share.
    mutating func assignWork(_ id: Int) -> [Action] {
        guard isActive, mirrorChecksPending == 0, planner != nil else { return [] }
        placeOnMirror(id)
        // The planner is changed where it is stored: a copy taken out (`guard var`) shares its segments and
        // ranges with the stored one, so changing it copied them anew, and storing it back retained them.
        guard let segmentsBefore = planner?.segments.count else { return [] }
        guard let work = planner!.nextRequest(for: id, continuing: connections[id].segment) else { return finishIfDone() }
        var actions: [Action] = []
        if let segmentsNow = planner?.segments.count, segmentsNow > segmentsBefore {
            let taken = work.range.lowerBound..<(planner?.end(of: work.segment) ?? work.range.upperBound)
            actions.append(.log(.trace, "connection takes half of another's remaining range", {
                [LogKey.connection: "\(id)", LogKey.range: "\(taken.logText)"]
            }))
        }
        connections[id].segment = work.segment
        actions.append(send(id, first: work.range.lowerBound, end: work.range.upperBound, role: .ranged))
        peakConnections = max(peakConnections, connections.lazy.filter(\.isBusy).count)
        return actions
    }

    /// Wakes resting connections when work appears (a failed or slow connection released some).
    mutating func wakeIdleConnections() -> [Action] {
        var actions: [Action] = []
        for connection in connections where connection.activity == .idle { actions += assignWork(connection.id) }
        return actions
    }

    /// Every byte written and no exchange running: the output's size is checked next.
    mutating func finishIfDone() -> [Action] {
        guard isActive, let planner, planner.isComplete, !connections.contains(where: \.isBusy) else { return [] }
        // Every piece is verified first (``piecesSettled``): a complete file of unverified pieces is not done.
        guard piecesSettled else { return hashUnsettledPieces() }
        phase = .finishing
        return [.checkOutput]
    }

    /// The output holds `size` bytes (the file's size; a stream's delivered bytes): exactly the resource's
    /// length, every byte of it written, or the download fails rather than end with a wrong file.
    mutating func outputChecked(size: Int64) -> [Action] {
        guard phase == .finishing, let total, let planner else { return [] }
        let written = planner.written.count
        guard size == total, written == total, planner.written.gaps(in: 0..<total).isEmpty else {
            phase = .running
            return fail(.unexpected(sink == .stream ? "delivered \(size) of \(total) bytes to the stream, \(written) written"
                : "\(fileLabel) has \(size) bytes and \(written) written, expected \(total)"))
        }
        phase = .stopped(.finished)
        // A checkpoint may still be writing the journal; the end waits for it, so that removing the journal
        // after the final rename cannot race with its creation.
        return [.stopConnections, .stopTimers, .releaseConnections(keeping: 0),
                .end(.finished, after: journaling ? .checkpoint(planner.written, pausing: false) : .nothing)]
    }
}
