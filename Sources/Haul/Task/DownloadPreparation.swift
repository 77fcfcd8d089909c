import Glibc
import HaulHTTP
import HaulIO
import HaulJournal
import Synchronization
import SystemPackage

/// Getting a download ready to run, before any byte is fetched: the URLs and headers checked, the `.part`
/// file opened and locked, the destination's directory checked (or created), an existing file refused
/// unless it may be replaced, and the journal of an interrupted download of it found and checked.
///
/// Runs on the client's loop: these are metadata calls (`stat`, `mkdir`, `open`, `flock`) and reading a
/// journal of a few KiB, each quicker than handing the work to another thread and back.
enum DownloadPreparation {
    /// The request, checked, and the journal of an interrupted download of it, if any.
    struct Prepared: @unchecked Sendable {
        // @unchecked Sendable: `ResumeJournal` is safe to hand from the preparing thread to the loop.
        var mirrors: MirrorSet
        /// The final path, or nil when a directory download still has to learn its name.
        var destination: String?
        var directory: String?
        var resume: (journal: ResumeJournal, state: JournalState)?
        var notices: [String] = []
        /// The `.part` file, opened and locked for this download (nil until a directory download is named).
        var file: OutputFile?
        /// The descriptor of a download delivered in order to a stream (not owned: the request's caller's).
        var stream: FileDescriptor?
        /// The most bytes a download into memory may keep (its `file` is then an anonymous in-memory file).
        var memoryLimit: Int?
        /// What preparing created (the `.part`, directories): a stop before the first body byte removes it.
        var created = EarlyStopCleanup.Created()
        /// The validators of the file at the destination, for a request that wants only a changed file.
        var conditional: ConditionalProbe?
        /// The destination was checked absent (and may not be replaced): its final name is given without
        /// replacing whatever appeared there since (``FinalNaming``).
        var finalNameIsNew = false
    }

    static func prepare(_ request: DownloadRequest, options: DownloadOptions) throws(HaulError) -> Prepared {
        var urls: [HTTPURL] = []
        // The URL as its caller parsed it already (the CLI's list): not parsed a second time.
        if let parsed = request.parsedURL { urls.append(parsed) }
        for text in (urls.isEmpty ? [request.url] : []) + request.mirrors {
            do { urls.append(try HTTPURL(text)) } catch { throw .invalidURL(error) }
        }
        let mirrors = MirrorSet(urls: urls, headers: HTTPFields(options.headers + request.headersWithCredentials), userAgent: options.userAgent)
        do { try mirrors.request(to: urls[0], range: .from(0), ifRange: nil).validate() } catch { throw .invalidRequest(error) }
        switch request.destination {
        case .file(let path):
            let parent = OutputFile.directory(containing: path)
            let asksFirst = request.onlyIfChanged || request.modifiedSince != nil
            let listed = ListedAbsence.skipsLookups(request, destination: path)
            if options.writesUnnamedFiles,
               let unnamed = unnamedWorkingFile(for: path, request: request, asksFirst: asksFirst, listedAbsent: listed) {
                // A fresh download (no `.part`): no journal of it to find, nothing that may be replaced.
                if !listed, OutputFile.hasEntry(path) { throw .destinationExists(path: path) }
                return Prepared(mirrors: mirrors, destination: path, directory: nil, resume: nil, file: unnamed,
                                created: EarlyStopCleanup.Created(directories: directoriesCreated(holding: parent), unnamed: true),
                                finalNameIsNew: true)
            }
            // The parent is looked at only when the `.part` cannot be created in it: the common case (it is
            // there) costs no `stat` per file, and a missing or wrong parent gets the same error as before.
            let opened: (OutputFile, created: Bool)
            do throws(HaulError) {
                opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
            } catch let error where error.isMissingDirectory {
                try prepareDirectory(parent, create: request.createsDirectories, rechecking: true)
                opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
            }
            let (file, created) = opened
            let directories = directoriesCreated(holding: parent)
            do throws(HaulError) {
                let resume = try interruptedDownload(at: WorkingFileNames.partial(of: path), file: file, url: urls[0], restart: request.discardsPartialDownload)
                if let resume { try checkSize(of: resume.state, partPath: WorkingFileNames.partial(of: path), request: request) }
                if resume == nil, !created { removeUnfinishedJournal(of: path) }
                // Only a changed file is fetched: the one there is what the probe asks about, replaced if it changed.
                var conditional = resume == nil && request.onlyIfChanged && !DestinationClaims.isCreatedPlaceholder(path)
                    ? FileDescriptor.modificationTimeAndLength(ofPath: path).flatMap { file in
                        ConditionalProbe.forFile(at: path, stored: StoredValidators.read(path: path),
                                                 modificationTime: file.time, length: file.length)
                    }
                    : nil
                if resume == nil, let date = request.modifiedSince {
                    conditional = ConditionalProbe(entityTag: conditional?.entityTag, modifiedSince: date.imfFixdate,
                                                   localLength: conditional?.localLength)
                }
                // (A destination `x.part` may be the placeholder its own claim created: see ``DestinationClaims``.)
                let mustBeNew = resume == nil && !request.replacesExisting && !asksFirst && !DestinationClaims.isCreatedPlaceholder(path)
                if mustBeNew, OutputFile.hasEntry(path) {
                    throw .destinationExists(path: path)
                }
                return Prepared(mirrors: mirrors, destination: path, directory: nil,
                                resume: resume.map { ($0.journal, $0.state) }, notices: resume?.note.map { [$0] } ?? [], file: file,
                                created: EarlyStopCleanup.Created(part: created, directories: directories), conditional: conditional,
                                finalNameIsNew: mustBeNew)
            } catch {
                // Nothing of this download may stay behind: not even the empty `.part` it just made.
                if created { try? OutputFile.remove(WorkingFileNames.partial(of: path)) }
                OutputFile.removeEmptyDirectories(directories)
                throw error
            }
        case .stream(let descriptor):
            guard request.checksum == nil else {
                throw .invalidDestination("a checksum needs the whole file, which a stream does not keep")
            }
            guard request.pieceHashes == nil else {
                throw .invalidDestination("piece hashes need each piece read back from the file, which a stream does not keep")
            }
            return Prepared(mirrors: mirrors, destination: nil, directory: nil, resume: nil, stream: descriptor,
                            conditional: dateCondition(request))
        case .directory(let directory):
            try prepareDirectory(directory, create: request.createsDirectories)
            return Prepared(mirrors: mirrors, destination: nil, directory: directory, resume: nil,
                            created: EarlyStopCleanup.Created(directories: directoriesCreated(holding: directory)),
                            conditional: dateCondition(request))
        case .memory(let limit):
            guard limit >= 0 else { throw .invalidDestination("a memory limit is a number of bytes, not \(limit)") }
            // An anonymous file in memory rather than a buffer of our own: the connections write into it with
            // the same `pwrite` at any offset as into a `.part`, and its pages are taken only as bytes arrive.
            let file: OutputFile
            do { file = try OutputFile.inMemory(label: "haul-memory") } catch { throw .disk(path: "\(urls[0]) (in memory)", error) }
            return Prepared(mirrors: mirrors, destination: nil, directory: nil, resume: nil, file: file, memoryLimit: limit,
                            conditional: dateCondition(request))
        }
    }

    /// The request to prepare: one that wants only a changed file (``DownloadRequest/onlyIfChanged``) into a
    /// directory is named from its URL (``SuggestedFileName/forURL(_:)``) before anything is sent, so that the
    /// file of that name can be asked about. A `Content-Disposition` name is not used then: it comes only
    /// with the answer, too late to ask about the file it names, and asking about one file to save another
    /// would be wrong. A URL that does not parse is left for ``prepare(_:options:)`` to refuse.
    static func namedBeforeAsking(_ request: DownloadRequest) -> DownloadRequest {
        guard request.onlyIfChanged, case .directory(let directory) = request.destination,
              let url = try? HTTPURL(request.url) else { return request }
        let name = SuggestedFileName.forURL(url)
        var named = request
        named.destination = .file(directory.isEmpty ? name : directory.hasSuffix("/") ? directory + name : directory + "/" + name)
        return named
    }

    /// `If-Modified-Since` with ``DownloadRequest/modifiedSince`` for a destination that has no file to ask
    /// about (a directory not yet named, a stream, memory).
    private static func dateCondition(_ request: DownloadRequest) -> ConditionalProbe? {
        request.modifiedSince.map { ConditionalProbe(entityTag: nil, modifiedSince: $0.imfFixdate) }
    }

    /// A journal of a file of another length than the request expects (``DownloadRequest/expectedSize``) is
    /// not continued: its bytes are of another file than the one asked for.
    static func checkSize(of state: JournalState, partPath: String, request: DownloadRequest) throws(HaulError) {
        guard let expected = request.expectedSize, state.totalLength != expected else { return }
        throw .partialDownloadMismatch(path: partPath, detail: "the interrupted download is of a \(state.totalLength)-byte file, but \(expected) bytes are expected")
    }

    /// A file without a name for a fresh download of `path` when ``WorkingFileChoice`` says so: one `lstat` of
    /// `path.part` (instead of creating it, and looking for its journal), none when the caller listed it absent
    /// (`listedAbsent`: ``ListedAbsence``); nil for the named `.part` as before — also when the directory is
    /// missing (the named path creates it, or reports it) or refuses such files.
    static func unnamedWorkingFile(for path: String, request: DownloadRequest, asksFirst: Bool, listedAbsent: Bool = false) -> OutputFile? {
        let partPath = WorkingFileNames.partial(of: path)
        var facts = WorkingFileChoice.Facts(
            destinationIsWorkingName: WorkingFileNames.owner(ofWorkingName: path) != nil,
            replacesExisting: request.replacesExisting, asksFirst: asksFirst,
            mayOpenUnnamed: OutputFile.mayOpenUnnamed(in: OutputFile.directory(containing: path)))
        guard WorkingFileChoice.decide(facts) == .lookForPartial else { return nil }
        facts.partialExists = listedAbsent ? false : OutputFile.hasEntry(partPath)
        guard WorkingFileChoice.decide(facts) == .unnamed else { return nil }
        return try? OutputFile.openUnnamed(becoming: partPath)
    }

    /// Opens (creating if needed) and locks the `.part` file, so that no other download — in this process
    /// or another — writes the same destination. A symbolic link there is refused, never followed.
    static func lockedPartialFile(_ partPath: String) throws(HaulError) -> (OutputFile, created: Bool) {
        do {
            let opened = try OutputFile.openForDownload(partPath)
            return (opened.file, opened.created)
        } catch where error.call == "flock" && error.errno == EWOULDBLOCK {
            let destination = WorkingFileNames.destination(ofPartial: partPath) ?? partPath
            throw .destinationBusy(path: destination, holder: OutputFile.lockHolder(of: partPath))
        } catch {
            throw .disk(path: partPath, error)
        }
    }

    private static func prepareDirectory(_ directory: String, create: Bool, rechecking: Bool = false) throws(HaulError) {
        guard !directory.isEmpty else { return }
        // A list of thousands of downloads into one directory would check it once per download. A recent
        // answer is taken instead: should the directory go meanwhile, creating the `.part` in it fails and
        // ``resolveName(in:head:url:request:claimant:)`` comes back here to check (and create) it again.
        let now = MonotonicInstant.now()
        if !rechecking, recentDirectory.withLock({ $0.map { $0.path == directory && now < $0.checked.advanced(by: .seconds(1)) } ?? false }) {
            return
        }
        guard !OutputFile.isDirectory(directory) else {
            recentDirectory.withLock { $0 = (directory, now) }
            return
        }
        guard create else {
            throw .disk(path: directory, SystemError(call: "stat", errno: OutputFile.exists(directory) ? ENOTDIR : ENOENT))
        }
        // Created and recorded under one lock: a download on another loop that finds the directory made (its
        // `stat` above) asks ``directoriesCreated(holding:)`` only later, under this lock, and so always learns
        // that this process made it. Recorded after the lock, it could miss it, fail early, remove nothing,
        // and leave the directory behind when the one that made it failed first (a race two loops make possible).
        try createdDirectories.withLock { created throws(HaulError) in
            let made: [String]
            do throws(SystemError) { made = try OutputFile.createDirectories(directory) } catch { throw .disk(path: directory, error) }
            // A bound for a long-lived process (the session daemon): forgetting one only leaves it behind.
            if created.count + made.count > 256 { created.removeFirst(min(created.count, created.count + made.count - 256)) }
            created.append(contentsOf: made)
        }
    }

    /// Directories this process created for downloads, in order. Several downloads of one `-i` list share
    /// the directory the first of them created; whichever of them fails early last removes it (only an empty
    /// one is ever removed), so each download lists it (``directoriesCreated(holding:)``).
    private static let createdDirectories = Mutex<[String]>([])

    /// The directories this process created that hold `directory` (or are it), outermost first: no file-system
    /// call, so a download into a directory that was there costs nothing.
    static func directoriesCreated(holding directory: String) -> [String] {
        createdDirectories.withLock { created in
            created.filter { directory == $0 || directory.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }
        }.sorted { $0.count < $1.count }
    }

    /// The directory ``prepareDirectory(_:create:)`` last found, and when.
    private static let recentDirectory = Mutex<(path: String, checked: MonotonicInstant)?>(nil)

    /// `claimant` is the download's number in ``DestinationClaims``: the name is claimed before its `.part`
    /// is opened.
    /// `primary` is the request's URL, parsed when it was prepared (``Prepared/mirrors``).
    /// `writesUnnamedFiles`: ``DownloadOptions/writesUnnamedFiles``.
    static func nameResolver(directory: String, request: DownloadRequest, primary: HTTPURL, claimant: Int,
                             writesUnnamedFiles: Bool = true) -> (ResponseHead, HTTPURL) throws -> SegmentedDownload.NameResolution {
        { head, url in
            try resolveName(in: directory, head: head, url: url, request: request, primary: primary, claimant: claimant,
                            writesUnnamedFiles: writesUnnamedFiles)
        }
    }

    /// Names a directory download once the probe's head is in: the suggested name, checked against an
    /// existing file and an interrupted download of the same name. Runs on the loop; its file-system calls
    /// are a `stat` and, rarely, reading a journal of a few KiB.
    static func resolveName(in directory: String, head: ResponseHead, url: HTTPURL, request: DownloadRequest,
                            primary: HTTPURL, claimant: Int, writesUnnamedFiles: Bool = true) throws(HaulError) -> SegmentedDownload.NameResolution {
        let name = SuggestedFileName.forResponse(head, url: url)
        let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
        try DestinationClaims.claim(path, owner: claimant)
        let listed = ListedAbsence.skipsLookups(request, destination: path)
        if writesUnnamedFiles,
           let unnamed = unnamedWorkingFile(for: path, request: request, asksFirst: request.modifiedSince != nil, listedAbsent: listed) {
            // A fresh download (no `.part`): no journal of it to find, nothing that may be replaced.
            if !listed, OutputFile.hasEntry(path) { throw .destinationExists(path: path) }
            return .fresh(destination: path, file: unnamed,
                          created: EarlyStopCleanup.Created(directories: directoriesCreated(holding: directory), unnamed: true),
                          finalNameIsNew: true)
        }
        let opened: (OutputFile, created: Bool)
        do throws(HaulError) {
            opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
        } catch let error where error.isMissingDirectory {
            // The directory checked at prepare (or recently, for another download) is gone or was replaced.
            try prepareDirectory(directory, create: request.createsDirectories, rechecking: true)
            opened = try lockedPartialFile(WorkingFileNames.partial(of: path))
        }
        let (file, created) = opened
        let directories = directoriesCreated(holding: directory)
        do throws(HaulError) {
            if let resume = try interruptedDownload(at: WorkingFileNames.partial(of: path), file: file, url: primary, restart: request.discardsPartialDownload) {
                try checkSize(of: resume.state, partPath: WorkingFileNames.partial(of: path), request: request)
                return .resume(destination: path, journal: resume.journal, state: resume.state, file: file)
            }
            if !created { removeUnfinishedJournal(of: path) }
            let mustBeNew = !request.replacesExisting && request.modifiedSince == nil
            if mustBeNew, OutputFile.hasEntry(path) { throw .destinationExists(path: path) }
            return .fresh(destination: path, file: file, created: EarlyStopCleanup.Created(part: created, directories: directories),
                          finalNameIsNew: mustBeNew)
        } catch {
            if created { try? OutputFile.remove(WorkingFileNames.partial(of: path)) }
            OutputFile.removeEmptyDirectories(directories)
            throw error
        }
    }
    /// Removes the temp file of a journal whose first write was cut short (a second Ctrl-C during it) beside
    /// a `.part` an earlier run left without a journal: this run starts over, and nothing else would ever
    /// remove it. Only then, so that a fresh download costs no extra call.
    private static func removeUnfinishedJournal(of path: String) {
        try? OutputFile.remove(ResumeJournal.temporaryPath(WorkingFileNames.journal(of: path)))
    }

    /// The journal of an interrupted download at `partPath`, if there is one to resume.
    ///
    /// A journal without its `.part` file (or with one of the wrong size) cannot be trusted and is
    /// discarded; a journal for another URL, or one that cannot be read, is an error unless `restart`.
    /// `file` is the `.part` file, opened and locked by the caller: nothing is read or removed without the lock.
    static func interruptedDownload(at partPath: String, file: OutputFile, url: HTTPURL, restart: Bool) throws(HaulError) -> (journal: ResumeJournal, state: JournalState, note: String?)? {
        let journalPath = partPath + ".haul"
        guard OutputFile.exists(journalPath) else { return nil }
        if restart {
            // The `.part` file stays (this download holds it open and locked); its content is truncated
            // when the new download learns the length.
            try? ResumeJournal.remove(path: journalPath)
            return nil
        }
        let opened: (ResumeJournal, JournalState)
        do {
            opened = try ResumeJournal.open(path: journalPath)
        } catch {
            throw .journal(error)
        }
        let state = opened.1
        var note: String?
        switch DownloadIdentity.decide(journalURL: state.url, journalResolvedURL: state.resolvedURL, journalETag: state.etag,
                                       journalLastModified: state.lastModified, requested: url) {
        case .same: break
        case .sameValidator(let text): note = text
        case .different(let detail): throw .partialDownloadMismatch(path: partPath, detail: detail)
        }
        let partSize: Int64
        do {
            partSize = try file.size()
        } catch {
            throw .disk(path: partPath, error)
        }
        guard partSize == state.totalLength else {
            // The data the journal describes is gone (or was replaced): start over rather than trust it.
            try? ResumeJournal.remove(path: journalPath)
            return nil
        }
        return (opened.0, opened.1, note)
    }
}
